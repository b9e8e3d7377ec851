/**
 * The edges of the protocol, sent as raw bytes over gRPC to the real Doorman and to our service, answers
 * compared: ids that are not UTF-8 (two clients, and a resource id echoed), the empty id, a 100 KB id, wants of
 * 1e308, GetServerCapacity with num_clients 0. Where we differ on purpose (a resource named twice), see
 * docs/capacity.md; that case is tested on our side in test/integration/capacity/hostile.test.ts.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type * as M from '../../src/capacity/doorman-messages.js';
import { systemClock } from '../../src/vocab/clock.js';
import { decodeResponse, getCapacityBytes, getServerCapacityBytes, type AskBytes } from '../support/capacity-bytes.js';
import { doormanTool, startDoorman, type DoormanServer } from '../support/capacity-peers.js';
import { startTestService, type TestService } from '../support/service.js';

const CONFIG = `resources:
  - identifier_glob: static
    capacity: 50
    algorithm: {kind: STATIC, lease_length: 600, refresh_interval: 5, learning_mode_duration: 0}
  - identifier_glob: "*"
    capacity: 1000
    algorithm: {kind: FAIR_SHARE, lease_length: 600, refresh_interval: 5, learning_mode_duration: 0}
`;

const available = doormanTool('doorman') !== undefined;

/** Sends raw request bytes to a doorman.Capacity method; the answer's bytes or the gRPC error. */
function raw(address: string, method: string, bytes: Buffer): Promise<Buffer> {
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  return new Promise<Buffer>((resolve, reject) => {
    client.makeUnaryRequest(
      `/doorman.Capacity/${method}`,
      (b: Buffer) => b,
      (b: Buffer) => b,
      bytes,
      { deadline: Date.now() + 10_000 },
      (err, res) => (err ? reject(err) : resolve(res!)),
    );
  }).finally(() => client.close());
}

describe.runIf(available)("protocol edges: our answers and the real Doorman's, byte for byte", () => {
  let doorman: DoormanServer;
  let ours: TestService;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'capacity-edges-'));
    writeFileSync(join(dir, 'resources.yaml'), CONFIG);
    doorman = await startDoorman(CONFIG);
    ours = await startTestService({}, { capacityConfig: join(dir, 'resources.yaml') }, systemClock as never);
  });

  afterAll(async () => {
    await ours?.close();
    await doorman?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  /** The same GetCapacity to both; the granted capacities, and the raw answers. */
  async function both(client: string | Buffer, asks: readonly AskBytes[]): Promise<{ theirs: number[]; mine: number[]; rawTheirs: Buffer; rawMine: Buffer }> {
    const bytes = getCapacityBytes(client, asks);
    const rawTheirs = await raw(doorman.address, 'GetCapacity', bytes);
    const rawMine = await raw(ours.grpcAddress, 'GetCapacity', bytes);
    const grants = (b: Buffer) => decodeResponse<M.GetCapacityResponse>('GetCapacity', b).response.map((r) => r.gets.capacity);
    return { theirs: grants(rawTheirs), mine: grants(rawMine), rawTheirs, rawMine };
  }

  it('two clients whose ids differ only in bytes that are not UTF-8: 600 then 400 of 1,000, on both', async () => {
    const a = await both(Buffer.from([0x78, 0xff]), [{ resource: 'utf', wants: 600 }]);
    const b = await both(Buffer.from([0x78, 0xfe]), [{ resource: 'utf', wants: 600 }]);
    expect([a.mine, b.mine]).toEqual([a.theirs, b.theirs]);
    expect(b.mine).toEqual([400]);
  });

  it('a resource id that is not UTF-8 comes back byte for byte, on both', async () => {
    const id = Buffer.from('in-26\xff\xfe', 'latin1');
    const r = await both('c', [{ resource: id, wants: 5 }]);
    expect(r.rawTheirs.indexOf(id)).toBeGreaterThan(0);
    expect(r.rawMine.indexOf(id)).toBeGreaterThan(0);
  });

  it('the empty id, a 100 KB id and wants of 1e308 are answered alike', async () => {
    const empty = await both('', [{ resource: '', wants: 7 }]);
    expect(empty.mine).toEqual(empty.theirs);
    const long = 'L'.repeat(100_000);
    const r = await both(long, [{ resource: long, wants: 8 }]);
    expect(r.mine).toEqual(r.theirs);
    const s = await both('big', [{ resource: 'static', wants: 1e308 }]);
    expect(s.mine).toEqual(s.theirs);
    expect(s.mine).toEqual([50]);
  });

  it('GetServerCapacity with num_clients 0: INVALID_ARGUMENT "subclients should be > 0", on both', async () => {
    const bytes = getServerCapacityBytes('s', 'r', [{ priority: 1, num_clients: 0, wants: 10 }]);
    for (const address of [doorman.address, ours.grpcAddress]) {
      const err = (await raw(address, 'GetServerCapacity', bytes).catch((e: grpc.ServiceError) => e)) as grpc.ServiceError;
      expect(err.code, address).toBe(grpc.status.INVALID_ARGUMENT);
      expect(err.details).toContain('subclients should be > 0');
    }
  });
});
