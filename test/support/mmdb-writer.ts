/**
 * A minimal MaxMind DB (.mmdb) writer, from the format's public specification (MaxMind DB File Format 2.0),
 * so the tests can make a small country database for GEOIP_DB. Layout written:
 *
 *   search tree   node_count nodes of two 24-bit records (left = bit 0, right = bit 1), big-endian;
 *                 a record < node_count points at a node, == node_count means "no data",
 *                 > node_count points into the data section at (record - node_count - 16)
 *   16 zero bytes (the data section separator)
 *   data section  the records' values, in the format's typed encoding
 *   metadata      "\xAB\xCD\xEFMaxMind.com" then a map (node_count, record_size, ip_version, ...)
 *
 * An IPv6 tree (ip_version 6); IPv4 networks are stored under ::/96, where readers look for them.
 */
import { isIP } from 'node:net';

type Value = string | number | bigint | Value[] | { [k: string]: Value };

/** Typed encoding: control byte (type in the top 3 bits, size in the low 5), extended type byte, size bytes, payload. */
function encodeValue(v: Value): Buffer {
  const head = (type: number, size: number): Buffer => {
    const bytes: number[] = [];
    let sizeBits: number;
    const extra: number[] = [];
    if (size < 29) sizeBits = size;
    else if (size < 285) {
      sizeBits = 29;
      extra.push(size - 29);
    } else if (size < 65_821) {
      sizeBits = 30;
      const s = size - 285;
      extra.push(s >> 8, s & 0xff);
    } else {
      sizeBits = 31;
      const s = size - 65_821;
      extra.push((s >> 16) & 0xff, (s >> 8) & 0xff, s & 0xff);
    }
    if (type <= 7) bytes.push((type << 5) | sizeBits);
    else bytes.push(sizeBits, type - 7);
    return Buffer.from([...bytes, ...extra]);
  };
  const uint = (type: number, n: bigint): Buffer => {
    const payload: number[] = [];
    for (let x = n; x > 0n; x >>= 8n) payload.unshift(Number(x & 0xffn));
    return Buffer.concat([head(type, payload.length), Buffer.from(payload)]);
  };
  if (typeof v === 'string') {
    const s = Buffer.from(v, 'utf8');
    return Buffer.concat([head(2, s.length), s]);
  }
  if (typeof v === 'bigint') return uint(9, v); // uint64
  if (typeof v === 'number') return v < 65_536 ? uint(5, BigInt(v)) : uint(6, BigInt(v)); // uint16 / uint32
  if (Array.isArray(v)) return Buffer.concat([head(11, v.length), ...v.map(encodeValue)]);
  const entries = Object.entries(v);
  return Buffer.concat([head(7, entries.length), ...entries.flatMap(([k, x]) => [encodeValue(k), encodeValue(x)])]);
}

interface TreeNode {
  children: [TreeNode | number | undefined, TreeNode | number | undefined];
}

/** The 128 bits of an address (IPv4 mapped under ::/96). */
function bitsOf(ip: string): number[] {
  const bytes: number[] = new Array<number>(16).fill(0);
  if (isIP(ip) === 4) ip.split('.').forEach((o, i) => (bytes[12 + i] = Number(o)));
  else {
    const [h, t] = ip.includes('::') ? ip.split('::') : [ip, undefined];
    const groups = (p: string | undefined) => (p ? p.split(':').map((g) => Number.parseInt(g, 16)) : []);
    const left = groups(h);
    const right = groups(t);
    const all = [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
    all.forEach((g, i) => {
      bytes[2 * i] = g >> 8;
      bytes[2 * i + 1] = g & 0xff;
    });
  }
  return bytes.flatMap((b) => [7, 6, 5, 4, 3, 2, 1, 0].map((s) => (b >> s) & 1));
}

/** Networks `address/len` → record; builds the file. A more specific network wins over a wider one containing it. */
export function writeMmdb(networks: readonly { network: string; record: Value }[], databaseType = 'Test-Country'): Buffer {
  const dataParts: Buffer[] = [];
  const offsets: number[] = [];
  let dataLen = 0;
  for (const n of networks) {
    offsets.push(dataLen);
    const enc = encodeValue(n.record);
    dataParts.push(enc);
    dataLen += enc.length;
  }
  const root: TreeNode = { children: [undefined, undefined] };
  // Wider networks first, so a narrower one splits the wider one's branch instead of being replaced by it.
  const prefixOf = (n: { network: string }) => Number(n.network.split('/')[1]) + (isIP(n.network.split('/')[0]!) === 4 ? 96 : 0);
  const byWidth = networks.map((n, index) => ({ n, index })).sort((a, b) => prefixOf(a.n) - prefixOf(b.n));
  byWidth.forEach(({ n, index }) => {
    const [addr, lenText] = n.network.split('/') as [string, string];
    const prefix = (isIP(addr) === 4 ? 96 : 0) + Number(lenText);
    const bits = bitsOf(addr);
    let node = root;
    for (let i = 0; i < prefix - 1; i++) {
      const b = bits[i]!;
      let next = node.children[b];
      if (typeof next !== 'object') {
        // Splitting a leaf (a wider network's data) keeps its data on both new branches.
        const inherited = next;
        next = { children: [inherited, inherited] };
        node.children[b] = next;
      }
      node = next;
    }
    node.children[bits[prefix - 1]!] = -1 - index; // a data marker, resolved below
  });
  const order: TreeNode[] = [];
  const queue: TreeNode[] = [root];
  const ids = new Map<TreeNode, number>();
  while (queue.length > 0) {
    const n = queue.shift()!;
    ids.set(n, order.length);
    order.push(n);
    for (const c of n.children) if (typeof c === 'object') queue.push(c);
  }
  const nodeCount = order.length;
  const record = (c: TreeNode | number | undefined): number => {
    if (c === undefined) return nodeCount;
    if (typeof c === 'object') return ids.get(c)!;
    return nodeCount + 16 + offsets[-1 - c]!;
  };
  const tree = Buffer.alloc(nodeCount * 6);
  order.forEach((n, i) => {
    tree.writeUIntBE(record(n.children[0]), i * 6, 3);
    tree.writeUIntBE(record(n.children[1]), i * 6 + 3, 3);
  });
  const metadata = encodeValue({
    binary_format_major_version: 2,
    binary_format_minor_version: 0,
    build_epoch: 1_700_000_000n,
    database_type: databaseType,
    description: { en: 'ratelimit-sidecar test database' },
    ip_version: 6,
    languages: ['en'],
    node_count: nodeCount,
    record_size: 24,
  });
  return Buffer.concat([tree, Buffer.alloc(16), ...dataParts, Buffer.from([0xab, 0xcd, 0xef]), Buffer.from('MaxMind.com'), metadata]);
}

/** A country record as GeoLite2-Country holds it (the fields the service reads, and a name). */
export function countryRecord(iso: string, name = iso): Value {
  return { country: { iso_code: iso, names: { en: name } }, registered_country: { iso_code: iso, names: { en: name } } };
}
