/**
 * The key, window and admission of a limit's check for one resolved descriptor (resolve.ts planChecks): the
 * window the limit counts in now (limit-windows.ts), and, for a limit with `max_values`, whether this counter
 * counts on its own, in the rule's overflow counter, or is rejected (value-guard.ts).
 */
import type { CompiledLimit, CompiledRule } from '../../config/types.js';
import { counterTag, overflowTag } from '../../vocab/keys.js';
import type { DescriptorEntry } from '../../vocab/types.js';
import { keyInWindow, limitWindow } from './limit-windows.js';
import type { ValueGuards } from './value-guard.js';

export interface KeyContext {
  readonly keyPrefix: string;
  readonly domain: string;
  readonly nowMs: number;
  readonly valueGuards?: ValueGuards;
  readonly onPastBound?: (domain: string, rule: string, action: 'overflow' | 'reject') => void;
}

export interface PlannedKey {
  readonly key: string;
  /** The store's window length: the limit's, or this calendar window's. */
  readonly windowMs: number;
  /** Set for a calendar limit: the store counts from here rather than from an epoch-aligned start. */
  readonly windowStartMs?: number;
  /** Past `max_values` with on_max_values reject: the check is made against a limit of 0. */
  readonly rejected?: true;
}

export function nativeCheckKey(
  ctx: KeyContext,
  r: { readonly rule: CompiledRule | undefined; readonly counterEntries: readonly DescriptorEntry[]; readonly refundUnits?: number },
  limit: CompiledLimit,
): PlannedKey {
  const window = limitWindow(limit, ctx.nowMs);
  let tag = counterTag(ctx.domain, r.counterEntries);
  let rejected = false;
  if (limit.maxValues !== undefined && r.rule !== undefined && ctx.valueGuards !== undefined) {
    // A refund gives units back to where the value counts; it does not make the value tracked.
    const refund = r.refundUnits !== undefined;
    const verdict = ctx.valueGuards.admit(ctx.domain, r.rule.statsKey, limit, tag, window.startMs, !refund);
    if (verdict !== 'own') {
      if (!refund) ctx.onPastBound?.(ctx.domain, r.rule.statsKey, verdict);
      tag = overflowTag(ctx.domain, r.rule.statsKey);
      rejected = verdict === 'reject';
    }
  }
  return {
    key: keyInWindow(ctx.keyPrefix, tag, limit, window),
    windowMs: window.lengthMs,
    ...(window.calendar ? { windowStartMs: window.startMs } : {}),
    ...(rejected ? { rejected: true as const } : {}),
  };
}
