/**
 * IP addresses as Envoy's remote_address / masked_remote_address actions print them: IPv4 dotted quad,
 * IPv6 in the compressed lowercase form of RFC 5952 (what inet_ntop gives), a mask as `address/len` with
 * the host bits cleared (`10.1.2.0/24`, `2001:db8::/32`).
 */
import { isIP } from 'node:net';

export interface IpAddress {
  readonly version: 4 | 6;
  /** 4 or 16 bytes, network order. */
  readonly bytes: Uint8Array;
}

/**
 * Parses an IP literal (an IPv6 zone `%eth0` is dropped); undefined when it is not one. An IPv4-mapped IPv6
 * address (`::ffff:203.0.113.5`, `::ffff:cb00:7105`) is the IPv4 address it maps: Envoy does the same for a
 * client of a dual-stack listener (Address::addressFromSockAddr makes an Ipv4Instance of a v4-mapped peer),
 * so ShouldRateLimit's remote_address and ext_authz's see one client as one `203.0.113.5`, rules on the IPv4
 * address match it, and masked_remote_address applies the IPv4 prefix length.
 */
export function parseIp(text: string): IpAddress | undefined {
  const version = isIP(text);
  if (version === 4) return { version, bytes: Uint8Array.from(text.split('.').map(Number)) };
  if (version !== 6) return undefined;
  const noZone = text.split('%')[0]!.toLowerCase();
  const bytes = new Uint8Array(16);
  const [head, tail] = noZone.includes('::') ? (noZone.split('::') as [string, string]) : [noZone, undefined];
  const groups = (part: string): number[] => {
    if (part === '') return [];
    const out: number[] = [];
    for (const g of part.split(':')) {
      if (g.includes('.')) {
        const q = g.split('.').map(Number);
        out.push((q[0]! << 8) | q[1]!, (q[2]! << 8) | q[3]!);
      } else out.push(Number.parseInt(g, 16));
    }
    return out;
  };
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const all = [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
  all.forEach((g, i) => {
    bytes[2 * i] = g >> 8;
    bytes[2 * i + 1] = g & 0xff;
  });
  return isV4Mapped(bytes) ? { version: 4, bytes: bytes.slice(12) } : { version, bytes };
}

/** ::ffff:0:0/96 (RFC 4291 §2.5.5.2). */
function isV4Mapped(bytes: Uint8Array): boolean {
  for (let i = 0; i < 10; i++) if (bytes[i] !== 0) return false;
  return bytes[10] === 0xff && bytes[11] === 0xff;
}

export function formatIp(ip: IpAddress): string {
  if (ip.version === 4) return [...ip.bytes].join('.');
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((ip.bytes[i]! << 8) | ip.bytes[i + 1]!);
  // RFC 5952: the longest run (leftmost on ties) of two or more zero groups becomes '::'.
  let bestStart = -1;
  let bestLen = 1;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = (gs: number[]) => gs.map((g) => g.toString(16)).join(':');
  if (bestStart < 0) return hex(groups);
  return `${hex(groups.slice(0, bestStart))}::${hex(groups.slice(bestStart + bestLen))}`;
}

/** `address/len` with the bits past `len` cleared. */
export function maskIp(ip: IpAddress, prefixLen: number): string {
  const bytes = Uint8Array.from(ip.bytes);
  for (let bit = prefixLen; bit < bytes.length * 8; bit++) bytes[bit >> 3]! &= ~(0x80 >> (bit & 7));
  return `${formatIp({ version: ip.version, bytes })}/${prefixLen}`;
}
