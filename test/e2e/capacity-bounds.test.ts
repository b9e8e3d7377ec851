/**
 * The capacity service's own request bound through the real service (main.ts wiring): what Doorman's clients
 * send, a server asking for thousands of resources at once, long ids, is answered; past CAPACITY_MAX_REQUEST_BYTES a request is RESOURCE_EXHAUSTED naming the setting; RLS keeps its
 * own bounds. Also the resources gauge, the bounded GET /capacity, and a refusal logged as the capacity
 * service's, not ShouldRateLimit's.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capacityCaller, type CapacityCaller } from '../support/capacity-peers.js';
import { eventually } from '../support/eventually.js';
import { startTestService, type TestService } from '../support/service.js';
import { spawnService, type ServiceProcess } from '../support/service-process.js';

const CONFIG = `resources:
  - identifier_glob: "*"
    capacity: 100
    algorithm: {kind: STATIC, lease_length: 60, refresh_interval: 5, learning_mode_duration: 0}
`;
const MAX = 1024 * 1024;

interface Answer {
  response: { resource_id: string; gets: { capacity: number } }[];
}

describe('capacity service: its own request bound, through the real service', () => {
  let dir: string;
  let ours: TestService;
  let caller: CapacityCaller;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'capacity-bounds-'));
    writeFileSync(join(dir, 'resources.yaml'), CONFIG);
    ours = await startTestService({}, { capacityConfig: join(dir, 'resources.yaml'), capacityMaxRequestBytes: MAX });
    caller = capacityCaller(ours.grpcAddress);
  });

  afterAll(async () => {
    caller?.close();
    await ours?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('answers a GetCapacity naming 5,000 resources (about 130 KB, twice MAX_REQUEST_BYTES), every one', async () => {
    const resource = Array.from({ length: 5000 }, (_, i) => ({ resource_id: `server-resource-${i}`, priority: 1, wants: 7 }));
    const answer = await caller.call<Answer>('GetCapacity', { client_id: 'all-of-them', resource }, 20_000);
    expect(answer.response).toHaveLength(5000);
    expect(answer.response.map((r) => [r.resource_id, r.gets.capacity])).toEqual(resource.map((r) => [r.resource_id, 7]));
    const metrics = await (await fetch(`${ours.httpBase}/metrics`)).text();
    expect(metrics).toMatch(/^ratelimit_capacity_resources 5000$/m);
    const described = (await (await fetch(`${ours.httpBase}/capacity`)).json()) as { resources_total: number; resources: unknown[] };
    expect(described.resources_total).toBe(5000);
    expect(described.resources).toHaveLength(1000);
  });

  it('answers a 100 KB resource id and a 500 KB client id', async () => {
    const id = 'r'.repeat(100_000);
    const answer = await caller.call<Answer>('GetCapacity', { client_id: 'c'.repeat(500_000), resource: [{ resource_id: id, priority: 1, wants: 5 }] });
    expect(answer.response[0]).toMatchObject({ resource_id: id, gets: { capacity: 5 } });
  });

  it('refuses a request over CAPACITY_MAX_REQUEST_BYTES with RESOURCE_EXHAUSTED', async () => {
    const err = await caller.call('GetCapacity', { client_id: 'c'.repeat(MAX + 10), resource: [] }).catch((e: grpc.ServiceError) => e);
    expect((err as grpc.ServiceError).code).toBe(grpc.status.RESOURCE_EXHAUSTED);
  });
});

describe('capacity service: its refusals are logged as its own', () => {
  let dir: string;
  let ours: ServiceProcess;
  let caller: CapacityCaller;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'capacity-log-'));
    writeFileSync(join(dir, 'resources.yaml'), CONFIG);
    mkdirSync(join(dir, 'rules'));
    // Below MAX_REQUEST_BYTES: the port lets the request through and the capacity route refuses it.
    ours = await spawnService({ CONFIG_DIR: join(dir, 'rules'), CAPACITY_CONFIG: join(dir, 'resources.yaml'), CAPACITY_MAX_REQUEST_BYTES: '1000' });
    caller = capacityCaller(ours.grpcAddress);
  });

  afterAll(async () => {
    caller?.close();
    await ours?.stop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('a GetCapacity over CAPACITY_MAX_REQUEST_BYTES is RESOURCE_EXHAUSTED and logged with protocol capacity', async () => {
    const err = await caller.call('GetCapacity', { client_id: 'c'.repeat(2000), resource: [] }).catch((e: grpc.ServiceError) => e);
    expect((err as grpc.ServiceError).code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    // The log line may reach this process just after the answer: wait for it (bounded).
    const failedLines = () =>
      ours
        .stderr()
        .split('\n')
        .filter((l) => l.includes('request failed'));
    await eventually(() => failedLines().length > 0, { what: "the 'request failed' log line" });
    const failed = failedLines().map((l) => JSON.parse(l) as { protocol?: string; error?: unknown });
    expect(failed.map((f) => f.protocol)).toEqual(['capacity']);
    expect(JSON.stringify(failed[0]!.error)).toContain('CAPACITY_MAX_REQUEST_BYTES');
  });
});
