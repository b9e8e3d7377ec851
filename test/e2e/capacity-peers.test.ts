/**
 * Doorman's own programs against our capacity service: its Go client and shell ask us for capacity, and a
 * Doorman intermediate server takes its capacity from us as its parent. Learning mode compared with the real
 * Doorman's. `ratelimit capacity` against both servers; `ratelimit check` on the resource file; hot reload.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCapacityCli } from '../../src/cli/capacity.js';
import { systemClock } from '../../src/vocab/clock.js';
import { capacityCaller, doormanTool, startDoorman, type CapacityCaller } from '../support/capacity-peers.js';
import { close, sendStep, type Step } from '../support/capacity-sequences.js';
import { eventually } from '../support/eventually.js';
import { startTestService, type TestService } from '../support/service.js';

const run = promisify(execFile);
const CONFIG = `resources:
  - identifier_glob: learn
    capacity: 120
    algorithm: {kind: FAIR_SHARE, lease_length: 60, refresh_interval: 1, learning_mode_duration: 3}
  - identifier_glob: "*"
    capacity: 120
    algorithm: {kind: FAIR_SHARE, lease_length: 30, refresh_interval: 1, learning_mode_duration: 0}
`;

const available = doormanTool('doorman') !== undefined;

function sink(): { text: string; write(t: string): void } {
  return {
    text: '',
    write(t: string) {
      this.text += t;
    },
  };
}

describe.runIf(available)("Doorman's programs against our capacity service", () => {
  let dir: string;
  let ours: TestService;
  let caller: CapacityCaller;
  const describeOurs = async (): Promise<{
    resources: { resource_id: string; clients: { client: string; has: number; wants: number; subclients: number }[] }[];
  }> => (await fetch(`${ours.httpBase}/capacity`)).json() as never;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'capacity-peers-'));
    writeFileSync(join(dir, 'resources.yaml'), CONFIG);
    ours = await startTestService({}, { capacityConfig: join(dir, 'resources.yaml'), configWatch: true, configDebounceMs: 50 }, systemClock as never);
    caller = capacityCaller(ours.grpcAddress);
  });

  afterAll(async () => {
    caller?.close();
    await ours?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers Discovery as master with its own address', async () => {
    expect(await caller.call('Discovery', {})).toEqual({ mastership: { master_address: ours.grpcAddress }, is_master: true });
  });

  it("Doorman's Go client gets its capacity from us", async () => {
    const { stdout } = await run(doormanTool('doorman_client')!, [`--server=${ours.grpcAddress}`, '--resource=go-client', '--wants=42', '--client_id=go1'], {
      timeout: 20_000,
    });
    expect(stdout.trim()).toBe('42');
  });

  it("Doorman's shell asks us and shows what it got", async () => {
    const shell = spawn(doormanTool('doorman_shell')!, [`--server=${ours.grpcAddress}`], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    shell.stdout.on('data', (d: Buffer) => (out += d.toString()));
    try {
      shell.stdin.write('get s1 shell-r 100\nget s2 shell-r 30\n');
      await eventually(async () => (await describeOurs()).resources.find((r) => r.resource_id === 'shell-r')?.clients.length === 2, {
        timeoutMs: 15_000,
        what: 'both shell clients holding leases',
      });
      // The shell's clients refresh every second; after one refresh each sees its fair share.
      await eventually(
        async () => {
          out = '';
          shell.stdin.write('show\n');
          await new Promise((r) => setTimeout(r, 200));
          return /client: "s1"\s+resource: "shell-r"\s+capacity: 90/.test(out) && /client: "s2"\s+resource: "shell-r"\s+capacity: 30/.test(out);
        },
        { timeoutMs: 15_000, intervalMs: 300, what: `the shell to show 90 and 30 (last output: ${out})` },
      );
      shell.stdin.write('master\n');
      await eventually(() => out.includes(`s1: ${ours.grpcAddress}`), { what: 'the shell to print the master' });
    } finally {
      shell.kill('SIGTERM');
    }
  });

  it('a Doorman intermediate server takes its capacity from us as its parent', async () => {
    const intermediate = await startDoorman(CONFIG.replaceAll('capacity: 120', 'capacity: 0'), { parent: ours.grpcAddress });
    const leaf = capacityCaller(intermediate.address);
    try {
      // Its clients' wants reach us summed, with their count, as one GetServerCapacity lease.
      await eventually(
        async () => {
          await leaf.call('GetCapacity', { client_id: 'leaf1', resource: [{ resource_id: 'tree', priority: 1, wants: 70 }] });
          await leaf.call('GetCapacity', { client_id: 'leaf2', resource: [{ resource_id: 'tree', priority: 1, wants: 20 }] });
          const tree = (await describeOurs()).resources.find((r) => r.resource_id === 'tree');
          return tree?.clients.some((c) => c.wants === 90 && c.subclients === 2 && c.has === 90) === true;
        },
        { timeoutMs: 30_000, intervalMs: 500, what: 'the intermediate to hold 90 of our 120' },
      );
      // And it shares what we granted among its clients.
      await eventually(
        async () => {
          const r = await leaf.call<{ response: { gets: { capacity: number } }[] }>('GetCapacity', {
            client_id: 'leaf1',
            resource: [{ resource_id: 'tree', priority: 1, wants: 70, has: { capacity: 70, expiry_time: 1, refresh_interval: 1 } }],
          });
          return r.response[0]!.gets.capacity === 70;
        },
        { timeoutMs: 30_000, intervalMs: 500, what: 'leaf1 to get 70 from the intermediate' },
      );
    } finally {
      leaf.close();
      await intermediate.close();
    }
  });

  it('learning mode: the same echoes as the real Doorman right after start, the same decisions after it', async () => {
    const doorman = await startDoorman(CONFIG);
    const fresh = await startTestService({}, { capacityConfig: join(dir, 'resources.yaml') }, systemClock as never);
    const theirs = capacityCaller(doorman.address);
    const mine = capacityCaller(fresh.grpcAddress);
    const started = Date.now();
    try {
      const learning: Step[] = [
        { op: 'get', client: 'a', resource: 'learn', wants: 1000, has: 50 },
        { op: 'get', client: 'b', resource: 'learn', wants: 50, has: 40 },
        { op: 'get', client: 'c', resource: 'learn', wants: 10 },
      ];
      const after: Step[] = [
        { op: 'get', client: 'c', resource: 'learn', wants: 10 },
        { op: 'get', client: 'a', resource: 'learn', wants: 1000 },
        { op: 'get', client: 'b', resource: 'learn', wants: 50 },
        { op: 'get', client: 'c', resource: 'learn', wants: 10 },
        { op: 'get', client: 'a', resource: 'learn', wants: 1000 },
      ];
      const held = [new Map<string, number>(), new Map<string, number>()];
      const compare = async (steps: Step[]) => {
        for (const step of steps) {
          const a = await sendStep(theirs, step, held[0]!);
          const b = await sendStep(mine, step, held[1]!);
          expect(close(a.capacity, b.capacity), `${JSON.stringify(step)}: doorman ${a.capacity}, ours ${b.capacity}`).toBe(true);
        }
      };
      await compare(learning);
      expect(Date.now() - started).toBeLessThan(2500); // still inside both learning windows
      await new Promise((r) => setTimeout(r, 3500 - (Date.now() - started)));
      await compare(after);
    } finally {
      theirs.close();
      mine.close();
      await fresh.close();
      await doorman.close();
    }
  });

  it('`ratelimit capacity` asks ours and the real Doorman alike', async () => {
    const doorman = await startDoorman(CONFIG);
    try {
      for (const server of [ours.grpcAddress, doorman.address]) {
        const out = sink();
        const err = sink();
        expect(await runCapacityCli(['--server', server, 'get', 'cli', 'cli-r', '33', 'master', 'release', 'cli', 'cli-r'], out, err)).toBe(0);
        expect(out.text).toMatch(
          /^cli cli-r: capacity 33 until .*, refresh every 1s, safe capacity 120\nmaster: 127\.0\.0\.1:\d+ \(this server\)\ncli cli-r: released\n$/,
        );
      }
    } finally {
      await doorman.close();
    }
  });

  it('reloads the resource file when it changes, keeping the last good one when the new one is invalid', async () => {
    const get = async () =>
      (
        await caller.call<{ response: { gets: { capacity: number } }[] }>('GetCapacity', {
          client_id: 'rl',
          resource: [{ resource_id: 'reload', priority: 1, wants: 1000 }],
        })
      ).response[0]!.gets.capacity;
    expect(await get()).toBe(120);
    writeFileSync(join(dir, 'resources.yaml'), CONFIG.replace(/capacity: 120\n(\s+algorithm: \{kind: FAIR_SHARE, lease_length: 30)/, 'capacity: 500\n$1'));
    await eventually(async () => (await get()) === 500, { timeoutMs: 10_000, what: 'the new capacity' });
    writeFileSync(join(dir, 'resources.yaml'), 'resources: [\n');
    await new Promise((r) => setTimeout(r, 500));
    expect(await get()).toBe(500);
    const metrics = await (await fetch(`${ours.httpBase}/metrics`)).text();
    expect(metrics).toMatch(/ratelimit_capacity_config_reloads_total\{result="failure"\} [1-9]/);
    expect(metrics).toMatch(/ratelimit_capacity_granted\{resource="reload"\} 500/);
    writeFileSync(join(dir, 'resources.yaml'), CONFIG);
  });
});

describe('ratelimit check with a capacity resource file', () => {
  it('prints file:line:col: field errors and exits 1', async () => {
    const d = mkdtempSync(join(tmpdir(), 'capacity-check-'));
    try {
      writeFileSync(
        join(d, 'bad.yaml'),
        'resources:\n  - identifier_glob: "*"\n    capacity: x\n    algorithm: {kind: STATIC, lease_length: 2, refresh_interval: 1}\n',
      );
      const cli = join(process.cwd(), 'src/cli.ts');
      const result = await run('npx', ['tsx', cli, 'check', d, '--capacity-config', join(d, 'bad.yaml')], { timeout: 30_000 }).then(
        () => ({ code: 0, stderr: '' }),
        (e: { code: number; stderr: string }) => e,
      );
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`${join(d, 'bad.yaml')}:3:15: resources[0].capacity: must be a number ≥ 0, not the string 'x'`);
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  }, 90_000);
});

describe.runIf(available)('CAPACITY_PARENT: our server as an intermediate under the real Doorman', () => {
  it("takes each resource's capacity from the parent, and falls to the parent's safe_capacity when its lease runs out", async () => {
    const parent = await startDoorman(`resources:
  - identifier_glob: "*"
    capacity: 100
    safe_capacity: 5
    algorithm: {kind: FAIR_SHARE, lease_length: 4, refresh_interval: 1, learning_mode_duration: 0}
`);
    const d = mkdtempSync(join(tmpdir(), 'capacity-parent-'));
    writeFileSync(join(d, 'resources.yaml'), CONFIG.replaceAll('capacity: 120', 'capacity: 0'));
    const mid = await startTestService({}, { capacityConfig: join(d, 'resources.yaml'), capacityParent: parent.address }, systemClock as never);
    const leaf = capacityCaller(mid.grpcAddress);
    const ask = async (client: string, wants: number) =>
      (
        await leaf.call<{ response: { gets: { capacity: number } }[] }>('GetCapacity', {
          client_id: client,
          resource: [{ resource_id: 'tree', priority: 1, wants }],
        })
      ).response[0]!.gets.capacity;
    try {
      // The parent grants what our clients want together (70 + 20 of its 100), and we share it.
      await eventually(async () => (await ask('a', 70)) === 70 && (await ask('b', 20)) === 20, {
        timeoutMs: 20_000,
        intervalMs: 300,
        what: 'grants from the parent',
      });
      // More wanted than the parent has: we get the parent's 100 and share it fairly.
      await eventually(async () => (await ask('a', 200)) === 80 && (await ask('b', 20)) === 20, {
        timeoutMs: 20_000,
        intervalMs: 300,
        what: 'the parent capacity shared',
      });
      await parent.close();
      // The lease from the parent (4 s) runs out: the capacity falls to its safe_capacity, 5.
      await eventually(async () => (await ask('b', 20)) <= 5 && (await ask('a', 200)) <= 5, {
        timeoutMs: 20_000,
        intervalMs: 500,
        what: 'the fall to safe_capacity',
      });
      const shown = (await (await fetch(`${mid.httpBase}/capacity`)).json()) as { resources: { resource_id: string; capacity: number }[] };
      expect(shown.resources.find((r) => r.resource_id === 'tree')?.capacity).toBe(5);
    } finally {
      leaf.close();
      await mid.close();
      await parent.close();
      rmSync(d, { recursive: true, force: true });
    }
  }, 90_000);
});

describe('capacity service settings', () => {
  it('refuses WORKERS > 1 on the memory store: leases live in one process (on Redis they are shared)', async () => {
    const d = mkdtempSync(join(tmpdir(), 'capacity-workers-'));
    try {
      writeFileSync(join(d, 'resources.yaml'), CONFIG);
      await expect(startTestService({}, { capacityConfig: join(d, 'resources.yaml'), workers: 2 })).rejects.toThrow(
        /CAPACITY_CONFIG needs WORKERS=1 with BACKEND=memory/,
      );
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });
});
