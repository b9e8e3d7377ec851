/**
 * The `{{placeholder}}` templates of `on_limit` (body, header values, redirect location): parsed and checked
 * once at load, rendered per rejection with each inserted value escaped for where it lands, so a hostile
 * descriptor value (quotes, newlines, non-ASCII) can never break the body's syntax or a header.
 *
 * Rendering is total: any string renders and nothing throws. That matters because Envoy fails open by
 * default: an error answered to a request whose values a client chose is a request never limited. Values
 * may hold raw bytes that were not UTF-8 (lone surrogates U+DC80..U+DCFF, vocab/bytes.ts) or, over /json,
 * any lone surrogate: a URL gets the bytes percent-encoded, a body gets U+FFFD for them.
 */
import { encodeEscaped, wellFormed } from '../vocab/bytes.js';

export const PLACEHOLDERS = ['retry_after', 'limit', 'remaining', 'window', 'name', 'domain', 'descriptor', 'reset_at'] as const;
export type Placeholder = (typeof PLACEHOLDERS)[number];

/** Literal text, or a placeholder to fill. */
export type TemplatePart = string | { readonly placeholder: Placeholder };

export interface Template {
  /** As written. */
  readonly text: string;
  readonly parts: readonly TemplatePart[];
}

/** How inserted values are escaped: by the body's content type, or for a header value or a URL. */
export type Escaping = 'json' | 'markup' | 'plain' | 'header' | 'url';

/** The values of one rejection; numbers are inserted as digits, strings escaped. */
export type TemplateValues = Readonly<Record<Placeholder, string | number>>;

/** Longest template accepted (a body is sent on every rejection). */
export const MAX_TEMPLATE_LENGTH = 16_384;

const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;

export type TemplateParse = { ok: true; template: Template } | { ok: false; reason: string };

export function parseTemplate(text: string): TemplateParse {
  if (text.length > MAX_TEMPLATE_LENGTH) return { ok: false, reason: `longer than ${MAX_TEMPLATE_LENGTH} characters` };
  const parts: TemplatePart[] = [];
  let last = 0;
  for (const m of text.matchAll(PLACEHOLDER)) {
    const name = m[1]!;
    if (!(PLACEHOLDERS as readonly string[]).includes(name)) {
      return { ok: false, reason: `unknown placeholder '{{${name}}}'; known: ${PLACEHOLDERS.map((p) => `{{${p}}}`).join(', ')}` };
    }
    if (m.index > last) parts.push(text.slice(last, m.index));
    parts.push({ placeholder: name as Placeholder });
    last = m.index + m[0].length;
  }
  const rest = text.slice(last);
  if (rest.includes('{{')) return { ok: false, reason: "unclosed placeholder: '{{' without '}}'" };
  if (rest !== '') parts.push(rest);
  return { ok: true, template: { text, parts } };
}

/** The escaping a body of this content type needs (parameters such as charset ignored). */
export function escapingFor(contentType: string): Escaping {
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  if (type === 'application/json' || type.endsWith('+json')) return 'json';
  if (type === 'text/html' || type === 'application/xml' || type === 'text/xml' || type.endsWith('+xml')) return 'markup';
  return 'plain';
}

const MARKUP: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

function escape(value: string, escaping: Escaping): string {
  switch (escaping) {
    case 'json':
      // A lone surrogate would come out as "\udc80": valid JSON text that strict decoders refuse.
      return JSON.stringify(wellFormed(value)).slice(1, -1);
    case 'markup':
      return wellFormed(value).replace(/[&<>"']/g, (c) => MARKUP[c]!);
    case 'header':
      // Envoy refuses header values with control characters; anything outside visible ASCII becomes '?'.
      return value.replace(/[^\x20-\x7e]/g, '?');
    case 'url':
      return percentEncode(value);
    case 'plain':
      return wellFormed(value);
  }
}

const UNRESERVED = /^[A-Za-z0-9\-._~!'()*]*$/;

/**
 * Percent-encoding of the bytes the string stands for (encodeURIComponent's output for valid text, the same
 * characters kept; it throws "URI malformed" on a lone surrogate, this never does): an escaped raw byte becomes its own %XX.
 */
export function percentEncode(value: string): string {
  if (UNRESERVED.test(value)) return value;
  let out = '';
  for (const b of encodeEscaped(value)) {
    const c = String.fromCharCode(b);
    out += b < 0x80 && UNRESERVED.test(c) ? c : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

export function renderTemplate(template: Template, values: TemplateValues, escaping: Escaping): string {
  let out = '';
  for (const part of template.parts) {
    if (typeof part === 'string') out += part;
    else {
      const v = values[part.placeholder];
      out += typeof v === 'number' ? String(v) : escape(v, escaping);
    }
  }
  return out;
}

const NUMERIC: ReadonlySet<Placeholder> = new Set(['retry_after', 'limit', 'remaining', 'window']);

/** Values that stress every escape (quotes, backslash, newline, non-ASCII), for checking a JSON body at load. */
export const HOSTILE_VALUES: TemplateValues = {
  retry_after: 1,
  limit: 10,
  remaining: 0,
  window: 60,
  name: 'n"\\\n\u00e9',
  domain: 'd"\\\n\u00e9',
  descriptor: 'k="\\\n\u00e9',
  reset_at: '2026-01-01T00:00:00Z',
};

/**
 * Why a JSON body template would not always give JSON, or undefined: a string placeholder outside a JSON
 * string (its value would not be quoted), or text that is not JSON once the placeholders are filled.
 */
export function jsonBodyProblem(template: Template): string | undefined {
  let inString = false;
  for (const part of template.parts) {
    if (typeof part !== 'string') {
      if (!inString && !NUMERIC.has(part.placeholder)) return `{{${part.placeholder}}} must stand inside a JSON string ("...") so that its value is escaped`;
      continue;
    }
    for (let i = 0; i < part.length; i++) {
      if (part[i] === '\\' && inString) i++;
      else if (part[i] === '"') inString = !inString;
    }
  }
  try {
    JSON.parse(renderTemplate(template, HOSTILE_VALUES, 'json'));
    return undefined;
  } catch (error) {
    return `not valid JSON once its placeholders are filled: ${(error as Error).message}`;
  }
}
