/**
 * A rules file written as JSON (every rule set that arrives over xDS is; a file in CONFIG_DIR may be) read
 * straight into the YAML AST the validator walks, with the same nodes, ranges and line positions the YAML
 * parser would give for that text under the failsafe schema: mappings and lists as YAMLMap/YAMLSeq, strings as
 * double-quoted scalars, numbers, booleans and null as plain scalars holding their source text. JSON is the
 * flow subset of YAML, so the validator reads the same values either way; this reader is only an order of
 * magnitude faster (a general YAML parser spends most of a large load here).
 *
 * Anything that is not strict JSON with an object at the top gives `undefined`, and the caller parses the text
 * as YAML instead, so every syntax error is reported by one parser, the YAML one. No recursion: nesting costs
 * heap, not stack (the validator bounds nesting itself).
 */
import { Document, LineCounter, Pair, Scalar, YAMLMap, YAMLSeq } from 'yaml';

type Collection = YAMLMap<Scalar, unknown> | YAMLSeq<unknown>;

interface Frame {
  readonly node: Collection;
  /** The key read for the next pair (mappings only). */
  key: Scalar | undefined;
}

const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?/y;
const LITERAL = /true|false|null/y;

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

export function parseJsonDocument(text: string): { doc: Document; lineCounter: LineCounter } | undefined {
  const n = text.length;
  let pos = 0;
  const skip = () => {
    while (pos < n && isSpace(text.charCodeAt(pos))) pos++;
  };
  /** A string token at `pos` (a double quote), decoded; undefined when it is not valid JSON. */
  const string = (): Scalar | undefined => {
    const start = pos;
    let i = pos + 1;
    let escaped = false;
    for (; i < n; i++) {
      const c = text.charCodeAt(i);
      if (c === 0x22) break;
      if (c < 0x20) return undefined;
      if (c === 0x5c) {
        escaped = true;
        i++;
      }
    }
    if (i >= n) return undefined;
    pos = i + 1;
    let value: string;
    if (escaped) {
      try {
        value = JSON.parse(text.slice(start, pos)) as string;
      } catch {
        return undefined;
      }
    } else value = text.slice(start + 1, i);
    const s = new Scalar(value);
    s.type = 'QUOTE_DOUBLE';
    s.range = [start, pos, pos];
    return s;
  };
  const plain = (re: RegExp): Scalar | undefined => {
    re.lastIndex = pos;
    const m = re.exec(text);
    if (m === null) return undefined;
    const start = pos;
    pos += m[0].length;
    const s = new Scalar(m[0]);
    s.type = 'PLAIN';
    s.range = [start, pos, pos];
    return s;
  };

  skip();
  if (text.charCodeAt(pos) !== 0x7b) return undefined;
  const stack: Frame[] = [];
  let root: Collection | undefined;
  /** Expecting a value (after `:`, `[` or a `,` in a list), as opposed to a key or a closing bracket. */
  let wantValue = false;
  let first = true;
  for (;;) {
    skip();
    if (pos >= n) return undefined;
    const c = text.charCodeAt(pos);
    const top = stack[stack.length - 1];
    let value: unknown;
    if (top !== undefined && !wantValue) {
      const isMap = top.node instanceof YAMLMap;
      if (c === (isMap ? 0x7d : 0x5d)) {
        pos++;
        top.node.range = [top.node.range![0], pos, pos];
        stack.pop();
        first = false;
        const parent = stack[stack.length - 1];
        if (parent === undefined) {
          root = top.node;
          break;
        }
        if (!attach(parent, top.node)) return undefined;
        continue;
      }
      if (!first) {
        if (c !== 0x2c) return undefined;
        pos++;
        skip();
      }
      first = false;
      if (isMap) {
        if (text.charCodeAt(pos) !== 0x22) return undefined;
        const key = string();
        if (key === undefined) return undefined;
        skip();
        if (text.charCodeAt(pos) !== 0x3a) return undefined;
        pos++;
        top.key = key;
      }
      wantValue = true;
      continue;
    }
    if (c === 0x7b || c === 0x5b) {
      const node: Collection = c === 0x7b ? new YAMLMap<Scalar, unknown>() : new YAMLSeq<unknown>();
      node.flow = true;
      node.range = [pos, pos, pos];
      pos++;
      stack.push({ node, key: undefined });
      wantValue = false;
      first = true;
      continue;
    }
    if (top === undefined) return undefined;
    if (c === 0x22) value = string();
    else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) value = plain(NUMBER);
    else value = plain(LITERAL);
    if (value === undefined || !attach(top, value)) return undefined;
    wantValue = false;
  }
  skip();
  if (pos !== n) return undefined;
  const lineCounter = new LineCounter();
  lineCounter.addNewLine(0);
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) lineCounter.addNewLine(i + 1);
  const doc = new Document();
  doc.contents = root;
  return { doc, lineCounter };
}

/** Adds a finished value to its collection (as the value of the pending key in a mapping). */
function attach(frame: Frame, value: unknown): boolean {
  if (frame.node instanceof YAMLMap) {
    if (frame.key === undefined) return false;
    frame.node.items.push(new Pair(frame.key, value));
    frame.key = undefined;
  } else frame.node.items.push(value);
  return true;
}
