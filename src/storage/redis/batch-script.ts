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
import { Command, type Cluster, type Redis } from 'ioredis';
import { ALGORITHM_NAMES, isAlgorithmName, type AlgorithmName } from '../../vocab/algorithm-names.js';
import type { LimitCheck, LimitOutcome } from '../counter-store.js';
import { decodeOnLimitTail, onLimitFields } from './on-limit-args.js';
import { decodeThrottlingFlags, KeyIndex, THROTTLING_FIELDS, throttlingFields } from './throttling-args.js';
import { algorithmId, CALENDAR_WINDOW, ENVOY_FIXED_WINDOW, FORMATS, luaAlgorithmNames } from './algorithm-ids.js';
import { packDoubles, readDoubles } from './packed.js';
import type { RequestBatcher, ScriptRequest } from './request-batcher.js';
import { stateKey } from './state-key.js';

const LUA_DIR = fileURLToPath(new URL('./lua/', import.meta.url));
/** Shared Lua (lua/lib), inserted before the fragments in this order: meter.lua uses int_math.lua. */
const LIBRARIES = ['int_math', 'meter', 'window_count'] as const;
const MARKER = '-- @ALGORITHM_FRAGMENTS@';

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
  const parts: string[] = [luaAlgorithmNames(), luaLibraries()];
  for (const name of ALGORITHM_NAMES) {
    if (!files.includes(`${name}.lua`)) continue;
    algorithms.push(name);
    parts.push(`-- ${name}.lua\n${readFileSync(join(dir, `${name}.lua`), 'utf8')}`);
  }
  parts.push(`-- on_limit.lua\n${readFileSync(join(LUA_DIR, 'on_limit.lua'), 'utf8')}`);
  parts.push(`-- throttling/step.lua\n${readFileSync(join(LUA_DIR, 'throttling', 'step.lua'), 'utf8')}`);
  for (const format of FORMATS) parts.push(`-- formats/${format}.lua\n${readFileSync(join(LUA_DIR, 'formats', `${format}.lua`), 'utf8')}`);
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
type ArrayCall = (scriptOrSha: string, keyCount: number, args: ScriptArg[]) => Promise<unknown>;
export type ScriptArg = string | number | Buffer;

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
  /** `onWrite`: told of every command written directly (each is one write, so one round trip). */
  constructor(
    private readonly client: Redis | Cluster,
    private readonly script: BatchScript,
    private readonly onWrite?: () => void,
  ) {
    this.sha = createHash('sha1').update(script.lua).digest('hex');
  }

  /** The reply with bulk strings as text. */
  call(keyCount: number, args: ScriptArg[]): Promise<unknown> {
    const client = this.client as unknown as { evalsha: ArrayCall; eval: ArrayCall };
    return this.run(client.evalsha, client.eval, keyCount, args);
  }

  /**
   * The reply with bulk strings as Buffers (binary replies), written at once: the request batcher's one call
   * per event-loop turn. Through ioredis's auto-pipeline, the Pipeline built per write kept the calls' objects
   * alive through young-generation collections, so they were promoted and the old generation filled with them
   * (with one call in flight, ~0.9 MiB promoted per scavenge against ~40 KiB written directly).
   */
  callBuffer(keyCount: number, args: ScriptArg[]): Promise<unknown> {
    return this.run(this.direct('evalsha', null), this.direct('eval', null), keyCount, args);
  }

  /**
   * The reply as text, the command written at once instead of through the auto-pipeline: for a caller with
   * one call in flight at a time (a capacity exchange per resource), where the pipeline built per call costs
   * more than its batching saves (about 2 µs per decision of the capacity bench).
   */
  callDirect(keyCount: number, args: ScriptArg[]): Promise<unknown> {
    return this.run(this.direct('evalsha', 'utf8'), this.direct('eval', 'utf8'), keyCount, args);
  }

  private direct(name: string, replyEncoding: 'utf8' | null): ArrayCall {
    return (head, n, rest) => {
      const command = new Command(name, [head, n, ...rest], { replyEncoding });
      this.onWrite?.();
      void this.client.sendCommand(command);
      return command.promise;
    };
  }

  private async run(evalsha: ArrayCall, evalText: ArrayCall, keyCount: number, args: ScriptArg[]): Promise<unknown> {
    if (this.resends !== undefined) await this.resends.settled;
    try {
      return await evalsha.call(this.client, this.sha, keyCount, args);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return await this.resend(() => evalText.call(this.client, this.script.lua, keyCount, args));
    }
  }

  /**
   * Calls refused with NOSCRIPT go again as EVAL, and calls made meanwhile wait until every such resend has its
   * reply: sent at once, they would run before the refused ones (the script is cached again by the first EVAL),
   * and two requests whose checks span two slots could then be decided in one order on one node and in the other
   * order on the other, admitting one request too few at a limit. Replies come in order on a connection, so the
   * NOSCRIPT of every call sent before the first resend arrives before that resend's reply. Waiting is bounded
   * (RESEND_WAIT_MS): a Redis that does not answer is the caller's deadline's business, not this gate's.
   */
  private resend(send: () => Promise<unknown>): Promise<unknown> {
    let r = this.resends;
    if (r === undefined) {
      let open!: () => void;
      const settled = new Promise<void>((resolve) => (open = resolve));
      const timer = setTimeout(() => r!.done(), RESEND_WAIT_MS);
      timer.unref();
      r = this.resends = {
        inFlight: 0,
        settled,
        done: () => {
          clearTimeout(timer);
          if (this.resends === r) this.resends = undefined;
          open();
        },
      };
    }
    const gate = r;
    gate.inFlight++;
    const sent = send();
    const settle = () => {
      if (--gate.inFlight === 0) gate.done();
    };
    sent.then(settle, settle);
    return sent;
  }

  private resends: { inFlight: number; readonly settled: Promise<void>; readonly done: () => void } | undefined;
}

/** Longest a call waits for the resends of calls refused with NOSCRIPT before it (BatchCommands), ms. */
const RESEND_WAIT_MS = 1000;

export interface BatchReply {
  /** The script refused to run: Redis's clock was past the call's expiry (nothing read or written). */
  readonly expired: boolean;
  readonly admitted: boolean;
  readonly outcomes: LimitOutcome[];
}

/** Numbers per check in the packed fields (batch.lua): 6 of its own, then throttling's, then on_limit's. */
export const CHECK_FIELDS = 6 + THROTTLING_FIELDS + 5;
const HEADER_FIELDS = 3;

/**
 * One request's KEYS and packed fields in batch.lua's layout, for checks whose keys share one slot. `commit`
 * false evaluates without writing (the first phase of a cross-slot request on Redis Cluster). `expiresRedisMs`
 * is the instant in Redis's clock (epoch ms) after which the script must not run this request, 0 for never.
 * The fields are little-endian doubles (exact for the integers they carry, all below 2^53): one Buffer that
 * the script reads with struct.unpack, instead of one argument string per value that it parses with tonumber.
 */
export function encodeBatch(checks: readonly LimitCheck[], nowMs: number, commit: boolean, expiresRedisMs = 0): ScriptRequest {
  const keys: string[] = [];
  for (const c of checks) keys.push(c.keyFormat === 'envoy' || c.windowStartMs !== undefined ? c.key : stateKey(c.key, c.algorithm));
  const extra = new KeyIndex(keys);
  const fields = new Float64Array(HEADER_FIELDS + CHECK_FIELDS * checks.length);
  fields[0] = nowMs;
  fields[1] = commit ? 1 : 0;
  fields[2] = Math.max(0, Math.floor(expiresRedisMs));
  for (let i = 0; i < checks.length; i++) {
    const c = checks[i]!;
    const at = HEADER_FIELDS + CHECK_FIELDS * i;
    fields[at] = algorithmId(c.keyFormat === 'envoy' ? ENVOY_FIXED_WINDOW : c.windowStartMs !== undefined ? CALENDAR_WINDOW : c.algorithm);
    fields[at + 1] = c.limit;
    fields[at + 2] = c.windowMs;
    // calendar_window.lua reads the window's start where the other fragments read the burst, envoy_fixed_window
    // its expiry jitter (it has no burst)
    fields[at + 3] = c.windowStartMs ?? (c.keyFormat === 'envoy' ? (c.expiryJitterS ?? 0) : c.burst);
    fields[at + 4] = c.hits;
    fields[at + 5] = checkMode(c);
    throttlingFields(c, extra, fields, at + 6);
    onLimitFields(c, extra, fields, at + 6 + THROTTLING_FIELDS);
  }
  return { keys, fields: packDoubles(fields) };
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

/**
 * Decode batch.lua's reply (layout in its header): the values as little-endian doubles in one string (a
 * Buffer: the batcher asks for binary replies); throws on any other shape.
 */
export function decodeBatchReply(reply: unknown, checkCount: number): BatchReply {
  const values = Buffer.isBuffer(reply) && reply.length % 8 === 0 ? readDoubles(reply) : undefined;
  if (values !== undefined && values.length === 1 && values[0] === -1) return { expired: true, admitted: false, outcomes: [] };
  // [admitted] [allowed, remaining, reset] × n [throttling flags] × n [on_limit tail of 3] × n
  if (values === undefined || values.length !== 1 + 7 * checkCount || !values.every((v) => Number.isInteger(v))) {
    const text = values === undefined ? (JSON.stringify(reply) ?? String(reply)) : JSON.stringify(values);
    throw new Error(`unexpected batch script reply: ${text.length > 200 ? `${text.slice(0, 200)}...` : text}`);
  }
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

/** Field +6 of a check (lua/batch.lua): 1 = enforce, + 2 = counted past its limit when admitted, + 4 = always counted. */
export function checkMode(c: LimitCheck): number {
  return (c.enforce ? 1 : 0) + (c.countOver === 'admitted' ? 2 : c.countOver === 'always' ? 4 : 0);
}
