/**
 * Rules over xDS (CONFIG_TYPE=GRPC_XDS_SOTW) against a real go-control-plane server (test/xds-server/, made as
 * Envoy Gateway's rate-limit runner makes its own), run the same on this service and on envoyproxy/ratelimit
 * (shared/tools/envoy-ratelimit, which speaks this protocol), so that the scenarios themselves are proved on the
 * reference: start without a server, first snapshot, update, refused set (NACK, last good set kept), server
 * restart (reconnect, resync, no gap in enforcement), empty snapshot; and readiness waiting for the first set.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import { freePort, startRedis, type RedisServer } from '../support/redis.js';
import { RlsTestClient } from '../support/rls-client.js';
import { spawnService } from '../support/service-process.js';
import { makeTestPki } from '../support/tls.js';
import { referenceEnv } from '../support/xds-subjects.js';
import { startXdsServer, type RateLimitConfigJson, type XdsEvent, type XdsServer } from '../support/xds-server.js';

const REFERENCE_BIN = '/work/shared/tools/envoy-ratelimit/ratelimit';
const NODE = 'envoy-ratelimit';
const DOMAIN = 'xds-test';

const limit = (key: string, perHour: number, extra: Record<string, unknown> = {}) => ({ key, rateLimit: { unit: 'HOUR', requestsPerUnit: perHour }, ...extra });
const A: RateLimitConfigJson = { name: 'policy-a', domain: DOMAIN, descriptors: [limit('k', 2)] };
const B: RateLimitConfigJson = { name: 'policy-a', domain: DOMAIN, descriptors: [limit('k', 1)] };
/** Refused by both: a limit without a unit. */
const BAD: RateLimitConfigJson = { name: 'policy-a', domain: DOMAIN, descriptors: [limit('k', 5), { key: 'nounit', rateLimit: { requestsPerUnit: 1 } }] };
const C: RateLimitConfigJson = { name: 'policy-a', domain: DOMAIN, descriptors: [limit('k', 1), limit('k2', 1)] };

interface Subject {
  readonly client: RlsTestClient;
  readonly httpBase: string;
  readonly log: () => string;
  stop(): Promise<void>;
}

type Starter = (env: Record<string, string>) => Promise<Subject>;

const xdsEnv = (xdsPort: number, force: boolean): Record<string, string> => ({
  CONFIG_TYPE: 'GRPC_XDS_SOTW',
  CONFIG_GRPC_XDS_SERVER_URL: `127.0.0.1:${xdsPort}`,
  CONFIG_GRPC_XDS_NODE_ID: NODE,
  CONFIG_GRPC_XDS_NODE_METADATA: 'cluster=ci,zone=z1',
  FORCE_START_WITHOUT_INITIAL_CONFIG: String(force),
  XDS_CLIENT_BACKOFF_INITIAL_INTERVAL: '200ms',
  XDS_CLIENT_BACKOFF_MAX_INTERVAL: '1s',
});

const startOurs: Starter = async (env) => {
  const svc = await spawnService(env);
  const client = new RlsTestClient(svc.grpcAddress);
  return {
    client,
    httpBase: `http://${svc.httpAddress}`,
    log: () => svc.stderr(),
    stop: async () => {
      client.close();
      await svc.stop();
    },
  };
};

let redis: RedisServer | undefined;
const startReference: Starter = async (env) => {
  redis ??= await startRedis();
  const [grpc, http, debug] = [await freePort(), await freePort(), await freePort()];
  let out = '';
  const child: ChildProcess = spawn(REFERENCE_BIN, [], {
    env: { ...referenceEnv(redis.port, grpc, http, debug), ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr!.on('data', (c: Buffer) => void (out = (out + c.toString()).slice(-200_000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const client = new RlsTestClient(`127.0.0.1:${grpc}`);
  return {
    client,
    httpBase: `http://127.0.0.1:${http}`,
    log: () => out,
    stop: async () => {
      client.close();
      child.kill('SIGKILL');
      await exited;
    },
  };
};

/** One request of 1 hit: OK, OVER_LIMIT, or ERROR (the reference answers UNKNOWN without rules: no limit either). */
async function ask(s: Subject, key: string, value: string): Promise<string> {
  try {
    return (await s.client.ask(DOMAIN, [[[key, value]]], 1)).overall_code;
  } catch {
    return 'ERROR';
  }
}

const ack = (version: string) => (e: XdsEvent) => e.event === 'request' && e.version === version && e.nonce !== '';

async function healthy(s: Subject): Promise<boolean> {
  try {
    return (await fetch(`${s.httpBase}/healthcheck`)).status === 200;
  } catch {
    return false;
  }
}

const subjects: [string, Starter, boolean][] = [['this service', startOurs, true]];
if (existsSync(REFERENCE_BIN) && process.platform === 'linux' && process.arch === 'x64') subjects.push(['envoyproxy/ratelimit', startReference, false]);
else console.warn(`envoyproxy/ratelimit is not at ${REFERENCE_BIN}: the xDS scenarios run on this service only`);

afterAll(async () => {
  await redis?.stop();
});

describe.each(subjects)('rules over xDS: %s', (_name, start, ours) => {
  let server: XdsServer | undefined;
  let subject: Subject | undefined;
  let probes = 0;
  /**
   * envoyproxy/ratelimit sends its ACK before the set is in force (its xDS provider hands the set to the service
   * after acknowledging it), so for it the test waits until `check` sees the set; this service swaps the set in
   * before it ACKs, so for it the ACK is the event.
   */
  const settled = async (check: () => Promise<boolean>, what: string) => {
    if (!ours) await eventually(check, { timeoutMs: 10_000, what: `envoyproxy/ratelimit applying ${what}` });
  };
  /** A fresh value of `k` twice: OVER_LIMIT the second time iff the limit in force is 1. */
  const limitIsOne = async (s: Subject) => {
    const v = `probe-${probes++}`;
    await ask(s, 'k', v);
    return (await ask(s, 'k', v)) === 'OVER_LIMIT';
  };
  afterAll(async () => {
    await subject?.stop();
    await server?.close();
  });

  it('starts without a server, applies the first snapshot, an update within a second, NACKs a refused set keeping the last good one, resyncs after a server restart with no gap, and lifts every limit on an empty snapshot', async () => {
    const port = await freePort();
    subject = await start(xdsEnv(port, true));
    const s = subject;
    // No server yet, FORCE_START_WITHOUT_INITIAL_CONFIG: serving, nothing limited.
    for (let i = 0; i < 3; i++) expect(await ask(s, 'k', 'a')).not.toBe('OVER_LIMIT');
    if (ours) expect(await ask(s, 'k', 'a')).toBe('OK');

    server = await startXdsServer({ port, node: NODE, snapshot: { version: '1', resources: [A] } });
    const first = await server.waitFor(ack('1'), { timeoutMs: 20_000, what: 'the ACK of version 1' });
    expect(first.node).toBe(NODE);
    expect(first.metadata).toEqual({ cluster: 'ci', zone: 'z1' });
    await settled(async () => (await ask(s, 'k', `probe-${probes++}`)) !== 'ERROR', 'version 1');
    expect([await ask(s, 'k', 'a1'), await ask(s, 'k', 'a1'), await ask(s, 'k', 'a1')]).toEqual(['OK', 'OK', 'OVER_LIMIT']);

    // Update: applied (ACKed) within a second.
    let mark = server.events.length;
    const t0 = Date.now();
    server.set('2', [B]);
    await server.waitFor(ack('2'), { from: mark, what: 'the ACK of version 2' });
    expect(Date.now() - t0).toBeLessThan(1000);
    await settled(() => limitIsOne(s), 'version 2');
    expect([await ask(s, 'k', 'b'), await ask(s, 'k', 'b')]).toEqual(['OK', 'OVER_LIMIT']);

    // A refused set: NACKed (the version in force, an error detail), the last good set stays in force.
    mark = server.events.length;
    server.set('3', [BAD]);
    const nack = await server.waitFor((e) => e.event === 'nack', { from: mark, what: 'a NACK of version 3' });
    expect(nack.error).toMatch(/unit/i);
    if (ours) {
      expect(nack.version).toBe('2');
      expect(nack.error).toContain('xds:policy-a');
      expect(nack.error).toContain('descriptors[1].rate_limit.unit');
    }
    expect([await ask(s, 'k', 'b'), await ask(s, 'k', 'c'), await ask(s, 'k', 'c')]).toEqual(['OVER_LIMIT', 'OK', 'OVER_LIMIT']);
    if (ours) {
      // go-control-plane sends the refused version again at once: a repeat costs a few NACKs a second, one log line.
      const before = server.events.filter((e) => e.event === 'nack').length;
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const during = server.events.filter((e) => e.event === 'nack').length - before;
      expect(during).toBeLessThanOrEqual(5);
      expect(s.log().split('xDS rules refused').length - 1).toBe(1);
      const rules = (await (await fetch(`${s.httpBase}/rules`)).json()) as { source: { version: string; state: string; lastNack: { version: string } } };
      expect(rules.source).toMatchObject({ version: '2', state: 'connected', lastNack: { version: '3' } });
    }

    // The server restarts (its versions start again at "1", with other content): limits stay enforced throughout.
    await server.stop();
    server.set('1', [C]);
    const restartMark = server.events.length;
    const restarted = server.restart();
    await eventually(
      async () => {
        expect(await ask(s, 'k', 'b')).toBe('OVER_LIMIT'); // no gap: a failure here throws out of eventually's probe
        return (await ask(s, 'k2', 'x')) === 'OVER_LIMIT';
      },
      { timeoutMs: 20_000, what: 'the set of the restarted server (k2 limited)' },
    ).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}\n${s.log().slice(-2000)}`);
    });
    await restarted;
    await server.waitFor(ack('1'), { from: restartMark, what: "the ACK of the restarted server's version 1" });

    // An empty snapshot (Envoy Gateway sends one when no policy is left) lifts every limit.
    mark = server.events.length;
    server.set('2', []);
    await server.waitFor(ack('2'), { from: mark, what: 'the ACK of the empty version 2' });
    await settled(async () => (await ask(s, 'k', `probe-${probes++}`)) !== 'OVER_LIMIT' && !(await limitIsOne(s)), 'the empty version 2');
    const lifted = await ask(s, 'k', 'b');
    expect(lifted).not.toBe('OVER_LIMIT');
    if (ours) expect(lifted).toBe('OK');
  }, 90_000);

  it('without FORCE_START_WITHOUT_INITIAL_CONFIG is not healthy until the first set; with HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED not while the set holds no domain', async () => {
    const port = await freePort();
    const s = await start({ ...xdsEnv(port, false), HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED: 'true' });
    let x: XdsServer | undefined;
    try {
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await healthy(s)).toBe(false);
      if (ours) expect(await ask(s, 'k', 'early')).toBe('OK'); // answered all the same: no rules, no limit
      x = await startXdsServer({ port, node: NODE, snapshot: { version: '1', resources: [A] } });
      await eventually(() => healthy(s), { timeoutMs: 20_000, what: 'healthy after the first set' });
      const mark = x.events.length;
      x.set('2', []);
      await x.waitFor(ack('2'), { from: mark, what: 'the ACK of the empty set' });
      await eventually(async () => !(await healthy(s)), { timeoutMs: 5_000, what: 'not healthy with no domain' });
    } finally {
      await s.stop();
      await x?.close();
    }
  }, 60_000);

  it('reaches a server that requires client certificates (mutual TLS), checking its certificate against the CA and CONFIG_GRPC_XDS_SERVER_TLS_SAN', async () => {
    const pki = await makeTestPki();
    const port = await freePort();
    const x = await startXdsServer({
      port,
      node: NODE,
      snapshot: { version: '1', resources: [A] },
      tls: { cert: pki.serverCert, key: pki.serverKey, ca: pki.caCert },
    });
    const tls = { CONFIG_GRPC_XDS_SERVER_USE_TLS: 'true', CONFIG_GRPC_XDS_SERVER_TLS_CACERT: pki.caCert, CONFIG_GRPC_XDS_SERVER_TLS_SAN: pki.serverName };
    const subjects: Subject[] = [];
    try {
      // Without a client certificate the server refuses the connection: no request ever reaches it.
      if (ours) {
        subjects.push(await start({ ...xdsEnv(port, true), ...tls }));
        await new Promise((resolve) => setTimeout(resolve, 1000));
        expect(x.events.filter((e) => e.event === 'request')).toEqual([]);
      }
      const s = await start({ ...xdsEnv(port, true), ...tls, CONFIG_GRPC_XDS_CLIENT_TLS_CERT: pki.clientCert, CONFIG_GRPC_XDS_CLIENT_TLS_KEY: pki.clientKey });
      subjects.push(s);
      await x.waitFor(ack('1'), { timeoutMs: 20_000, what: 'the ACK over mutual TLS' });
      expect([await ask(s, 'k', 'tls'), await ask(s, 'k', 'tls'), await ask(s, 'k', 'tls')]).toEqual(['OK', 'OK', 'OVER_LIMIT']);
    } finally {
      for (const s of subjects) await s.stop();
      await x.close();
      pki.remove();
    }
  }, 60_000);

  it('applies a large set (hundreds of descriptors, validated in a worker thread here) and NACKs a large refused one with its location', async () => {
    const many = (n: number, bad: boolean): RateLimitConfigJson => ({
      name: 'big',
      domain: DOMAIN,
      descriptors: Array.from({ length: n }, (_, i) =>
        bad && i === n - 1 ? { key: `r${i}`, rateLimit: { requestsPerUnit: 1 } } : limit(`r${i}`, 1 + (i % 3)),
      ),
    });
    const port = await freePort();
    const x = await startXdsServer({ port, node: NODE, snapshot: { version: '1', resources: [many(400, false)] } });
    const s = await start(xdsEnv(port, true));
    try {
      await x.waitFor(ack('1'), { timeoutMs: 20_000, what: 'the ACK of the large set' });
      expect([await ask(s, 'r399', 'v'), await ask(s, 'r399', 'v'), await ask(s, 'r0', 'v'), await ask(s, 'r0', 'v')]).toEqual([
        'OK',
        'OVER_LIMIT',
        'OK',
        'OVER_LIMIT',
      ]);
      const mark = x.events.length;
      x.set('2', [many(400, true)]);
      const nack = await x.waitFor((e) => e.event === 'nack', { from: mark, what: 'the NACK of the large refused set' });
      if (ours) expect(nack.error).toMatch(/^xds:big:\d+:\d+: descriptors\[399\]\.rate_limit\.unit: missing rate limit unit/);
      expect(await ask(s, 'r1', 'v')).toBe('OK');
    } finally {
      await s.stop();
      await x.close();
    }
  }, 60_000);

  it('two replicas on one Redis, fed by the same server, share the limits of the set', async () => {
    redis ??= await startRedis();
    const port = await freePort();
    const x = await startXdsServer({ port, node: NODE, snapshot: { version: '1', resources: [A] } });
    const env = { ...xdsEnv(port, true), ...(ours ? { BACKEND: 'redis', REDIS_URL: redis.url } : {}) };
    const [r1, r2] = await Promise.all([start(env), start(env)]);
    try {
      await x.waitFor((e) => ack('1')(e) && e.stream === 1, { timeoutMs: 20_000, what: "the first replica's ACK" });
      await x.waitFor((e) => ack('1')(e) && e.stream === 2, { timeoutMs: 20_000, what: "the second replica's ACK" });
      expect([await ask(r1, 'k', 'shared'), await ask(r2, 'k', 'shared'), await ask(r1, 'k', 'shared'), await ask(r2, 'k', 'shared')]).toEqual([
        'OK',
        'OK',
        'OVER_LIMIT',
        'OVER_LIMIT',
      ]);
    } finally {
      await r1.stop();
      await r2.stop();
      await x.close();
    }
  }, 60_000);
});
