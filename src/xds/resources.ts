/**
 * RateLimitConfig resources (proto/ratelimit/config/ratelimit/v3/rls_conf.proto) turned into rules files: each
 * resource becomes the text of one file, `xds:<name>`, that goes through the same validation and compilation as
 * a YAML file from CONFIG_DIR (JSON is YAML). An error in a resource thus names the resource, line and field,
 * as an error in a file does.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { decodeStruct, RATE_LIMIT_CONFIG_TYPE, type AnyResource, type JsonValue } from './discovery-messages.js';
import { ProtoReader } from '../protobuf/reader.js';

/** RateLimitUnit numbers → our unit names (WEEK is 7, after MONTH and YEAR). */
const UNITS: Readonly<Record<number, string>> = { 1: 'second', 2: 'minute', 3: 'hour', 4: 'day', 5: 'month', 6: 'year', 7: 'week' };

/** Deeper descriptor nesting is refused while decoding (the validator's own bound is lower). */
const MAX_DEPTH = 64;

export interface ResourceFile {
  readonly name: string;
  readonly text: string;
}

type Obj = { [key: string]: JsonValue };

function flag(r: ProtoReader, field: string): boolean {
  return r.uint(field) !== 0;
}

function decodePolicy(r: ProtoReader): Obj {
  const out: Obj = {};
  const replaces: JsonValue[] = [];
  while (r.next()) {
    if (r.number === 1) {
      const unit = r.uint('unit');
      // UNKNOWN (0) is left out: a limit without a unit is then refused by validation, as the reference refuses it.
      if (unit !== 0) out.unit = UNITS[unit] ?? `unit #${unit}`;
    } else if (r.number === 2) out.requests_per_unit = r.uint('requests_per_unit');
    else if (r.number === 3) {
      if (flag(r, 'unlimited')) out.unlimited = true;
    } else if (r.number === 4) out.name = r.utf8('name');
    else if (r.number === 5) {
      const x = r.sub('replaces');
      let name = '';
      while (x.next()) if (x.number === 1) name = x.utf8('name');
      replaces.push({ name });
    }
  }
  if (out.requests_per_unit === undefined && out.unlimited !== true) out.requests_per_unit = 0;
  if (replaces.length > 0) out.replaces = replaces;
  // Every charge counts, even one that crosses the limit, as envoyproxy/ratelimit counts every hit: a cost charged
  // after the response (apply_on_stream_done, Envoy Gateway's cost.response, the AI Gateway's quota_cost) cannot
  // be refused, so a dropped charge would leak. The proto has no field for it; xDS limits are fixed windows.
  if (out.unlimited !== true) out.count_every_hit = true;
  return out;
}

function decodeDescriptor(r: ProtoReader, depth: number): Obj {
  if (depth > MAX_DEPTH) throw new Error(`descriptors nested deeper than ${MAX_DEPTH}`);
  const out: Obj = { key: '' };
  const children: JsonValue[] = [];
  while (r.next()) {
    switch (r.number) {
      case 1:
        out.key = r.utf8('key');
        break;
      case 2: {
        const v = r.utf8('value');
        if (v !== '') out.value = v;
        break;
      }
      case 3:
        out.rate_limit = decodePolicy(r.sub('rate_limit'));
        break;
      case 4:
        children.push(decodeDescriptor(r.sub('descriptors'), depth + 1));
        break;
      case 5:
        if (flag(r, 'shadow_mode')) out.shadow_mode = true;
        break;
      case 6:
        if (flag(r, 'detailed_metric')) out.detailed_metric = true;
        break;
      case 7:
        if (flag(r, 'quota_mode')) out.quota_mode = true;
        break;
      case 8:
        out.metadata = decodeStruct(r.sub('metadata'));
        break;
      default:
        break;
    }
  }
  if (children.length > 0) out.descriptors = children;
  return out;
}

/** One RateLimitConfig as {name, rules object}; throws on a malformed message. */
export function decodeRateLimitConfig(value: Uint8Array): { name: string; rules: Obj } {
  const r = new ProtoReader(value, 'RateLimitConfig');
  let name = '';
  const rules: Obj = { domain: '' };
  const descriptors: JsonValue[] = [];
  while (r.next()) {
    if (r.number === 1) name = r.utf8('name');
    else if (r.number === 2) rules.domain = r.utf8('domain');
    else if (r.number === 3) descriptors.push(decodeDescriptor(r.sub('descriptors'), 1));
  }
  rules.descriptors = descriptors;
  return { name, rules };
}

type Converted = { files: ResourceFile[]; errors: string[] };

/**
 * The rules files of one snapshot, in the order the server sent them. A resource of another type, one larger
 * than `maxResourceBytes` (counted as received: its protobuf encoding, not the JSON text it is turned into), or
 * one that does not decode, is an error naming it (the whole set is then refused).
 */
export function resourcesToFiles(resources: readonly AnyResource[], bounds: { readonly maxResourceBytes: number }): Converted {
  const out: Converted = { files: [], errors: [] };
  const seen = new Map<string, number>();
  resources.forEach((res, i) => convert(res, i, bounds, seen, out));
  return out;
}

/** resourcesToFiles, letting the event loop turn whenever converting took `sliceMs` (a resource is never split). */
export async function resourcesToFilesInSlices(
  resources: readonly AnyResource[],
  bounds: { readonly maxResourceBytes: number },
  sliceMs: number,
): Promise<Converted> {
  const out: Converted = { files: [], errors: [] };
  const seen = new Map<string, number>();
  let end = performance.now() + sliceMs;
  for (const [i, res] of resources.entries()) {
    convert(res, i, bounds, seen, out);
    if (performance.now() < end) continue;
    await nextTurn();
    end = performance.now() + sliceMs;
  }
  return out;
}

function convert(res: AnyResource, i: number, bounds: { readonly maxResourceBytes: number }, seen: Map<string, number>, out: Converted): void {
  if (res.typeUrl !== RATE_LIMIT_CONFIG_TYPE) {
    out.errors.push(`resources[${i}]: type ${res.typeUrl || '(none)'} is not ${RATE_LIMIT_CONFIG_TYPE}`);
    return;
  }
  if (res.value.length > bounds.maxResourceBytes) {
    out.errors.push(`resources[${i}]: ${res.value.length} bytes, over the ${bounds.maxResourceBytes} bytes a resource may have (CONFIG_MAX_FILE_BYTES)`);
    return;
  }
  try {
    const { name, rules } = decodeRateLimitConfig(res.value);
    const base = `xds:${name === '' ? `resources[${i}]` : name}`;
    const n = (seen.get(base) ?? 0) + 1;
    seen.set(base, n);
    out.files.push({ name: n === 1 ? base : `${base}#${n}`, text: `${JSON.stringify(rules, null, 2)}\n` });
  } catch (err) {
    out.errors.push(`resources[${i}]: ${(err as Error).message}`);
  }
}
