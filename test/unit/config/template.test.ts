import { describe, expect, it } from 'vitest';
import { decodeEscaped, wellFormed } from '../../../src/vocab/bytes.js';
import {
  escapingFor,
  jsonBodyProblem,
  parseTemplate,
  percentEncode,
  renderTemplate,
  type Escaping,
  type Template,
  type TemplateValues,
} from '../../../src/config/template.js';
import { prng } from '../../support/prng.js';

const VALUES: TemplateValues = {
  retry_after: 7,
  limit: 10,
  remaining: 0,
  window: 60,
  name: 'per-user',
  domain: 'api',
  descriptor: 'user=a"b\\c\n<é>&\'😀',
  reset_at: '2026-11-23T02:00:00Z',
};

function template(text: string): Template {
  const parsed = parseTemplate(text);
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.template;
}

describe('on_limit templates', () => {
  it('fills every placeholder, spaces inside the braces allowed, numbers as digits', () => {
    const t = template('{{retry_after}} {{ limit }} {{remaining}} {{window}} {{name}} {{domain}} {{reset_at}}');
    expect(renderTemplate(t, VALUES, 'plain')).toBe('7 10 0 60 per-user api 2026-11-23T02:00:00Z');
  });

  it('refuses unknown and unclosed placeholders', () => {
    const unknown = parseTemplate('{{retry}}');
    expect(unknown.ok === false && unknown.reason).toContain("unknown placeholder '{{retry}}'");
    expect(parseTemplate('a {{limit')).toEqual({ ok: false, reason: "unclosed placeholder: '{{' without '}}'" });
    expect(parseTemplate('x'.repeat(20_000))).toMatchObject({ ok: false });
  });

  it('escapes inserted values for where they land; the template text itself is kept', () => {
    const t = template('<{{descriptor}}>');
    expect(renderTemplate(t, VALUES, 'plain')).toBe(`<${VALUES.descriptor}>`);
    expect(renderTemplate(t, VALUES, 'json')).toBe('<user=a\\"b\\\\c\\n<é>&\'😀>');
    expect(renderTemplate(t, VALUES, 'markup')).toBe('<user=a&quot;b\\c\n&lt;é&gt;&amp;&#39;😀>');
    expect(renderTemplate(t, VALUES, 'header')).toBe('<user=a"b\\c?<?>&\'??>');
    expect(renderTemplate(t, VALUES, 'url')).toBe(`<${encodeURIComponent(VALUES.descriptor as string)}>`);
  });

  it('picks the escaping from the content type', () => {
    expect(escapingFor('application/json')).toBe('json');
    expect(escapingFor('application/problem+json; charset=utf-8')).toBe('json');
    expect(escapingFor('text/html; charset=utf-8')).toBe('markup');
    expect(escapingFor('application/xml')).toBe('markup');
    expect(escapingFor('text/plain; charset=utf-8')).toBe('plain');
  });

  it('accepts a JSON body only if it parses for every value, and a rendered one parses back to the values', () => {
    const good = template('{"e":"limit \\"{{name}}\\"","who":"{{descriptor}}","n":{{retry_after}},"s":"{{limit}}"}');
    expect(jsonBodyProblem(good)).toBeUndefined();
    expect(JSON.parse(renderTemplate(good, VALUES, 'json'))).toEqual({ e: 'limit "per-user"', who: VALUES.descriptor, n: 7, s: '10' });
    expect(jsonBodyProblem(template('{"who":{{descriptor}}}'))).toContain('{{descriptor}} must stand inside a JSON string');
    expect(jsonBodyProblem(template('{"n":{{limit}},}'))).toContain('not valid JSON');
  });

  it('renders any string in every escaping without throwing: raw bytes and lone surrogates included', () => {
    const t = template('a{{descriptor}}b');
    const r = prng('template-total');
    const escapings: Escaping[] = ['json', 'markup', 'plain', 'header', 'url'];
    for (let n = 0; n < 2000; n++) {
      let value = '';
      const len = r.int(0, 12);
      for (let i = 0; i < len; i++) value += String.fromCharCode(r.pick([r.int(0, 0x7f), r.int(0x80, 0xffff), r.int(0xd800, 0xdfff)]));
      for (const e of escapings) {
        const out = renderTemplate(t, { ...VALUES, descriptor: value }, e);
        expect(out).toMatch(/^a[^]*b$/);
        if (e === 'json') expect(JSON.parse(`"${out.slice(1, -1)}"`)).toBe(wellFormed(value));
        if (e === 'header') expect(out).toMatch(/^[\x20-\x7e]*$/);
        if (e === 'url') expect(out).toMatch(/^[A-Za-z0-9\-._~!'()*%]*$/);
      }
    }
  });

  it('percent-encodes the bytes a value stands for, as encodeURIComponent does for valid text', () => {
    expect(percentEncode('a b/é😀~')).toBe(encodeURIComponent('a b/é😀~'));
    expect(percentEncode(decodeEscaped(Uint8Array.from([0x61, 0xff, 0xc3])))).toBe('a%FF%C3');
    expect(percentEncode('\ud800')).toBe('%EF%BF%BD');
  });
});
