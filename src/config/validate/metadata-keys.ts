/**
 * The key a nested mapping of a rule's `metadata` gets, as envoyproxy/ratelimit makes it: gopkg.in/yaml.v2
 * reads a nested key as a YAML 1.1 scalar (a bool, a number, null) and the reference turns it into a string
 * with Go's `%v`. So `{on: 1}` nested is the key "true", `0x10` is "16", `1e6` is "1e+06", `~` is "<nil>";
 * quoted keys stay as written. The metadata's own (top-level) keys are strings as written there, and here.
 */

const TRUES = new Set(['y', 'Y', 'yes', 'Yes', 'YES', 'true', 'True', 'TRUE', 'on', 'On', 'ON']);

/** `text` as written, `kind` as yaml-nodes.ts scalarKind resolved it. */
export function nestedMetadataKey(text: string, kind: 'null' | 'bool' | 'int' | 'float' | 'string'): string {
  switch (kind) {
    case 'null':
      return '<nil>';
    case 'bool':
      return TRUES.has(text) ? 'true' : 'false';
    case 'int':
      return goInt(text);
    case 'float':
      return goFloat(text);
    default:
      return text;
  }
}

/** A YAML 1.1 integer literal (signs, `_`, 0b, 0x, 0o and leading-0 octal) in decimal, exactly. */
function goInt(text: string): string {
  let t = text.replaceAll('_', '');
  const negative = t.startsWith('-');
  if (t.startsWith('-') || t.startsWith('+')) t = t.slice(1);
  let value: bigint;
  if (t.startsWith('0b')) value = BigInt(t);
  else if (t.startsWith('0x')) value = BigInt(t);
  else if (t.startsWith('0o')) value = BigInt(t);
  else if (t.length > 1 && t.startsWith('0')) value = BigInt(`0o${t.slice(1)}`);
  else value = BigInt(t);
  return String(negative ? -value : value);
}

/** Go's `%v` of a float64: the shortest digits, in exponent form (at least two exponent digits) below 1e-4 or from 1e6. */
export function goFloat(text: string): string {
  const t = text.replaceAll('_', '');
  if (/nan$/i.test(t)) return 'NaN';
  if (/inf$/i.test(t)) return t.startsWith('-') ? '-Inf' : '+Inf';
  const n = Number(t);
  if (n === 0) return Object.is(n, -0) ? '-0' : '0';
  const [mantissa, exp] = n.toExponential().split('e') as [string, string];
  const e = Number(exp);
  if (e < -4 || e >= 6) return `${mantissa}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
  return String(n);
}
