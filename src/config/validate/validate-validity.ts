/**
 * `valid_from` / `valid_until` of a descriptor or of a whole file: RFC 3339 instants (`2025-12-24T18:00:00Z`,
 * `2025-12-24T19:00:00+01:00`), either optional. Outside [valid_from, valid_until) the descriptor (with its
 * children), or every descriptor of the file, does not exist for decisions: the lookup reads the decision's clock
 * (compile/lookup.ts), so a rule starts and ends without a reload.
 */
import type { Validity } from '../types.js';
import { join, valueNode, type Fields } from './fields.js';
import { readString, type FileContext } from './yaml-nodes.js';

export const VALIDITY_KEYS = ['valid_from', 'valid_until'] as const;

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** Epoch ms of an RFC 3339 date-time, or undefined when the text is not one (or names a day or time that does not exist). */
export function parseRfc3339(text: string): number | undefined {
  const m = RFC3339.exec(text);
  if (m === null) return undefined;
  const [, y, mo, d, h, mi, s] = m.map(Number) as [number, number, number, number, number, number, number];
  const day = new Date(Date.UTC(y, mo - 1, d));
  if (day.getUTCMonth() !== mo - 1 || day.getUTCDate() !== d || h > 23 || mi > 59 || s > 59) return undefined;
  const ms = Date.parse(text.replace(' ', 'T'));
  return Number.isFinite(ms) ? ms : undefined;
}

export function readValidity(ctx: FileContext, fields: Fields, path: string): Validity | undefined {
  const out: { fromMs?: number; untilMs?: number } = {};
  for (const name of VALIDITY_KEYS) {
    const field = fields.get(name);
    if (field === undefined) continue;
    const at = join(path, name);
    const text = readString(ctx, field.value, at);
    if (text === undefined) continue;
    const ms = parseRfc3339(text.trim());
    if (ms === undefined)
      ctx.error(valueNode(ctx, field), at, `'${text}' is not an RFC 3339 date-time such as 2025-12-24T18:00:00Z or 2025-12-24T19:00:00+01:00`);
    else if (name === 'valid_from') out.fromMs = ms;
    else out.untilMs = ms;
  }
  if (out.fromMs !== undefined && out.untilMs !== undefined && out.untilMs <= out.fromMs) {
    ctx.error(valueNode(ctx, fields.get('valid_until')!), join(path, 'valid_until'), 'valid_until must be later than valid_from');
    return undefined;
  }
  return out.fromMs === undefined && out.untilMs === undefined ? undefined : Object.freeze(out);
}

/** The intersection of two intervals (a file's and one of its descriptors'). */
export function narrow(outer: Validity | undefined, inner: Validity | undefined): Validity | undefined {
  if (outer === undefined) return inner;
  if (inner === undefined) return outer;
  const fromMs = Math.max(outer.fromMs ?? -Infinity, inner.fromMs ?? -Infinity);
  const untilMs = Math.min(outer.untilMs ?? Infinity, inner.untilMs ?? Infinity);
  return Object.freeze({ ...(Number.isFinite(fromMs) ? { fromMs } : {}), ...(Number.isFinite(untilMs) ? { untilMs } : {}) });
}

/** Whether an interval holds `nowMs`. */
export function inForce(validity: Validity | undefined, nowMs: number): boolean {
  return (
    validity === undefined || ((validity.fromMs === undefined || nowMs >= validity.fromMs) && (validity.untilMs === undefined || nowMs < validity.untilMs))
  );
}
