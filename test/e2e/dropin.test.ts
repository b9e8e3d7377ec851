/**
 * A deployment written for envoyproxy/ratelimit runs unchanged. `ratelimit serve` is started as a
 * process with the environment of the reference's docker-compose.yml (its ratelimit service: USE_STATSD=false,
 * LOG_LEVEL=debug, REDIS_SOCKET_TYPE=tcp, REDIS_URL=host:port, RUNTIME_ROOT=/data, RUNTIME_SUBDIRECTORY=ratelimit,
 * the examples mounted at /data) on a real redis-server; only the Redis address and the listen ports differ.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RlsTestClient } from '../support/rls-client.js';
import { rawCommand, startRedis, type RedisServer } from '../support/redis.js';
import { spawnService, type ServiceProcess } from '../support/service-process.js';

// Rule files of the same shape as the reference's examples/ratelimit/config (written here, not copied).
const EXAMPLE = `---
domain: rl
descriptors:
  - key: source_cluster
    value: proxy
    descriptors:
      - key: destination_cluster
        value: mock
        rate_limit:
          unit: minute
          requests_per_unit: 1
  - key: foo
    rate_limit:
      unit: minute
      requests_per_unit: 2
    descriptors:
      - key: bar
        rate_limit:
          unit: minute
          requests_per_unit: 3
      - key: bar
        value: banned
        rate_limit:
          unit: minute
          requests_per_unit: 0
      - key: baz
        value: shady
        rate_limit:
          unit: minute
          requests_per_unit: 1
        shadow_mode: true
  - key: qux
    rate_limit:
      unlimited: true
`;
// The reference loads every file of the directory, whatever its name: this one has no extension.
const NO_EXTENSION = `domain: mongo_cps
descriptors:
  - key: database
    value: users
    rate_limit:
      unit: second
      requests_per_unit: 2
`;

let redis: RedisServer;
let data: string;
let service: ServiceProcess;
let client: RlsTestClient;

beforeAll(async () => {
  redis = await startRedis();
  data = mkdtempSync(join(tmpdir(), 'rl-compose-'));
  mkdirSync(join(data, 'ratelimit/config'), { recursive: true });
  writeFileSync(join(data, 'ratelimit/config/example.yaml'), EXAMPLE);
  writeFileSync(join(data, 'ratelimit/config/mongo'), NO_EXTENSION);
  writeFileSync(join(data, 'ratelimit/config/.example.yaml.swp'), '\u0000 not yaml: [');
  writeFileSync(join(data, 'ratelimit/descriptor_key.yaml'), 'not: [rules, of, the, config, directory');
  service = await spawnService({
    USE_STATSD: 'false',
    LOG_LEVEL: 'debug',
    REDIS_SOCKET_TYPE: 'tcp',
    REDIS_URL: `127.0.0.1:${redis.port}`,
    RUNTIME_ROOT: data,
    RUNTIME_SUBDIRECTORY: 'ratelimit',
  });
  client = new RlsTestClient(service.grpcAddress);
}, 60_000);

afterAll(async () => {
  client?.close();
  await service?.stop();
  await redis?.stop();
  rmSync(data, { recursive: true, force: true });
});

const codes = async (domain: string, descriptor: string[][], n: number) => {
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push((await client.ask(domain, [descriptor])).overall_code);
  return out;
};

describe("the reference's docker-compose environment", () => {
  it('limits with the rules of RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/config, counted in Redis', async () => {
    expect(await codes('rl', [['foo', 'f1']], 3)).toEqual(['OK', 'OK', 'OVER_LIMIT']);
    expect(
      await codes(
        'rl',
        [
          ['source_cluster', 'proxy'],
          ['destination_cluster', 'mock'],
        ],
        2,
      ),
    ).toEqual(['OK', 'OVER_LIMIT']);
    expect(
      await codes(
        'rl',
        [
          ['foo', 'f2'],
          ['bar', 'banned'],
        ],
        1,
      ),
    ).toEqual(['OVER_LIMIT']);
    expect(
      await codes(
        'rl',
        [
          ['foo', 'f3'],
          ['baz', 'shady'],
        ],
        3,
      ),
    ).toEqual(['OK', 'OK', 'OK']);
    expect(Number((await rawCommand(redis.port, ['DBSIZE'])).slice(1))).toBeGreaterThan(0);
  });

  it('loads the rule file without a .yaml extension, and skips dot files and files outside config/', async () => {
    // 2 a second: the three asks go together at the start of a second, so that no window turns over between them
    // on a loaded machine.
    await new Promise((resolve) => setTimeout(resolve, 1000 - (Date.now() % 1000) + 5));
    const answers = await Promise.all([0, 1, 2].map(() => client.ask('mongo_cps', [[['database', 'users']]])));
    expect(answers.map((a) => a.overall_code).sort()).toEqual(['OK', 'OK', 'OVER_LIMIT']);
  });

  it('answers /healthcheck on the HTTP port with 200 OK', async () => {
    const res = await fetch(`http://${service.httpAddress}/healthcheck`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('OK');
  });

  it('logs how it read the reference settings, by name, and starts with version, backend and rule counts', () => {
    const lines = service
      .stderr()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const settings = lines.filter((l) => l.component === 'settings').map((l) => l.setting);
    expect(settings).toEqual(expect.arrayContaining(['RUNTIME_ROOT+RUNTIME_SUBDIRECTORY', 'REDIS_URL']));
    expect(settings).not.toContain('USE_STATSD'); // a setting of ours, by the same name and meaning
    const start = lines.find((l) => l.msg === 'ratelimit-sidecar started');
    expect(start).toMatchObject({ backend: 'redis', failureMode: 'open', rules: join(data, 'ratelimit/config'), ruleCounts: { domains: 2, files: 2 } });
    expect(start?.version).toMatch(/^\d+\.\d+\.\d+/);
  });
});
