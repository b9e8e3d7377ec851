/**
 * What an operator reads, tried as a new user would: misspelt settings named with a did-you-mean, one debug line
 * per decision, gRPC failures said in words with what to check, durations in `serve --help` as the docs write
 * them, the xDS log when no rules ever arrived, and `query`'s lines agreeing with each other.
 */
import { join } from 'node:path';
import { runRatelimit } from '../support/ratelimit-cli.js';
import { freePort } from '../support/redis.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSettings } from '../../src/settings/settings.js';
import { RlsTestClient } from '../support/rls-client.js';
import { spawnService, type ServiceProcess } from '../support/service-process.js';
import { eventually } from '../support/eventually.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';

const RULES = 'domain: edge\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 100}\n';

function logLines(p: ServiceProcess): { level: string; msg: string; [k: string]: unknown }[] {
  return p
    .stderr()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: string; msg: string });
}

let dir: string;
let service: ServiceProcess;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rl-operator-'));
  writeFileSync(join(dir, 'edge.yaml'), RULES);
  service = await spawnService({ CONFIG_DIR: dir, LOG_LEVEL: 'debug', GRPC_PROT: '9000', BACKNED: 'redis' });
});
afterAll(async () => {
  await service?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('settings that look like ours', () => {
  it('warns about each misspelt env var with the name it probably meant, at start', () => {
    const warned = logLines(service).filter((l) => l.level === 'warn' && String(l.msg).includes('did you mean'));
    expect(warned.map((l) => l.msg).sort()).toEqual([
      'BACKNED is not a setting and is ignored (did you mean BACKEND?)',
      'GRPC_PROT is not a setting and is ignored (did you mean GRPC_PORT?)',
    ]);
  });

  it("knows the reference's names, and leaves other programs' and Kubernetes' variables alone", () => {
    const { notices } = loadSettings({
      REDIS_SOCKET_TYP: 'tcp',
      REDIS_SOCKET_TYPE: 'tcp',
      USE_STATSD: 'false',
      GRPC_TRACE: 'all',
      GRPC_VERBOSITY: 'debug',
      NODE_ENV: 'production',
      NODE_OPTIONS: '--max-old-space-size=256',
      HOSTNAME: 'pod-1',
      HOME: '/root',
      PATH: '/bin',
      REDIS_PORT: 'tcp://10.0.0.1:6379',
      REDIS_SERVICE_HOST: '10.0.0.1',
      REDIS_PORT_6379_TCP_ADDR: '10.0.0.1',
      KUBERNETES_SERVICE_PORT: '443',
    });
    expect(notices.filter((n) => n.message.includes('did you mean')).map((n) => n.message)).toEqual([
      'REDIS_SOCKET_TYP is not a setting and is ignored (did you mean REDIS_SOCKET_TYPE?)',
    ]);
  });
});

describe('LOG_LEVEL=debug', () => {
  it('logs one line per decision: the domain, the code, and each descriptor with its limit and what is left', async () => {
    const client = new RlsTestClient(service.grpcAddress);
    try {
      for (let i = 0; i < 3; i++) await client.ask('edge', [[['user', 'ann']]], 40);
    } finally {
      client.close();
    }
    await eventually(() => logLines(service).filter((l) => l.msg === 'decision').length >= 3, { what: 'three decision lines' });
    const lines = logLines(service).filter((l) => l.msg === 'decision');
    expect(lines.map((l) => [l.level, l.domain, l.code, l.descriptors])).toEqual([
      ['debug', 'edge', 'OK', [expect.stringMatching(/^\(user=ann\): OK, 100 per minute, remaining 60, reset in \d+s$/)]],
      ['debug', 'edge', 'OK', [expect.stringMatching(/^\(user=ann\): OK, 100 per minute, remaining 20, reset in \d+s$/)]],
      ['debug', 'edge', 'OVER_LIMIT', [expect.stringMatching(/^\(user=ann\): OVER_LIMIT, 100 per minute, remaining 0, reset in \d+s$/)]],
    ]);
  });
});

describe('ratelimit query', () => {
  it('a dry run: the headers it prints tell the same remaining as its status line', async () => {
    const r = await runRatelimit(['query', '--server', service.grpcAddress, '--admin', service.httpAddress, '--domain', 'edge', 'user=bea', '--hits', '5']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/\[0\] user=bea: OK, 100\/minute, remaining 95 after this request/);
    expect(r.stdout).toMatch(/header ratelimit: "edge\.user";r=95;t=\d+/);
  });

  it('--spend with more hits than the limit: says that no retry will fit, whatever retry-after says', async () => {
    const r = await runRatelimit(['query', '--server', service.grpcAddress, '--domain', 'edge', 'user=cy', '--spend', '--hits', '200']);
    expect(r.code).toBe(3);
    expect(r.stdout).toContain('[0] 200 hits can never fit a limit of 100/minute: no retry will be admitted');
    const fits = await runRatelimit(['query', '--server', service.grpcAddress, '--domain', 'edge', 'user=cy', '--spend', '--hits', '100']);
    expect(fits.stdout).not.toContain('can never fit');
  });

  it('a server that is not there: what is wrong and what to check, not grpc-js text', async () => {
    const port = await freePort();
    const r = await runRatelimit(['query', '--server', `127.0.0.1:${port}`, '--domain', 'edge', 'user=dee']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `query: cannot reach the rate-limit service at 127.0.0.1:${port}: connection refused (nothing listens there); check that it runs and the host:port\n`,
    );
    // The admin HTTP port is not the gRPC port: said so.
    const http = await runRatelimit(['query', '--server', service.httpAddress, '--domain', 'edge', 'user=dee']);
    expect(http.stderr).toContain(`the peer does not speak gRPC (HTTP/2); check that the port is the gRPC port, not an HTTP one`);
  });
});

describe('serve --help', () => {
  it('shows durations as the docs write them', async () => {
    const r = await runRatelimit(['serve', '--help']);
    expect(r.stdout).toContain(
      'CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL / --config-grpc-xds-server-connect-retry-interval  [duration (500ms, 10s, 1m)] (default: 3s)',
    );
    expect(r.stdout).toContain('XDS_CLIENT_BACKOFF_INITIAL_INTERVAL / --xds-client-backoff-initial-interval  [duration (500ms, 10s, 1m)] (default: 500ms)');
    expect(r.stdout).toContain('(default: 60s)');
    expect(r.stdout).not.toMatch(/\[duration[^\]]*\] \(default: \d+\)/);
  });
});

describe('rules over xDS, with no xDS server reachable and no rules ever received', () => {
  it('says that no limit applies until the first set arrives (not that rules in force stay in force), in words', async () => {
    const port = await freePort();
    const p = await spawnService({
      CONFIG_TYPE: 'GRPC_XDS_SOTW',
      CONFIG_GRPC_XDS_SERVER_URL: `127.0.0.1:${port}`,
      FORCE_START_WITHOUT_INITIAL_CONFIG: 'true',
      XDS_CLIENT_BACKOFF_JITTER: 'false',
    });
    try {
      await eventually(() => logLines(p).some((l) => String(l.msg).startsWith('xDS server not reached')), { what: 'the xDS log line' });
      const line = logLines(p).find((l) => String(l.msg).startsWith('xDS server not reached'))!;
      expect(line.level).toBe('warn');
      expect(line.msg).toBe('xDS server not reached; no rules received from it yet, so no limit applies until the first set arrives');
      expect(line.reason).toBe(
        `cannot reach the xDS server at 127.0.0.1:${port}: connection refused (nothing listens there); check that it runs and the host:port`,
      );
      const rules = (await (await fetch(`http://${p.httpAddress}/rules`)).json()) as { source: { lastError: string } };
      expect(rules.source.lastError).toBe(line.reason);
      expect(p.stderr()).not.toContain('stay in force');
    } finally {
      await p.stop();
    }
  });
});
