/**
 * Validation of a limit's `on_limit:` block (reference with examples in docs/on-limit.md).
 * Every error names file:line:col and the field path; templates are parsed here, so an unknown placeholder or
 * a JSON body that would not parse is a load error, never a surprise at the first rejection.
 */
import type { Node } from 'yaml';
import { isMap, isScalar } from 'yaml';
import type { AlgorithmName } from '../../vocab/algorithm-names.js';
import { parseDuration } from '../duration.js';
import { join, readFields, readMap, valueNode } from './fields.js';
import type { Field } from './fields.js';
import { ON_LIMIT_ACTIONS, REDIRECT_STATUSES, RETRY_POLICIES, type CompiledOnLimit, type OnLimitAction, type OnLimitHeader } from '../on-limit-types.js';
import { notOneOfMessage } from './schema.js';
import { escapingFor, jsonBodyProblem, parseTemplate, type Template } from '../template.js';
import { describeNode, readInt, readString } from './yaml-nodes.js';
import type { FileContext } from './yaml-nodes.js';

export const ON_LIMIT_KEYS = [
  'action',
  'max_delay',
  'request_headers',
  'degrade_max',
  'location',
  'status',
  'retry',
  'retry_base',
  'retry_cap',
  'body',
  'content_type',
  'headers',
] as const;

/** The longest delay: a decision never waits longer than the server's budget (server/rls/rls-service.ts MAX_BUDGET_MS). */
export const MAX_DELAY_MS = 10_000;
const DAY_MS = 86_400_000;
const DEFAULT_RETRY_BASE_MS = 1000;
const DEFAULT_RETRY_CAP_MS = 60_000;
export const DEFAULT_CONTENT_TYPE = 'text/plain; charset=utf-8';
const BUCKETS: readonly AlgorithmName[] = ['token_bucket', 'leaky_bucket'];
/** Fields that belong to one action only. */
const ACTION_FIELDS: readonly (readonly [string, OnLimitAction])[] = [
  ['max_delay', 'delay'],
  ['request_headers', 'degrade'],
  ['degrade_max', 'degrade'],
  ['location', 'redirect'],
];
/** Response headers on_limit.headers may not set: the service sets them (or a dedicated field does), or HTTP forbids. */
const RESERVED_HEADERS = new Set([
  'retry-after',
  'content-type',
  'location',
  'content-length',
  'transfer-encoding',
  'connection',
  'ratelimit',
  'ratelimit-policy',
]);
const TOKEN = /^[!#$%&'*+.^_`|~0-9a-z-]+$/;
const MEDIA_TYPE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+\/[!#$%&'*+.^_`|~0-9A-Za-z-]+(\s*;\s*[!#$%&'*+.^_`|~0-9A-Za-z-]+=("[^"\\]*"|[!#$%&'*+.^_`|~0-9A-Za-z-]+))*$/;

/** `on_limit:` of a limit using `algorithm`; undefined when absent or invalid (errors reported). */
export function readOnLimit(ctx: FileContext, field: Field | undefined, path: string, algorithm: AlgorithmName): CompiledOnLimit | undefined {
  if (field === undefined) return undefined;
  const map = readMap(ctx, field, path);
  if (!map) return undefined;
  const errorsBefore = ctx.errors.length;
  const fields = readFields(ctx, map, path, ON_LIMIT_KEYS);
  const action = readChoice(ctx, fields.get('action'), join(path, 'action'), ON_LIMIT_ACTIONS) ?? 'reject';
  if (action === 'delay' && !BUCKETS.includes(algorithm)) {
    ctx.error(valueNode(ctx, fields.get('action')!), join(path, 'action'), `delay applies only to token_bucket and leaky_bucket, not ${algorithm}`);
  }
  for (const [name, owner] of ACTION_FIELDS) {
    const f = fields.get(name);
    if (f !== undefined && action !== owner) ctx.error(f.key, join(path, name), `'${name}' applies only to action ${owner}, not ${action}`);
  }
  const maxDelayMs = readDuration(ctx, fields.get('max_delay'), join(path, 'max_delay'), 1, MAX_DELAY_MS);
  if (action === 'delay' && fields.get('max_delay') === undefined)
    ctx.error(map, join(path, 'max_delay'), 'action delay needs max_delay (e.g. 250ms): the longest a request may wait for its slot');
  const degradeMaxField = fields.get('degrade_max');
  const degradeMax = degradeMaxField === undefined ? undefined : readInt(ctx, degradeMaxField.value, join(path, 'degrade_max'), 0, 4_294_967_295, undefined);
  const requestHeaders = readHeaderMap(ctx, fields.get('request_headers'), join(path, 'request_headers'), new Set());
  const location = readTemplate(ctx, fields.get('location'), join(path, 'location'));
  // The location is a header value: its own text must already be one (values inserted are percent-encoded).
  if (location !== undefined && /[^\x21-\x7e]/.test(location.text))
    ctx.error(
      valueNode(ctx, fields.get('location')!),
      join(path, 'location'),
      'a location must be visible ASCII without spaces (percent-encode other characters)',
    );
  if (action === 'redirect' && fields.get('location') === undefined) ctx.error(map, join(path, 'location'), 'action redirect needs a location');
  const status = readStatus(ctx, fields.get('status'), join(path, 'status'), action);

  const retry = readChoice(ctx, fields.get('retry'), join(path, 'retry'), RETRY_POLICIES) ?? 'fixed';
  for (const name of ['retry_base', 'retry_cap'] as const) {
    const f = fields.get(name);
    if (f !== undefined && retry !== 'exponential_backoff')
      ctx.error(f.key, join(path, name), `'${name}' applies only to retry exponential_backoff, not ${retry}`);
  }
  const retryBaseMs = readDuration(ctx, fields.get('retry_base'), join(path, 'retry_base'), 1000, DAY_MS) ?? DEFAULT_RETRY_BASE_MS;
  const retryCapMs = readDuration(ctx, fields.get('retry_cap'), join(path, 'retry_cap'), 1000, DAY_MS) ?? Math.max(DEFAULT_RETRY_CAP_MS, retryBaseMs);
  if (retryCapMs < retryBaseMs) ctx.error(valueNode(ctx, fields.get('retry_cap')!), join(path, 'retry_cap'), `retry_cap must not be below retry_base`);

  const contentTypeField = fields.get('content_type');
  const contentType = contentTypeField === undefined ? DEFAULT_CONTENT_TYPE : readString(ctx, contentTypeField.value, join(path, 'content_type'))?.trim();
  if (contentTypeField !== undefined && contentType !== undefined && (!MEDIA_TYPE.test(contentType) || /[^\x20-\x7e]/.test(contentType))) {
    ctx.error(
      valueNode(ctx, contentTypeField),
      join(path, 'content_type'),
      `'${contentType}' is not a media type like application/json or text/plain; charset=utf-8`,
    );
  }
  if (contentTypeField !== undefined && fields.get('body') === undefined)
    ctx.error(contentTypeField.key, join(path, 'content_type'), 'content_type needs a body');
  const body = readTemplate(ctx, fields.get('body'), join(path, 'body'));
  if (body !== undefined && contentType !== undefined && escapingFor(contentType) === 'json') checkJsonBody(ctx, fields.get('body')!, join(path, 'body'), body);
  const headers = readHeaderMap(ctx, fields.get('headers'), join(path, 'headers'), RESERVED_HEADERS)?.map((h): OnLimitHeader => ({
    name: h.key,
    value: h.template,
  }));

  if (ctx.errors.length > errorsBefore || contentType === undefined) return undefined;
  return Object.freeze({
    action,
    ...(action === 'delay' && maxDelayMs !== undefined ? { maxDelayMs } : {}),
    ...(action === 'degrade' ? { requestHeaders: Object.freeze((requestHeaders ?? []).map((h): OnLimitHeader => ({ name: h.key, value: h.template }))) } : {}),
    ...(degradeMax !== undefined ? { degradeMax } : {}),
    ...(location !== undefined ? { location } : {}),
    retry,
    ...(retry === 'exponential_backoff' ? { retryBaseMs, retryCapMs } : {}),
    ...(body !== undefined ? { body } : {}),
    contentType,
    headers: Object.freeze(headers ?? []),
    ...(status !== undefined ? { status } : action === 'redirect' ? { status: 302 } : {}),
  });
}

function readChoice<T extends string>(ctx: FileContext, field: Field | undefined, path: string, allowed: readonly T[]): T | undefined {
  if (field === undefined) return undefined;
  const text = readString(ctx, field.value, path);
  if (text === undefined) return undefined;
  if ((allowed as readonly string[]).includes(text)) return text as T;
  ctx.error(valueNode(ctx, field), path, notOneOfMessage(text, allowed));
  return undefined;
}

function readDuration(ctx: FileContext, field: Field | undefined, path: string, minMs: number, maxMs: number): number | undefined {
  if (field === undefined) return undefined;
  const text = readString(ctx, field.value, path);
  if (text === undefined) return undefined;
  const parsed = parseDuration(text, minMs, maxMs);
  if (parsed.ok) return parsed.ms;
  ctx.error(valueNode(ctx, field), path, parsed.reason);
  return undefined;
}

function readTemplate(ctx: FileContext, field: Field | undefined, path: string): Template | undefined {
  if (field === undefined) return undefined;
  const text = readString(ctx, field.value, path);
  if (text === undefined) return undefined;
  const parsed = parseTemplate(text);
  if (parsed.ok) return parsed.template;
  ctx.error(valueNode(ctx, field), path, parsed.reason);
  return undefined;
}

function readStatus(ctx: FileContext, field: Field | undefined, path: string, action: OnLimitAction): number | undefined {
  if (field === undefined) return undefined;
  if (action === 'redirect') {
    const status = readInt(ctx, field.value, path, 300, 399, undefined);
    if (status !== undefined && !(REDIRECT_STATUSES as readonly number[]).includes(status)) {
      ctx.error(valueNode(ctx, field), path, `a redirect status must be one of ${REDIRECT_STATUSES.join(', ')}, not ${status}`);
      return undefined;
    }
    return status;
  }
  return readInt(ctx, field.value, path, 400, 599, undefined);
}

/** A JSON body must parse whatever the request carries (template.ts jsonBodyProblem). */
function checkJsonBody(ctx: FileContext, field: Field, path: string, body: Template): void {
  const problem = jsonBodyProblem(body);
  if (problem !== undefined) ctx.error(valueNode(ctx, field), path, `a JSON body: ${problem}`);
}

/** A mapping of header name → value (a template) with names checked; undefined when absent or invalid. */
function readHeaderMap(
  ctx: FileContext,
  field: Field | undefined,
  path: string,
  reserved: ReadonlySet<string>,
): { key: string; template: Template }[] | undefined {
  if (field === undefined) return undefined;
  const node = ctx.deref(field.value);
  if (node === undefined || !isMap(node)) {
    ctx.error(node ?? field.key, path, `must be a mapping of header name to value, not ${describeNode(node)}`);
    return undefined;
  }
  const out: { key: string; template: Template }[] = [];
  for (const pair of node.items) {
    const keyNode: Node | undefined = ctx.deref(pair.key);
    const name = keyNode !== undefined && isScalar(keyNode) ? String(keyNode.value).toLowerCase() : '';
    const at = join(path, name);
    if (!TOKEN.test(name)) ctx.error(keyNode ?? node, at, `'${name}' is not a valid header name`);
    else if (reserved.has(name)) ctx.error(keyNode ?? node, at, `'${name}' is set by the service; it cannot be set here`);
    else if (out.some((h) => h.key === name)) ctx.error(keyNode ?? node, at, `header '${name}' is listed twice`);
    const template = readTemplate(ctx, { key: keyNode ?? node, value: pair.value }, at);
    if (template !== undefined && /[^\x20-\x7e\t]/.test(template.text))
      ctx.error(valueNode(ctx, { key: keyNode ?? node, value: pair.value }), at, 'header values must be visible ASCII');
    else if (template !== undefined) out.push({ key: name, template });
  }
  return out;
}
