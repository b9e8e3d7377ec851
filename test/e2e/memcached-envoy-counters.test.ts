/**
 * MEMCACHE_KEY_FORMAT=envoy: the real envoyproxy/ratelimit binary (/work/shared/tools/envoy-ratelimit, with
 * BACKEND_TYPE=memcache) and our service (`ratelimit serve` with the reference's settings) share two memcached servers (MEMCACHE_HOST_PORT in the same order on
 * both), as during a rolling switch: for every client both count into the same item, on the same server,
 * and each sees the other's hits. The reference adds its hits after it answers, so the test waits for each of
 * its counts to land before the next request. Real time (the reference has no other clock): the window is an
 * hour, and a run that an hour boundary falls into is repeated once.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REFERENCE_START, referenceCannotRun, startReference } from '../../bench/lib/reference.js';
import type { Target } from '../../bench/lib/servers.js';
import { eventually } from '../support/eventually.js';
import { memcachedGet, startMemcached, type MemcachedProcess } from '../support/memcached.js';
import { RlsTestClient } from '../support/rls-client.js';
import { spawnService, type ServiceProcess } from '../support/service-process.js';

const RULES = `domain: edge
descriptors:
  - key: remote_address
    rate_limit:
      unit: hour
      requests_per_unit: 10
`;

const cannotRun = referenceCannotRun();
if (cannotRun !== undefined) console.warn(`SKIPPED memcached-envoy-counters.test.ts: ${cannotRun}`);

let servers: MemcachedProcess[];
let reference: Target | undefined;
let referenceClient: RlsTestClient;
let ours: ServiceProcess;
let oursClient: RlsTestClient;
let rulesDir: string;

describe.skipIf(cannotRun !== undefined)('MEMCACHE_KEY_FORMAT=envoy shares counters with envoyproxy/ratelimit on memcached', () => {
  beforeAll(async () => {
    servers = await Promise.all([startMemcached(), startMemcached()]);
    const hostPort = servers.map((s) => s.address);
    rulesDir = mkdtempSync(join(tmpdir(), 'rl-envoy-ref-mc-'));
    writeFileSync(join(rulesDir, 'edge.yaml'), RULES);
    // start.sh's Redis address is unused with BACKEND_TYPE=memcache (the later VAR=value pairs win).
    reference = await startReference(rulesDir, '127.0.0.1:1', REFERENCE_START, { env: ['BACKEND_TYPE=memcache', `MEMCACHE_HOST_PORT=${hostPort.join(',')}`] });
    referenceClient = new RlsTestClient(reference.address);
    await eventually(async () => (await referenceClient.ask('edge', [[['probe', 'x']]])).overall_code === 'OK', {
      timeoutMs: 15_000,
      what: 'the reference to answer',
    });
    // ours as a switching deployment runs it: the reference's own settings, plus the two that share its items
    ours = await spawnService({
      BACKEND_TYPE: 'memcache',
      MEMCACHE_HOST_PORT: hostPort.join(','),
      MEMCACHE_KEY_FORMAT: 'envoy',
      CACHE_KEY_PREFIX: '',
      LOCAL_CACHE_SIZE_IN_BYTES: '0',
      CONFIG_DIR: rulesDir,
    });
    oursClient = new RlsTestClient(ours.grpcAddress);
  }, 40_000);

  afterAll(async () => {
    oursClient?.close();
    referenceClient?.close();
    await ours?.stop();
    await reference?.stop();
    await Promise.all((servers ?? []).map((s) => s.stop()));
    if (rulesDir !== undefined) rmSync(rulesDir, { recursive: true, force: true });
  });

  const hourStart = (): number => Math.floor(Date.now() / 3_600_000) * 3_600;

  it('interleaved requests of several clients count into one item each, on the server both pick', async () => {
    for (let attempt = 0; ; attempt++) {
      const start = hourStart();
      // two clients whose items live on each server (by the reference's pick, CRC-32 of the key modulo 2)
      const candidates = Array.from({ length: 64 }, (_, i) => `10.${attempt}.${process.pid & 255}.${i}`);
      const keyOf = (ip: string) => `edge_remote_address_${ip}_${start}`;
      const clients = [0, 1].flatMap((server) => candidates.filter((ip) => crc32(keyOf(ip)) % 2 === server).slice(0, 2));
      const keys = clients.map(keyOf);
      const owners = keys.map((k) => servers[crc32(k) % 2]!);
      expect(clients).toHaveLength(4);
      const seen: string[][] = [];
      for (const [c, ip] of clients.entries()) {
        const row: string[] = [];
        let count = 0;
        for (const who of ['ref', 'ref', 'ours', 'ref', 'ours', 'ours'] as const) {
          const r = await (who === 'ref' ? referenceClient : oursClient).ask('edge', [[['remote_address', ip]]]);
          row.push(`${who}:${r.overall_code}:${r.statuses[0]!.limit_remaining}`);
          count++;
          // the reference counts after it answers: wait for its hit to land before the next request
          await eventually(async () => (await memcachedGet(owners[c]!.port, keys[c]!)) === String(count), { what: `${keys[c]} = ${count}`, timeoutMs: 5_000 });
        }
        seen.push(row);
        const other = servers.find((s) => s !== owners[c])!;
        expect(await memcachedGet(other.port, keys[c]!)).toBeUndefined();
      }
      if (hourStart() !== start && attempt === 0) continue; // an hour boundary fell inside: once more
      for (const row of seen) expect(row).toEqual(['ref:OK:9', 'ref:OK:8', 'ours:OK:7', 'ref:OK:6', 'ours:OK:5', 'ours:OK:4']);

      // one client: ours takes the rest and is refused without counting; the reference sees it over and counts
      const [ip, key, owner] = [clients[0]!, keys[0]!, owners[0]!];
      for (let i = 0; i < 4; i++) expect((await oursClient.ask('edge', [[['remote_address', ip]]])).overall_code).toBe('OK');
      expect((await oursClient.ask('edge', [[['remote_address', ip]]])).overall_code).toBe('OVER_LIMIT');
      expect(await memcachedGet(owner.port, key)).toBe('10');
      expect((await referenceClient.ask('edge', [[['remote_address', ip]]])).overall_code).toBe('OVER_LIMIT');
      await eventually(async () => (await memcachedGet(owner.port, key)) === '11', { what: 'the reference to count its rejected hit', timeoutMs: 5_000 });
      return;
    }
  }, 60_000);
});
