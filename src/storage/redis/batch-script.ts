/**
 * The one Redis script of the store (lua/batch.lua with the algorithm fragments inserted), its argument
 * encoding and its reply decoding, in one place. The script text is assembled once at start-up from the
 * .lua files and registered with ioredis `defineCommand`, which sends EVALSHA and falls back to EVAL on
 * NOSCRIPT by itself (a restarted or failed-over Redis has an empty script cache), so no SHA is kept here.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import type { Cluster, Redis } from 'ioredis';
import { ALGORITHM_NAMES, isAlgorithmName, type AlgorithmName } from '../../algorithms/types.js';
import type { LimitCheck, LimitOutcome } from '../counter-store.js';

const LUA_DIR = fileURLToPath(new URL('./lua/', import.meta.url));
/** Shared Lua (lua/lib), inserted before the fragments in this order: meter.lua uses int_math.lua. */
const LIBRARIES = ['int_math', 'meter'] as const;
const MARKER = '-- @ALGORITHM_FRAGMENTS@';
const COMMAND = 'ratelimitBatch';

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
  if (!template.includes(MARKER)) throw new Error(`batch.lua lacks the marker line ${MARKER}`);
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
  const unknown = files.map((f) => f.slice(0, -'.lua'.length)).filter((n) => !isAlgorithmName(n));
  if (unknown.length > 0) throw new Error(`unknown algorithm fragment(s) in ${dir}: ${unknown.join(', ')}`);
  // A function replacement keeps `$` sequences in the Lua text literal.
  return { lua: template.replace(MARKER, () => parts.join('\n')), algorithms };
}

/** The shared Lua libraries the algorithm fragments may use (INT_MATH, METER), as one text. */
export function luaLibraries(): string {
  return LIBRARIES.map((name) => `-- lib/${name}.lua\n${readFileSync(join(LUA_DIR, 'lib', `${name}.lua`), 'utf8')}`).join('\n');
}

type BatchCommand = (...keysAndArgs: (string | number)[]) => Promise<unknown>;

/**
 * The script as ioredis commands, one per key count: `ratelimitBatch<N>` is defined with numberOfKeys N
 * on first use. A fixed key count puts the first key first among the arguments, which is what ioredis
 * routes by on Cluster (with a variable count the first argument would be the count, and auto-pipelining
 * would send the call to the node owning the slot of the text "2"). All share one Lua text, so one SHA.
 */
export class BatchCommands {
  private readonly defined = new Set<number>();
  constructor(
    private readonly client: Redis | Cluster,
    private readonly script: BatchScript,
  ) {}

  command(keyCount: number): BatchCommand {
    const name = `${COMMAND}${keyCount}`;
    if (!this.defined.has(keyCount)) {
      this.client.defineCommand(name, { lua: this.script.lua, numberOfKeys: keyCount });
      this.defined.add(keyCount);
    }
    const command = (this.client as unknown as Record<string, BatchCommand>)[name]!;
    return command.bind(this.client);
  }
}

export interface BatchReply {
  readonly admitted: boolean;
  readonly outcomes: LimitOutcome[];
}

/**
 * Run the script for checks whose keys share one slot. `commit` false evaluates without writing (the first
 * phase of a cross-slot request on Redis Cluster). Rejects with the ioredis/Redis error as it is.
 */
export async function runBatch(
  commands: BatchCommands,
  checks: readonly LimitCheck[],
  nowMs: number,
  commit: boolean,
): Promise<BatchReply> {
  const args: (string | number)[] = checks.map((c) => c.key);
  args.push(nowMs, commit ? 1 : 0);
  for (const c of checks) args.push(c.algorithm, c.limit, c.windowMs, c.burst, c.hits, c.enforce ? 1 : 0);
  const reply = await commands.command(checks.length)(...args);
  return decodeBatchReply(reply, checks.length);
}

/** Decode the flat integer reply of batch.lua (layout in its header); throws on any other shape. */
export function decodeBatchReply(reply: unknown, checkCount: number): BatchReply {
  if (!Array.isArray(reply) || reply.length !== 1 + 3 * checkCount || !reply.every((v) => Number.isInteger(v))) {
    throw new Error(`unexpected batch script reply: ${JSON.stringify(reply)}`);
  }
  const values = reply as number[];
  const outcomes: LimitOutcome[] = [];
  for (let i = 0; i < checkCount; i++) {
    outcomes.push({
      allowed: values[1 + 3 * i] === 1,
      remaining: values[2 + 3 * i]!,
      resetMs: values[3 + 3 * i]!,
    });
  }
  return { admitted: values[0] === 1, outcomes };
}
