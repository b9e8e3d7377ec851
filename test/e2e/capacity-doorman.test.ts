/**
 * The same request sequences against our capacity service and the real Doorman server, grants compared round
 * by round, for every algorithm: GetCapacity clients that come, change their wants and release, and
 * intermediate servers asking for bands of clients with GetServerCapacity.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/vocab/clock.js';
import { capacityCaller, doormanTool, startDoorman, type CapacityCaller, type DoormanServer } from '../support/capacity-peers.js';
import { close, randomSequence, sendStep, type Answer, type Step } from '../support/capacity-sequences.js';
import { startTestService, type TestService } from '../support/service.js';

const KINDS = ['NO_ALGORITHM', 'STATIC', 'PROPORTIONAL_SHARE', 'FAIR_SHARE'] as const;
const CONFIG = `resources:
${KINDS.map(
  (k) => `  - identifier_glob: ${k.toLowerCase()}*
    capacity: 120
    algorithm: {kind: ${k}, lease_length: 600, refresh_interval: 5, learning_mode_duration: 0}`,
).join('\n')}
  - identifier_glob: safe
    capacity: 100
    safe_capacity: 7
    algorithm: {kind: FAIR_SHARE, lease_length: 600, refresh_interval: 9, learning_mode_duration: 0}
  - identifier_glob: "*"
    capacity: 1000
    algorithm: {kind: FAIR_SHARE, lease_length: 600, refresh_interval: 15, learning_mode_duration: 0}
`;

const SEEDS = Number(process.env['CAPACITY_SEEDS'] ?? 3);
const available = doormanTool('doorman') !== undefined;

describe.runIf(available)('capacity service against the real Doorman', () => {
  let doorman: DoormanServer;
  let ours: TestService;
  let dir: string;
  let theirs: CapacityCaller;
  let mine: CapacityCaller;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'capacity-'));
    writeFileSync(join(dir, 'resources.yaml'), CONFIG);
    doorman = await startDoorman(CONFIG);
    ours = await startTestService({}, { capacityConfig: join(dir, 'resources.yaml') }, systemClock as never);
    theirs = capacityCaller(doorman.address);
    mine = capacityCaller(ours.grpcAddress);
  });

  afterAll(async () => {
    theirs?.close();
    mine?.close();
    await ours?.close();
    await doorman?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function compare(steps: readonly Step[]): Promise<void> {
    const heldTheirs = new Map<string, number>();
    const heldMine = new Map<string, number>();
    const trace: string[] = [];
    for (const [i, step] of steps.entries()) {
      const a: Answer = await sendStep(theirs, step, heldTheirs);
      const b: Answer = await sendStep(mine, step, heldMine);
      trace.push(`${i}: ${JSON.stringify(step)} doorman=${a.capacity}/${a.safe} ours=${b.capacity}/${b.safe}`);
      if (!close(a.capacity, b.capacity) || !close(a.safe, b.safe) || a.refresh !== b.refresh) {
        expect.fail(`step ${i} differs:\n${trace.slice(-12).join('\n')}`);
      }
      if (a.expiry !== undefined && b.expiry !== undefined) expect(Math.abs(a.expiry - b.expiry)).toBeLessThanOrEqual(2);
    }
  }

  it("Doorman's documented examples: 120 shared by wants 1000/50/10", async () => {
    const round = (r: string): Step[] => [
      { op: 'get', client: 'a', resource: r, wants: 1000 },
      { op: 'get', client: 'b', resource: r, wants: 50 },
      { op: 'get', client: 'c', resource: r, wants: 10 },
    ];
    for (const r of ['fair_share-doc', 'proportional_share-doc']) await compare([...round(r), ...round(r), ...round(r)]);
    const held = new Map<string, number>();
    const got: number[] = [];
    for (const step of round('fair_share-doc')) got.push((await sendStep(mine, step, held)).capacity!);
    expect(got).toEqual([60, 50, 10]);
  });

  for (const kind of KINDS) {
    it(`${kind}: random GetCapacity sequences give the same grants`, async () => {
      for (let s = 0; s < SEEDS; s++) await compare(randomSequence(`${kind}-${s}`, `${kind.toLowerCase()}-r${s}`, 120));
    });
    it(`${kind}: with intermediate servers (GetServerCapacity bands)`, async () => {
      for (let s = 0; s < SEEDS; s++) await compare(randomSequence(`${kind}-srv-${s}`, `${kind.toLowerCase()}-srv${s}`, 120, { servers: true }));
    });
  }

  it('safe_capacity: the template value, else capacity ÷ clients; 0 for servers without one', async () => {
    await compare(randomSequence('safe', 'safe', 60, { servers: true }));
    await compare(randomSequence('default', 'other-resource', 60, { servers: true }));
  });
});
