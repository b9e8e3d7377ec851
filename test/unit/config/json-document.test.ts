/**
 * The JSON reader gives the validator the AST the YAML parser gives for the same text (node kinds, scalar
 * styles and values, positions), and declines anything that is not strict JSON so that the YAML parser reports it.
 */
import { isMap, isPair, isScalar, isSeq, LineCounter, parseDocument } from 'yaml';
import type { Node } from 'yaml';
import { describe, expect, it } from 'vitest';
import { parseJsonDocument } from '../../../src/config/load/json-document.js';
import { validateFile } from '../../../src/config/validate/validate.js';

/** Kind, style, value and line:col of every node, in document order. */
function shape(node: unknown, lc: LineCounter): unknown {
  const at = (n: Node) => {
    const { line, col } = lc.linePos(n.range![0]);
    return `${line}:${col}`;
  };
  if (isMap(node)) return { map: at(node), items: node.items.map((p) => (isPair(p) ? [shape(p.key, lc), shape(p.value, lc)] : 'not a pair')) };
  if (isSeq(node)) return { seq: at(node), items: node.items.map((i) => shape(i, lc)) };
  if (isScalar(node)) return [node.type, node.value, at(node)];
  return node;
}

const SAMPLES = [
  '{"domain": "d", "descriptors": [{"key": "k", "value": "v", "rate_limit": {"unit": "second", "requests_per_unit": 10}}]}',
  JSON.stringify(
    {
      domain: 'é \u0001 "q" \\',
      descriptors: [
        { key: 'k', rate_limit: { unlimited: true, n: -1.5e3 } },
        { key: 'x', value: null, list: [] },
      ],
      empty: {},
    },
    null,
    2,
  ),
  '\n\t{ "a" : [ 1 , 2 , { "b" : false } ] ,\r\n "a": 0 }\n',
];

describe('parseJsonDocument', () => {
  it.each(SAMPLES)('reads %j as the YAML parser does', (text) => {
    const json = parseJsonDocument(text);
    expect(json).toBeDefined();
    const lc = new LineCounter();
    const yaml = parseDocument(text, { lineCounter: lc, schema: 'failsafe', uniqueKeys: false });
    expect(shape(json!.doc.contents, json!.lineCounter)).toEqual(shape(yaml.contents, lc));
  });

  it.each([
    '[1]',
    '{"a": 1,}',
    '{"a" 1}',
    '{a: 1}',
    '{"a": 01}',
    '{"a": "x\ty"}',
    '{"a": [1 2]}',
    '{"a": 1} {}',
    '{"a": tru}',
    '{"a": "\\x"}',
    '{',
    '{"a": {"b": 1}',
  ])('declines %j (not strict JSON with an object on top)', (text) => {
    expect(parseJsonDocument(text)).toBeUndefined();
  });

  it('gives the validator the positions a YAML parse gives: an error in a pretty-printed resource names its line', () => {
    const text = `${JSON.stringify(
      {
        domain: 'd',
        descriptors: [
          { key: 'a', rate_limit: { unit: 'second', requests_per_unit: 1 } },
          { key: 'b', rate_limit: { requests_per_unit: 1 } },
        ],
      },
      null,
      2,
    )}\n`;
    const { errors } = validateFile('f.json', text);
    expect(errors.map((e) => e.toString())).toEqual(
      validateFile('f.yaml', `# yaml\n${text}`).errors.map((e) =>
        e
          .toString()
          .replace('f.yaml', 'f.json')
          .replace(/:(\d+):/, (_m, l: string) => `:${Number(l) - 1}:`),
      ),
    );
    expect(errors.map((e) => `${e.line}:${e.column} ${e.path}`)).toEqual(['13:21 descriptors[1].rate_limit.unit']);
  });
});
