/**
 * Request sequences for the capacity service, replayed on our server and on the real Doorman with the same
 * messages, so grants can be compared round by round. Seeded: a failing sequence replays exactly.
 */
import type { CapacityCaller } from './capacity-peers.js';
import { prng } from './prng.js';

export type Step =
  | { readonly op: 'get'; readonly client: string; readonly resource: string; readonly wants: number; readonly has?: number }
  | {
      readonly op: 'server';
      readonly server: string;
      readonly resource: string;
      readonly bands: readonly { priority: number; num_clients: number; wants: number }[];
      readonly has?: number;
    }
  | { readonly op: 'release'; readonly client: string; readonly resource: string };

/** What one step got: the capacity granted and the safe capacity answered (undefined for a release). */
export interface Answer {
  readonly capacity?: number;
  readonly safe?: number;
  readonly refresh?: number;
  readonly expiry?: number;
}

/**
 * `n` steps on `resource` (every priority 1, as Doorman's intermediates send): clients c0..c5 asking (wants from a small set so ties with equal shares happen),
 * sometimes with changed wants, sometimes releasing; with `servers`, intermediate servers s0..s2 asking for
 * bands of several clients.
 */
export function randomSequence(seed: string, resource: string, n: number, options: { servers?: boolean } = {}): Step[] {
  const r = prng(seed);
  const wantsSet = [0, 5, 10, 20, 30, 40, 50, 60, 100, 120, 1000];
  const steps: Step[] = [];
  for (let i = 0; i < n; i++) {
    const roll = r.next();
    if (options.servers === true && roll < 0.3) {
      const bands = Array.from({ length: r.int(1, 2) }, (_, b) => ({ priority: 1, num_clients: r.int(1, 4), wants: r.pick(wantsSet) * r.int(1, 3) + b }));
      steps.push({ op: 'server', server: `s${r.int(0, 2)}`, resource, bands });
    } else if (roll < 0.07) {
      steps.push({ op: 'release', client: `c${r.int(0, 5)}`, resource });
    } else {
      steps.push({ op: 'get', client: `c${r.int(0, 5)}`, resource, wants: r.pick(wantsSet) });
    }
  }
  return steps;
}

/** Sends one step; `has` (what this holder was last granted) is sent back as the Go client does. */
export async function sendStep(caller: CapacityCaller, step: Step, held: Map<string, number>): Promise<Answer> {
  const holder = step.op === 'server' ? step.server : step.client;
  const key = `${holder}/${step.resource}`;
  const lastHas = 'has' in step && step.has !== undefined ? step.has : held.get(key);
  const has = lastHas === undefined ? {} : { has: { capacity: lastHas, expiry_time: 1, refresh_interval: 1 } };
  if (step.op === 'release') {
    await caller.call('ReleaseCapacity', { client_id: step.client, resource_id: [step.resource] });
    held.delete(key);
    return {};
  }
  type Gets = { gets: { capacity: number; refresh_interval: number; expiry_time: number }; safe_capacity?: number };
  const res =
    step.op === 'get'
      ? await caller.call<{ response: Gets[] }>('GetCapacity', {
          client_id: step.client,
          resource: [{ resource_id: step.resource, priority: 1, wants: step.wants, ...has }],
        })
      : await caller.call<{ response: Gets[] }>('GetServerCapacity', {
          server_id: step.server,
          resource: [{ resource_id: step.resource, wants: step.bands, ...has }],
        });
  const r = res.response[0]!;
  held.set(key, r.gets.capacity);
  return {
    capacity: r.gets.capacity,
    ...(r.safe_capacity === undefined ? {} : { safe: r.safe_capacity }),
    refresh: r.gets.refresh_interval,
    expiry: r.gets.expiry_time,
  };
}

/** Equal up to float rounding (Doorman sums in map order, we in tree order). */
export function close(a: number | undefined, b: number | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));
}
