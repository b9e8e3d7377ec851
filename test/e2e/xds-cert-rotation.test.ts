/**
 * Certificates of the xDS connection rotated on disk (Envoy Gateway remounts its Secret): the service keeps its
 * connection while the files change, and the next connection (here: the xDS server restarted with a new CA, server
 * and client certificates) uses the files as they are then, without a restart of the service. The old client
 * certificate would be refused by the new server and the new server certificate would not verify with the old CA,
 * so the ACK after the restart proves all three files were read again.
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { freePort } from '../support/redis.js';
import { RlsTestClient } from '../support/rls-client.js';
import { makeTestPki, type TestPki } from '../support/tls.js';
import { startXdsServer, type XdsServer } from '../support/xds-server.js';
import { startOursOverXds, type XdsSubject } from '../support/xds-subjects.js';

const NODE = 'envoy-ratelimit';
const rules = (perHour: number) => ({ name: 'p', domain: 'rot', descriptors: [{ key: 'k', rateLimit: { unit: 'HOUR', requestsPerUnit: perHour } }] });

const dir = mkdtempSync(join(tmpdir(), 'xds-rot-'));
const file = (n: string) => join(dir, n);
const pkis: TestPki[] = [];
let server: XdsServer | undefined;
let subject: XdsSubject | undefined;
afterAll(async () => {
  await subject?.stop();
  await server?.close();
  for (const p of pkis) p.remove();
  rmSync(dir, { recursive: true, force: true });
});

/** Puts one PKI's files where both sides read them. */
function install(p: TestPki): void {
  for (const [from, to] of [
    [p.caCert, 'ca.crt'],
    [p.serverCert, 'server.crt'],
    [p.serverKey, 'server.key'],
    [p.clientCert, 'client.crt'],
    [p.clientKey, 'client.key'],
  ] as const) {
    copyFileSync(from, `${file(to)}.tmp`);
    copyFileSync(`${file(to)}.tmp`, file(to));
  }
}

it('reads the rotated CA, client certificate and key at the next connection, without a restart', async () => {
  pkis.push(await makeTestPki(), await makeTestPki());
  const [first, second] = pkis as [TestPki, TestPki];
  install(first);
  const port = await freePort();
  server = await startXdsServer({
    port,
    node: NODE,
    snapshot: { version: '1', resources: [rules(2)] },
    tls: { cert: file('server.crt'), key: file('server.key'), ca: file('ca.crt') },
  });
  subject = await startOursOverXds({
    CONFIG_TYPE: 'GRPC_XDS_SOTW',
    CONFIG_GRPC_XDS_SERVER_URL: `127.0.0.1:${port}`,
    CONFIG_GRPC_XDS_NODE_ID: NODE,
    FORCE_START_WITHOUT_INITIAL_CONFIG: 'true',
    CONFIG_GRPC_XDS_SERVER_USE_TLS: 'true',
    CONFIG_GRPC_XDS_SERVER_TLS_CACERT: file('ca.crt'),
    CONFIG_GRPC_XDS_SERVER_TLS_SAN: first.serverName,
    CONFIG_GRPC_XDS_CLIENT_TLS_CERT: file('client.crt'),
    CONFIG_GRPC_XDS_CLIENT_TLS_KEY: file('client.key'),
    XDS_CLIENT_BACKOFF_INITIAL_INTERVAL: '200ms',
    XDS_CLIENT_BACKOFF_MAX_INTERVAL: '1s',
  });
  const ack = (v: string) => (e: { event: string; version?: string; nonce?: string }) => e.event === 'request' && e.version === v && e.nonce !== '';
  await server.waitFor(ack('1'), { timeoutMs: 20_000, what: 'the ACK over the first certificates' });

  // Rotation: new files on disk, the server restarted with them, and a new set to prove the new connection.
  await server.stop();
  install(second);
  server.set('2', [rules(1)]);
  const mark = server.events.length;
  await server.restart();
  await server.waitFor(ack('2'), { from: mark, timeoutMs: 20_000, what: 'the ACK over the rotated certificates' }).catch((err: unknown) => {
    throw new Error(`${(err as Error).message}\n${subject!.log().slice(-3000)}`);
  });
  const client = new RlsTestClient(subject.grpcAddress);
  try {
    expect([(await client.ask('rot', [[['k', 'v']]], 1)).overall_code, (await client.ask('rot', [[['k', 'v']]], 1)).overall_code]).toEqual([
      'OK',
      'OVER_LIMIT',
    ]);
  } finally {
    client.close();
  }
}, 60_000);
