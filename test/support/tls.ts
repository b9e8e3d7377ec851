/**
 * A throw-away certificate authority for TLS tests, made with the openssl CLI: a CA, a server certificate
 * for the DNS name `redis.test` only (so connecting to 127.0.0.1 verifies only with servername set), and a
 * client certificate for mutual TLS. Files live in a temp dir removed by `remove()`.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface TestPki {
  readonly dir: string;
  readonly caCert: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly clientCert: string;
  readonly clientKey: string;
  readonly serverName: string;
  remove(): void;
}

/** `clientSan`: the client certificate's subjectAltName (e.g. `DNS:envoy.example`); none by default. */
export async function makeTestPki(clientSan?: string): Promise<TestPki> {
  const dir = mkdtempSync(join(tmpdir(), 'rl-tls-'));
  const f = (name: string): string => join(dir, name);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await run('openssl', ['req', '-x509', ...ec, '-keyout', f('ca.key'), '-out', f('ca.crt'), '-days', '2', '-subj', '/CN=ratelimit test CA']);
  const sign = async (name: string, subject: string, extensions: string): Promise<void> => {
    writeFileSync(f(`${name}.ext`), extensions);
    await run('openssl', ['req', ...ec, '-keyout', f(`${name}.key`), '-out', f(`${name}.csr`), '-subj', subject]);
    await run('openssl', [
      'x509',
      '-req',
      '-in',
      f(`${name}.csr`),
      '-CA',
      f('ca.crt'),
      '-CAkey',
      f('ca.key'),
      '-CAcreateserial',
      '-out',
      f(`${name}.crt`),
      '-days',
      '2',
      '-extfile',
      f(`${name}.ext`),
    ]);
  };
  await sign('server', '/CN=redis.test', 'subjectAltName=DNS:redis.test\nextendedKeyUsage=serverAuth\n');
  await sign('client', '/CN=ratelimit', `${clientSan === undefined ? '' : `subjectAltName=${clientSan}\n`}extendedKeyUsage=clientAuth\n`);
  return {
    dir,
    caCert: f('ca.crt'),
    serverCert: f('server.crt'),
    serverKey: f('server.key'),
    clientCert: f('client.crt'),
    clientKey: f('client.key'),
    serverName: 'redis.test',
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
