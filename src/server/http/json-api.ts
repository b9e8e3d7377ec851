/**
 * POST /json: a RateLimitRequest as proto3 JSON (camelCase or snake_case names, as envoyproxy/ratelimit's
 * /json accepts) → the RateLimitResponse as proto3 JSON. 200 OK, 429 over limit, 400 bad input.
 */
import { InvalidRequestError } from '../../vocab/errors.js';
import { checkDescriptorCount, checkEntryCount, DEFAULT_REQUEST_LIMITS, type RequestLimits } from '../../vocab/request-limits.js';
import type { RateLimitDecision, RateLimitRequest } from '../../vocab/types.js';
import { requestFromWire, type WireDescriptor, type WireRequest } from '../rls/proto-objects.js';

type Json = Record<string, unknown>;

function field(obj: Json, camel: string, snake: string): unknown {
  return obj[camel] ?? obj[snake];
}

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function str(v: unknown, path: string): string {
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw new InvalidRequestError(`${path}: expected a string`);
  return v;
}

function bool(v: unknown, path: string): boolean {
  if (v === undefined || v === null) return false;
  if (typeof v !== 'boolean') throw new InvalidRequestError(`${path}: expected true or false`);
  return v;
}

function num(v: unknown, path: string): number | string | undefined {
  if (v === undefined || v === null) return undefined;
  if ((typeof v === 'number' && Number.isInteger(v) && v >= 0) || (typeof v === 'string' && /^\d+$/.test(v))) return v;
  // Echo what was sent (JSON text, so a string stays quoted), not a conversion of it.
  throw new InvalidRequestError(`${path}: ${JSON.stringify(v)} is not a non-negative integer`);
}

/** An enum as proto3 JSON has it: its name, or its number (7 = WEEK, as on the wire). */
function unitOf(v: unknown, path: string): string | number {
  if (typeof v === 'number' && Number.isInteger(v) && v >= 0) return v;
  if (typeof v === 'number') throw new InvalidRequestError(`${path}: expected a unit name or number`);
  return str(v, path).toUpperCase();
}

/**
 * Parses the body text; every problem becomes an InvalidRequestError naming the field. The counts are
 * checked before any descriptor is converted (the engine checks the lengths).
 */
export function requestFromJson(text: string, limits: RequestLimits = DEFAULT_REQUEST_LIMITS): RateLimitRequest {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (err) {
    throw new InvalidRequestError(`body is not JSON: ${(err as Error).message}`);
  }
  if (!isObject(body)) throw new InvalidRequestError('body must be a JSON object');
  const descriptors = body.descriptors ?? [];
  if (!Array.isArray(descriptors)) throw new InvalidRequestError('descriptors: expected an array');
  checkDescriptorCount(descriptors.length, limits);
  descriptors.forEach((d: unknown, i) => {
    if (isObject(d) && Array.isArray(d.entries)) checkEntryCount(d.entries.length, i, limits);
  });
  const wire: WireRequest = {
    domain: str(body.domain, 'domain'),
    descriptors: descriptors.map((d: unknown, i): WireDescriptor => {
      if (!isObject(d)) throw new InvalidRequestError(`descriptors[${i}]: expected an object`);
      const entries = d.entries ?? [];
      if (!Array.isArray(entries)) throw new InvalidRequestError(`descriptors[${i}].entries: expected an array`);
      const limit = d.limit;
      if (limit !== undefined && limit !== null && !isObject(limit)) throw new InvalidRequestError(`descriptors[${i}].limit: expected an object`);
      const hits = num(field(d, 'hitsAddend', 'hits_addend'), `descriptors[${i}].hitsAddend`);
      return {
        entries: entries.map((e: unknown, j) => {
          if (!isObject(e)) throw new InvalidRequestError(`descriptors[${i}].entries[${j}]: expected an object`);
          return { key: str(e.key, `descriptors[${i}].entries[${j}].key`), value: str(e.value, `descriptors[${i}].entries[${j}].value`) };
        }),
        limit: isObject(limit)
          ? {
              requests_per_unit: Number(num(field(limit, 'requestsPerUnit', 'requests_per_unit'), `descriptors[${i}].limit.requestsPerUnit`) ?? 0),
              unit: unitOf(limit.unit, `descriptors[${i}].limit.unit`),
            }
          : null,
        hits_addend: hits === undefined ? null : { value: hits },
        is_negative_hits: bool(field(d, 'isNegativeHits', 'is_negative_hits'), `descriptors[${i}].isNegativeHits`),
      };
    }),
    hits_addend: Number(num(field(body, 'hitsAddend', 'hits_addend'), 'hitsAddend') ?? 0),
  };
  return requestFromWire(wire);
}

export function decisionToJson(d: RateLimitDecision): Json {
  return {
    overallCode: d.overallCode,
    statuses: d.statuses.map((s) => ({
      code: s.code,
      ...(s.currentLimit
        ? {
            currentLimit: {
              ...(s.currentLimit.name ? { name: s.currentLimit.name } : {}),
              requestsPerUnit: s.currentLimit.requestsPerUnit,
              unit: s.currentLimit.unit?.toUpperCase() ?? 'UNKNOWN',
            },
          }
        : {}),
      limitRemaining: s.limitRemaining,
      ...(s.durationUntilResetMs !== undefined ? { durationUntilReset: `${Math.ceil(s.durationUntilResetMs / 1000)}s` } : {}),
    })),
    responseHeadersToAdd: d.responseHeadersToAdd,
    requestHeadersToAdd: d.requestHeadersToAdd,
    // rawBody as proto3 JSON has it (base64); `body` and `httpStatus` (on_limit) for people reading the answer.
    ...(d.rawBody ? { rawBody: Buffer.from(d.rawBody).toString('base64'), body: Buffer.from(d.rawBody).toString('utf8') } : {}),
    ...(d.httpStatus !== undefined ? { httpStatus: d.httpStatus } : {}),
    ...(d.dynamicMetadata ? { dynamicMetadata: d.dynamicMetadata } : {}),
  };
}
