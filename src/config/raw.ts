/** The validated, not yet indexed, form of one rules file (output of validate.ts, input of compile.ts). */
import type { AlgorithmName } from '../algorithms/types.js';
import type { LeaseSpec } from '../algorithms/lease-support.js';
import type { Unit } from '../core/types.js';
import type { JsonValue } from './yaml-nodes.js';

export interface Position {
  readonly line: number;
  readonly column: number;
}

export interface RawLimit {
  readonly name?: string;
  readonly requestsPerUnit: number;
  readonly windowMs: number;
  readonly unit: Unit | undefined;
  /** `window` as written (undefined when the limit used `unit`). */
  readonly window?: string;
  readonly algorithm: AlgorithmName;
  readonly burst: number;
  /** envoyproxy/ratelimit's `soft_requests_per_unit` (0 = unset): accepted, validated and reported. */
  readonly softRequestsPerUnit: number;
  /** `lease:` (quota leases, validate-lease.ts); absent = none. */
  readonly lease?: LeaseSpec;
}

export interface RawRule {
  readonly unlimited: boolean;
  readonly limits: readonly RawLimit[];
  readonly replaces: readonly string[];
}

export interface RawDescriptor {
  readonly key: string;
  /** '' when the descriptor has no value (key-only). */
  readonly value: string;
  readonly position: Position;
  /** Field path, e.g. `descriptors[0].descriptors[2]`. */
  readonly path: string;
  /** Undefined when the descriptor has no rate limit (or its rate limit had errors). */
  readonly rule?: RawRule;
  readonly shadowMode: boolean;
  readonly quotaMode: boolean;
  readonly detailedMetric: boolean;
  readonly valueToMetric: boolean;
  readonly shareThreshold: boolean;
  /** `metadata:` as written (a mapping), undefined when absent. */
  readonly metadata?: { readonly [key: string]: JsonValue };
  readonly descriptors: readonly RawDescriptor[];
}

export interface RawFile {
  readonly name: string;
  /** Undefined when missing or invalid (already reported). */
  readonly domain?: string;
  readonly domainPosition: Position;
  readonly descriptors: readonly RawDescriptor[];
}
