/**
 * gRPC TLS and mutual TLS (GRPC_TLS_CERT, GRPC_TLS_KEY, GRPC_TLS_CLIENT_CA) over real sockets with throw-away
 * CAs: TLS works, plaintext and untrusting clients are refused, mutual TLS refuses clients without a (good)
 * certificate, a certificate rotated as Kubernetes rotates a Secret (a `..data` symlink swap) is served
 * without a restart, a broken rotation keeps the last good certificate, and bad files stop the start with
 * a message naming the setting and the file.
 */
import * as grpc from '@grpc/grpc-js';
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/vocab/clock.js';
import { createLogger } from '../../src/observability/log.js';
import { startService, StartupError, type RunningService } from '../../src/app/start-service.js';
import { createMetrics } from '../../src/observability/metrics.js';
import type { Settings } from '../../src/settings/settings.js';
import { eventually } from '../support/eventually.js';
import { RlsTestClient } from '../support/rls-client.js';
import { testSettings } from '../support/service.js';
import { makeTestPki, type TestPki } from '../support/tls.js';

const root = mkdtempSync(join(tmpdir(), 'rl-grpc-tls-'));
const rulesDir = join(root, 'rules');
mkdirSync(rulesDir);
writeFileSync(join(rulesDir, 'edge.yaml'), 'domain: edge\ndescriptors:\n  - key: ip\n    rate_limit: {unit: minute, requests_per_unit: 1000}\n');

let a: TestPki;
let b: TestPki;
beforeAll(async () => {
  [a, b] = await Promise.all([makeTestPki(), makeTestPki()]);
});
afterAll(() => {
  a?.remove();
  b?.remove();
  rmSync(root, { recursive: true, force: true });
});

async function start(overrides: Partial<Settings>, logs: string[] = []): Promise<RunningService> {
  return startService(testSettings({ configDir: rulesDir, ...overrides }), {
    clock: new FakeClock(),
    log: createLogger({ level: 'info', format: 'json', write: (line) => logs.push(line) }),
    metrics: createMetrics({ defaultMetrics: false }),
  });
}

/** One call on a fresh channel: 'OK', or the gRPC status name it failed with. */
async function outcome(address: string, credentials: grpc.ChannelCredentials): Promise<string> {
  // The test certificates name `redis.test`; we dial 127.0.0.1.
  const client = new RlsTestClient(address, credentials, { 'grpc.ssl_target_name_override': 'redis.test', 'grpc.default_authority': 'redis.test' });
  try {
    return (await client.shouldRateLimit({ domain: 'edge', descriptors: [{ entries: [{ key: 'ip', value: 'x' }] }] }, 3000)).overall_code;
  } catch (err) {
    return grpc.status[(err as grpc.ServiceError).code] ?? 'ERROR';
  } finally {
    client.close();
  }
}

const trusting = (pki: TestPki, clientCertOf?: TestPki) =>
  grpc.credentials.createSsl(
    readFileSync(pki.caCert),
    clientCertOf ? readFileSync(clientCertOf.clientKey) : null,
    clientCertOf ? readFileSync(clientCertOf.clientCert) : null,
  );

describe('gRPC TLS', () => {
  it('serves TLS and refuses plaintext clients and clients that do not trust the CA', async () => {
    const s = await start({ grpcTlsCert: a.serverCert, grpcTlsKey: a.serverKey });
    try {
      const address = `127.0.0.1:${s.grpcPort}`;
      expect(await outcome(address, trusting(a))).toBe('OK');
      expect(await outcome(address, grpc.credentials.createInsecure())).toBe('UNAVAILABLE');
      expect(await outcome(address, trusting(b))).toBe('UNAVAILABLE');
    } finally {
      await s.close();
    }
  });

  it('with GRPC_TLS_CLIENT_CA requires a client certificate from that CA', async () => {
    const s = await start({ grpcTlsCert: a.serverCert, grpcTlsKey: a.serverKey, grpcTlsClientCa: a.caCert });
    try {
      const address = `127.0.0.1:${s.grpcPort}`;
      expect(await outcome(address, trusting(a, a))).toBe('OK');
      expect(await outcome(address, trusting(a))).toBe('UNAVAILABLE');
      expect(await outcome(address, trusting(a, b))).toBe('UNAVAILABLE');
    } finally {
      await s.close();
    }
  });

  it('serves a certificate rotated by a Kubernetes-style ..data swap without a restart; a broken rotation keeps the last good one', async () => {
    // <dir>/tls.crt -> ..data/tls.crt, ..data -> ..v1 (what the kubelet builds for a Secret volume)
    const dir = join(root, 'secret');
    const version = (name: string, pki: TestPki, key = pki.serverKey) => {
      mkdirSync(join(dir, name));
      copyFileSync(pki.serverCert, join(dir, name, 'tls.crt'));
      copyFileSync(key, join(dir, name, 'tls.key'));
      symlinkSync(name, join(dir, '..data_tmp'));
      renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
    };
    mkdirSync(dir);
    version('..v1', a);
    symlinkSync('..data/tls.crt', join(dir, 'tls.crt'));
    symlinkSync('..data/tls.key', join(dir, 'tls.key'));

    const logs: string[] = [];
    const s = await start({ grpcTlsCert: join(dir, 'tls.crt'), grpcTlsKey: join(dir, 'tls.key') }, logs);
    try {
      const address = `127.0.0.1:${s.grpcPort}`;
      expect(await outcome(address, trusting(a))).toBe('OK');
      expect(await outcome(address, trusting(b))).toBe('UNAVAILABLE');

      version('..v2', b, a.serverKey); // B's certificate with A's key: unusable
      await eventually(() => logs.some((l) => l.includes('gRPC TLS files not reloaded')), { what: 'the broken rotation to be reported' });
      expect(logs.find((l) => l.includes('gRPC TLS files not reloaded'))).toContain(
        `GRPC_TLS_KEY ${join(dir, 'tls.key')} does not match the certificate in GRPC_TLS_CERT`,
      );
      expect(await outcome(address, trusting(a))).toBe('OK');

      version('..v3', b);
      await eventually(async () => (await outcome(address, trusting(b))) === 'OK', { timeoutMs: 10_000, what: 'the rotated certificate to be served' });
      expect(await outcome(address, trusting(a))).toBe('UNAVAILABLE');
      expect(logs.some((l) => l.includes('gRPC TLS certificate reloaded'))).toBe(true);
    } finally {
      await s.close();
    }
  });
});

describe('gRPC TLS start errors name the setting and the file', () => {
  const garbage = join(root, 'garbage.pem');
  writeFileSync(garbage, 'not a certificate\n');
  const cases: [string, () => Partial<Settings>, () => string][] = [
    ['a certificate without a key', () => ({ grpcTlsCert: a.serverCert }), () => 'gRPC TLS needs both GRPC_TLS_CERT and GRPC_TLS_KEY'],
    ['a client CA without a certificate', () => ({ grpcTlsClientCa: a.caCert }), () => 'gRPC TLS needs both GRPC_TLS_CERT and GRPC_TLS_KEY'],
    [
      'a missing certificate file',
      () => ({ grpcTlsCert: join(root, 'nope.crt'), grpcTlsKey: a.serverKey }),
      () => `GRPC_TLS_CERT ${join(root, 'nope.crt')}: cannot read: ENOENT`,
    ],
    ['an unreadable key (a directory)', () => ({ grpcTlsCert: a.serverCert, grpcTlsKey: root }), () => `GRPC_TLS_KEY ${root}: cannot read: EISDIR`],
    [
      'a key that does not match',
      () => ({ grpcTlsCert: a.serverCert, grpcTlsKey: b.serverKey }),
      () => `GRPC_TLS_KEY ${b.serverKey} does not match the certificate in GRPC_TLS_CERT ${a.serverCert}`,
    ],
    [
      'a certificate given as the key',
      () => ({ grpcTlsCert: a.serverCert, grpcTlsKey: a.serverCert }),
      () => `GRPC_TLS_KEY ${a.serverCert}: not a PEM private key`,
    ],
    [
      'a client CA that is not PEM',
      () => ({ grpcTlsCert: a.serverCert, grpcTlsKey: a.serverKey, grpcTlsClientCa: garbage }),
      () => `GRPC_TLS_CLIENT_CA ${garbage}: not a PEM file`,
    ],
  ];
  it.each(cases)('%s', async (_what, settings, message) => {
    const err = await start(settings()).then(
      async (s) => {
        await s.close();
        return undefined;
      },
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StartupError);
    expect((err as Error).message).toContain(message());
    expect((err as Error).message).not.toContain('PRIVATE KEY');
  });
});
