/**
 * The one Redis script of the store (lua/batch.lua with the algorithm fragments inserted, its decision
 * called per request by lua/requests.lua), its argument encoding and its reply decoding, in one place. The
 * script text is assembled once at start-up from the .lua files and sent with EVALSHA, falling back to EVAL
 * on NOSCRIPT (see BatchCommands).
 */
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import type { Cluster, Redis } from 'ioredis';
import { ALGORITHM_NAMES, isAlgorithmName, type AlgorithmName } from '../../algorithms/types.js';
import type { LimitCheck, LimitOutcome } from '../counter-store.js';
import { decodeOnLimitTail, onLimitArgs } from './on-limit-args.js';
import { decodeThrottlingFlags, throttlingArgs } from './throttling-args.js';
import type { RequestBatcher, ScriptRequest } from './request-batcher.js';
import { stateKey } from './state-key.js';

const LUA_DIR = fileURLToPath(new URL('./lua/', import.meta.url));
/** Shared Lua (lua/lib), inserted before the fragments in this order: meter.lua uses int_math.lua. */
const LIBRARIES = ['int_math', 'meter', 'window_count'] as const;
const MARKER = '-- @ALGORITHM_FRAGMENTS@';
/** The fragment (lua/formats) for checks with keyFormat 'envoy' (REDIS_KEY_FORMAT=envoy): the reference's counters. */
const ENVOY_FIXED_WINDOW = 'envoy_fixed_window';

export interface BatchScript {
  /** The assembled Lua text. */
  readonly lua: string;
  /** Algorithms whose fragment was found, in the order they were inserted. */
  readonly algorithms: readonly AlgorithmName[];
}

export interface LoadBatchScriptOptions {
  /** Folder of `<algorithm>.lua` fragments; default `lua/algorithms` next to this module. */
  readonly algorithmsDir?: string;
}

/**
 * Read batch.lua, the shared libraries and every `<algorithm>.lua` fragment and join them. Throws when a fragment has a name that
 * is not an algorithm (a misspelt file would otherwise be silently unreachable) or batch.lua has no marker.
 */
export function loadBatchScript(options: LoadBatchScriptOptions = {}): BatchScript {
  const dir = options.algorithmsDir ?? join(LUA_DIR, 'algorithms');
  const template = readFileSync(join(LUA_DIR, 'batch.lua'), 'utf8');
  const at = template.indexOf(MARKER);
  if (at < 0) throw new Error(`batch.lua lacks the marker line ${MARKER}`);
  let files: string[] = [];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith('.lua'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const algorithms: AlgorithmName[] = [];
  const parts: string[] = [luaLibraries()];
  for (const name of ALGORITHM_NAMES) {
    if (!files.includes(`${name}.lua`)) continue;
    algorithms.push(name);
    parts.push(`-- ${name}.lua\n${readFileSync(join(dir, `${name}.lua`), 'utf8')}`);
  }
  parts.push(`-- on_limit.lua\n${readFileSync(join(LUA_DIR, 'on_limit.lua'), 'utf8')}`);
  parts.push(`-- throttling/step.lua\n${readFileSync(join(LUA_DIR, 'throttling', 'step.lua'), 'utf8')}`);
  parts.push(`-- formats/${ENVOY_FIXED_WINDOW}.lua\n${readFileSync(join(LUA_DIR, 'formats', `${ENVOY_FIXED_WINDOW}.lua`), 'utf8')}`);
  const unknown = files.map((f) => f.slice(0, -'.lua'.length)).filter((n) => !isAlgorithmName(n));
  if (unknown.length > 0) throw new Error(`unknown algorithm fragment(s) in ${dir}: ${unknown.join(', ')}`);
  // batch.lua (after the marker) defines decide_request, which requests.lua calls once per request of a call
  // (cross-request batching, request-batcher.ts) on that request's slice of KEYS and ARGV.
  const requests = `-- requests.lua\n${readFileSync(join(LUA_DIR, 'requests.lua'), 'utf8')}`;
  return { lua: [template.slice(0, at), parts.join('\n'), template.slice(at + MARKER.length), requests].join('\n'), algorithms };
}

/** The shared Lua libraries the algorithm fragments may use (INT_MATH, METER, WINDOW_COUNT), as one text. */
export function luaLibraries(): string {
  return LIBRARIES.map((name) => `-- lib/${name}.lua\n${readFileSync(join(LUA_DIR, 'lib', `${name}.lua`), 'utf8')}`).join('\n');
}

/**
 * Most checks in one script call: far above any real request, below Lua's and Redis's argument limits.
 * RedisStore.apply refuses larger requests (a call carries at most one request's checks).
 */
export const MAX_BATCH_CHECKS = 100_000;

/** EVAL / EVALSHA with the keys and arguments as one array (ioredis flattens one level; typed as values only). */
type ArrayCall = (scriptOrSha: string, keyCount: number, args: (string | number)[]) => Promise<unknown>;

/**
 * Calls the script with the built-in EVALSHA (EVAL once on NOSCRIPT: a restarted or flushed Redis has an empty
 * script cache, and EVAL caches the text again). Not `defineCommand`: a command defined per key count after
 * an auto-pipeline was created is missing from that pipeline (ioredis copies the command table when it
 * creates one), which crashed the process; and every defined command makes each pipeline creation copy one
 * more. EVALSHA is a built-in with known key positions, so auto-pipelining on Cluster routes the call by its
 * first key (the slot of all its keys), and the arguments go as one array (no spread of 60 000 values).
 */
export class BatchCommands {
  readonly sha: string;
  constructor(
    private readonly client: Redis | Cluster,
    private readonly script: BatchScript,
  ) {
    this.sha = createHash('sha1').update(script.lua).digest('hex');
  }

  async call(keyCount: number, args: (string | number)[]): Promise<unknown> {
    try {
      return await (this.client.evalsha as ArrayCall).call(this.client, this.sha, keyCount, args);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return await (this.client.eval as ArrayCall).call(this.client, this.script.lua, keyCount, args);
    }
  }
}

export interface BatchReply {
  /** The script refused to run: Redis's clock was past the call's expiry (nothing read or written). */
  readonly expired: boolean;
  readonly admitted: boolean;
  readonly outcomes: LimitOutcome[];
}

/**
 * One request's KEYS and ARGV in batch.lua's layout, for checks whose keys share one slot. `commit` false
 * evaluates without writing (the first phase of a cross-slot request on Redis Cluster). `expiresRedisMs` is
 * the instant in Redis's clock (epoch ms) after which the script must not run this request, 0 for never.
 */
export function encodeBatch(checks: readonly LimitCheck[], nowMs: number, commit: boolean, expiresRedisMs = 0): ScriptRequest {
  const keys: string[] = [];
  for (const c of checks) keys.push(c.keyFormat === 'envoy' ? c.key : stateKey(c.key, c.algorithm));
  const extra = throttlingArgs(checks, keys);
  const args: (string | number)[] = [nowMs, commit ? 1 : 0, Math.max(0, Math.floor(expiresRedisMs))];
  for (let i = 0; i < checks.length; i++) {
    const c = checks[i]!;
    args.push(c.keyFormat === 'envoy' ? ENVOY_FIXED_WINDOW : c.algorithm, c.limit, c.windowMs, c.burst, c.hits, checkMode(c));
    for (const v of extra[i]!) args.push(v);
    onLimitArgs(c, args);
  }
  return { keys, args };
}

/**
 * Run the script for checks whose keys share `slot` (0 on one node), batched with the other requests of
 * this event-loop turn (request-batcher.ts). Rejects with the ioredis/Redis error as it is.
 */
export async function runBatch(
  batcher: RequestBatcher,
  slot: number,
  checks: readonly LimitCheck[],
  nowMs: number,
  commit: boolean,
  expiresRedisMs = 0,
): Promise<BatchReply> {
  const reply = await batcher.submit(slot, encodeBatch(checks, nowMs, commit, expiresRedisMs));
  return decodeBatchReply(reply, checks.length);
}

/** Decode the flat integer reply of batch.lua (layout in its header); throws on any other shape. */
export function decodeBatchReply(reply: unknown, checkCount: number): BatchReply {
  if (Array.isArray(reply) && reply.length === 1 && reply[0] === -1) return { expired: true, admitted: false, outcomes: [] };
  // [admitted] [allowed, remaining, reset] × n [throttling flags] × n [on_limit tail of 3] × n
  if (!Array.isArray(reply) || reply.length !== 1 + 7 * checkCount || !reply.every((v) => Number.isInteger(v))) {
    const text = JSON.stringify(reply) ?? String(reply);
    throw new Error(`unexpected batch script reply: ${text.length > 200 ? `${text.slice(0, 200)}...` : text}`);
  }
  const values = reply as number[];
  const outcomes: LimitOutcome[] = [];
  const admitted = values[0] === 1;
  for (let i = 0; i < checkCount; i++) {
    outcomes.push({
      allowed: values[1 + 3 * i] === 1,
      remaining: values[2 + 3 * i]!,
      resetMs: values[3 + 3 * i]!,
      ...decodeThrottlingFlags(values[1 + 3 * checkCount + i]!),
      ...decodeOnLimitTail(values, 1 + 4 * checkCount + 3 * i, admitted),
    });
  }
  return { expired: false, admitted, outcomes };
}

/** ARGV +5 of a check (lua/batch.lua): 1 = enforce, + 2 = counted past its limit when admitted, + 4 = always counted. */
export function checkMode(c: LimitCheck): number {
  return (c.enforce ? 1 : 0) + (c.countOver === 'admitted' ? 2 : c.countOver === 'always' ? 4 : 0);
}
