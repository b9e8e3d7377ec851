/**
 * GRPC_HOST=unix:/path (Envoy's `pipe` address in a sidecar), or the reference's GRPC_UDS=/path: `ratelimit serve` listens on a Unix domain
 * socket with the GRPC_UNIX_SOCKET_MODE permissions, answers a grpc-js client dialing `unix:`, replaces a
 * stale socket file left by a killed process, and refuses to start over a live socket or a regular file.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { startService, StartupError } from '../../src/app/start-service.js';
import { createLogger } from '../../src/observability/log.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { loadSettings } from '../../src/settings/settings.js';
import { RlsTestClient } from '../support/rls-client.js';
import { spawnService } from '../support/service-process.js';
import { startTestService, testSettings } from '../support/service.js';

const RULES = { 'edge.yaml': 'domain: edge\ndescriptors:\n  - key: ip\n    rate_limit: {unit: minute, requests_per_unit: 2}\n' };
const root = mkdtempSync(join(tmpdir(), 'rl-uds-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The error a start on `grpcHost` fails with (the rules dir lives under root, so nothing is left behind). */
async function startError(grpcHost: string): Promise<unknown> {
  const configDir = mkdtempSync(join(root, 'rules-'));
  writeFileSync(join(configDir, 'edge.yaml'), RULES['edge.yaml']);
  const deps = { log: createLogger({ level: 'error', format: 'text', write: () => {} }), metrics: createMetrics({ defaultMetrics: false }) };
  return startService(testSettings({ configDir, grpcHost }), deps).then(
    (s) => s.close(),
    (e: unknown) => e,
  );
}

async function ask(address: string): Promise<string> {
  const client = new RlsTestClient(address);
  try {
    return (await client.ask('edge', [[['ip', 'x']]], 1)).overall_code;
  } finally {
    client.close();
  }
}

describe('gRPC on a Unix domain socket', () => {
  it("GRPC_UDS (envoyproxy/ratelimit's name) listens on that socket instead of GRPC_HOST:GRPC_PORT, as the reference does", async () => {
    const sock = join(root, 'reference.sock');
    const dir = mkdtempSync(join(root, 'r-'));
    writeFileSync(join(dir, 'edge.yaml'), RULES['edge.yaml']);
    // spawnService sets GRPC_HOST=127.0.0.1 and GRPC_PORT=0, as a reference deployment may set them beside GRPC_UDS
    const svc = await spawnService({ CONFIG_DIR: dir, GRPC_UDS: sock });
    try {
      expect(svc.grpcAddress).toBe(`unix:${sock}`);
      expect(statSync(sock).isSocket()).toBe(true);
      expect(await ask(`unix:${sock}`)).toBe('OK');
    } finally {
      await svc.stop();
    }
  });

  it('ratelimit serve listens on unix:/path with mode 660 by default and removes the socket on exit', async () => {
    const sock = join(root, 'rls.sock');
    const dir = mkdtempSync(join(root, 'r-'));
    writeFileSync(join(dir, 'edge.yaml'), RULES['edge.yaml']);
    const svc = await spawnService({ CONFIG_DIR: dir, GRPC_HOST: `unix:${sock}` });
    try {
      expect(svc.grpcAddress).toBe(`unix:${sock}`);
      expect(statSync(sock).isSocket()).toBe(true);
      expect(statSync(sock).mode & 0o777).toBe(0o660);
      expect(await ask(`unix:${sock}`)).toBe('OK');
    } finally {
      await svc.stop();
    }
    expect(existsSync(sock)).toBe(false);
  });

  it('applies GRPC_UNIX_SOCKET_MODE', async () => {
    const sock = join(root, 'mode.sock');
    const t = await startTestService(RULES, { grpcHost: `unix:${sock}`, grpcUnixSocketMode: '600' });
    try {
      expect(statSync(sock).mode & 0o777).toBe(0o600);
      expect(t.service.grpcAddress).toBe(`unix:${sock}`);
      expect(await ask(t.service.grpcAddress)).toBe('OK');
    } finally {
      await t.close();
    }
  });

  it('reads GRPC_UNIX_SOCKET_MODE as octal and rejects anything else', () => {
    expect(loadSettings({ GRPC_UNIX_SOCKET_MODE: '0640' }).settings.grpcUnixSocketMode).toBe('640');
    expect(() => loadSettings({ GRPC_UNIX_SOCKET_MODE: '999' })).toThrow("GRPC_UNIX_SOCKET_MODE: '999' is not an octal file mode such as 660");
  });

  it('replaces a stale socket file left by a killed process', async () => {
    const sock = join(root, 'stale.sock');
    // A process that binds the socket and dies by SIGKILL leaves the file behind.
    await promisify(execFile)(process.execPath, [
      '-e',
      `require('node:net').createServer().listen(${JSON.stringify(sock)}, () => process.kill(process.pid, 'SIGKILL'))`,
    ]).catch(() => undefined);
    expect(statSync(sock).isSocket()).toBe(true);
    const t = await startTestService(RULES, { grpcHost: `unix:${sock}` });
    try {
      expect(await ask(`unix:${sock}`)).toBe('OK');
    } finally {
      await t.close();
    }
  });

  it('refuses to take over a socket another process is listening on', async () => {
    const sock = join(root, 'live.sock');
    const other = createServer();
    await new Promise<void>((resolve) => other.listen(sock, resolve));
    try {
      const err = await startError(`unix:${sock}`);
      expect(err).toBeInstanceOf(StartupError);
      expect((err as Error).message).toBe(`cannot listen for gRPC on unix:${sock}: another process is listening on ${sock}`);
    } finally {
      await new Promise((resolve) => other.close(resolve));
    }
  });

  it('refuses to replace a file that is not a socket', async () => {
    const path = join(root, 'regular');
    writeFileSync(path, 'keep me\n');
    const err = await startError(`unix:${path}`);
    expect((err as Error).message).toBe(`cannot listen for gRPC on unix:${path}: ${path} exists and is not a socket; refusing to replace it`);
    expect(existsSync(path)).toBe(true);
  });
});
