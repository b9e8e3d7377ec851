/**
 * The two Redis scripts of quota leases (lua/lease/claim.lua and give_back.lua), assembled like the batch
 * script (shared libraries and the algorithm fragments, read as they are) and called with EVALSHA (EVAL on
 * NOSCRIPT) through BatchCommands. Each call names one key, so on Redis Cluster it goes to that key's node.
 * The TypeScript twin of the arithmetic is src/lease/arithmetic.ts.
 */
import type { CALENDAR_WINDOW } from './algorithm-ids.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LEASE_ALGORITHMS, type LeaseAlgorithm } from '../../algorithms/lease-support.js';
import { BatchCommands, luaLibraries, type BatchScript } from './batch-script.js';
import type { RedisClient } from './connection.js';
import { stateKey } from './state-key.js';

const LUA_DIR = fileURLToPath(new URL('./lua/', import.meta.url));
const MARKER = '-- @LEASE_FRAGMENTS@';

/** What one claim got. */
export interface ClaimReply {
  /** Units counted in Redis for the lease (0..want). */
  readonly granted: number;
  /** What the limit had left before the claim (the algorithm's remaining). */
  readonly remainingBefore: number;
  /** ms: the algorithm's reset after the claim when granted >= need, else until `need` hits could be admitted. */
  readonly resetMs: number;
  /** ms: 0 when all `want` units were granted, else until `want` hits could be admitted (after the claim). */
  readonly againMs: number;
}

export interface ClaimArgs {
  readonly key: string;
  readonly algorithm: LeaseAlgorithm;
  readonly limit: number;
  readonly windowMs: number;
  readonly burst: number;
  readonly want: number;
  readonly need: number;
}

export interface GiveBackArgs {
  readonly key: string;
  /** calendar_window: the plain counter of a calendar window (lua/formats/calendar_window.lua). */
  readonly algorithm: LeaseAlgorithm | typeof CALENDAR_WINDOW;
  readonly limit: number;
  readonly windowMs: number;
  readonly units: number;
  /** Start of the window the units came from (window algorithms). */
  readonly windowStart: number;
}

function script(file: string, lua: string): BatchScript {
  return { lua: `-- lease/${file}\n${lua}`, algorithms: LEASE_ALGORITHMS };
}

/** claim.lua with the libraries and the fragments of the lease algorithms inserted. */
export function loadClaimScript(): BatchScript {
  const template = readFileSync(join(LUA_DIR, 'lease', 'claim.lua'), 'utf8');
  if (!template.includes(MARKER)) throw new Error(`lease/claim.lua lacks the marker line ${MARKER}`);
  const fragments = LEASE_ALGORITHMS.map((name) => `-- ${name}.lua\n${readFileSync(join(LUA_DIR, 'algorithms', `${name}.lua`), 'utf8')}`);
  return script(
    'claim.lua',
    template.replace(MARKER, () => [luaLibraries(), ...fragments].join('\n')),
  );
}

/** give_back.lua after the libraries (it uses INT_MATH for the bucket). */
export function loadGiveBackScript(): BatchScript {
  return script('give_back.lua', `${luaLibraries()}\n${readFileSync(join(LUA_DIR, 'lease', 'give_back.lua'), 'utf8')}`);
}

function integers(reply: unknown, n: number, what: string): number[] {
  if (!Array.isArray(reply) || reply.length !== n || !reply.every((v) => Number.isInteger(v))) {
    throw new Error(`unexpected lease ${what} reply: ${String(JSON.stringify(reply)).slice(0, 200)}`);
  }
  return reply as number[];
}

/** Claim and give back on one client (standalone, Sentinel or Cluster). */
export class LeaseScripts {
  private readonly claimCommand: BatchCommands;
  private readonly giveBackCommand: BatchCommands;

  constructor(client: RedisClient) {
    this.claimCommand = new BatchCommands(client, loadClaimScript());
    this.giveBackCommand = new BatchCommands(client, loadGiveBackScript());
  }

  async claim(a: ClaimArgs, nowMs: number): Promise<ClaimReply> {
    const reply = await this.claimCommand.call(1, [stateKey(a.key, a.algorithm), nowMs, a.algorithm, a.limit, a.windowMs, a.burst, a.want, a.need]);
    const [granted, remainingBefore, resetMs, againMs] = integers(reply, 4, 'claim');
    return { granted: granted!, remainingBefore: remainingBefore!, resetMs: resetMs!, againMs: againMs! };
  }

  /** Units actually returned (0 when the window is over or the state is another's). */
  async giveBack(a: GiveBackArgs, nowMs: number): Promise<number> {
    const reply = await this.giveBackCommand.call(1, [stateKey(a.key, a.algorithm), nowMs, a.algorithm, a.limit, a.windowMs, a.units, a.windowStart]);
    return integers(reply, 1, 'give-back')[0]!;
  }
}
