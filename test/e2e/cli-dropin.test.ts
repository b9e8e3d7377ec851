/** `ratelimit --version`, `serve --help`, `query --json`, and refusing contradictory settings (child processes). */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SETTINGS, flagName } from '../../src/settings/settings.js';
import { startTestService, type TestService } from '../support/service.js';

const BIN = join(import.meta.dirname, '../../bin/ratelimit.mjs');
const ROOT = join(import.meta.dirname, '../..');

function run(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, timeout: 20_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

let t: TestService;
beforeAll(async () => {
  t = await startTestService(
    {
      'edge.yaml': 'domain: edge\ndescriptors:\n  - key: ip\n    rate_limit: {unit: minute, requests_per_unit: 1, name: per-ip}\n',
      'quota.yaml': 'domain: quota\ndescriptors:\n  - key: user\n    quota_mode: true\n    rate_limit: {unit: minute, requests_per_unit: 5}\n',
    },
    { responseDynamicMetadata: true },
  );
});
afterAll(() => t.close());

describe('ratelimit CLI', () => {
  it('--version prints the package version', async () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const r = await run(['--version']);
    expect(r).toMatchObject({ code: 0, stdout: `ratelimit-sidecar ${version}\n` });
  });

  it('serve --help lists every setting with its env var and flag, and starts nothing', async () => {
    const r = await run(['serve', '--help']);
    expect(r.code).toBe(0);
    for (const s of Object.values(SETTINGS)) expect(r.stdout).toContain(`${s.env} / ${flagName(s.env)}`);
  });

  it('query --json prints the response as clean JSON (proto3 mapping with the proto field names: no Buffers, nulls or defaults)', async () => {
    const first = await run(['query', '--json', '--spend', '--server', t.grpcAddress, '--domain', 'edge', 'ip=1.2.3.4']);
    expect(first.code).toBe(0);
    const json = JSON.parse(first.stdout) as { statuses: { duration_until_reset: string }[]; response_headers_to_add: { key: string; value: string }[] };
    const reset = json.statuses[0]!.duration_until_reset;
    expect(reset).toMatch(/^\d+s$/);
    expect(json).toEqual({
      overall_code: 'OK',
      statuses: [{ code: 'OK', current_limit: { name: 'per-ip', requests_per_unit: 1, unit: 'MINUTE' }, duration_until_reset: reset }],
      response_headers_to_add: [
        { key: 'ratelimit-policy', value: '"per-ip";q=1;w=60' },
        { key: 'ratelimit', value: `"per-ip";r=0;t=${reset.slice(0, -1)}` },
      ],
      dynamic_metadata: { domain: 'edge', descriptors: [{ entries: ['ip=1.2.3.4'] }] },
    });
    const second = await run(['query', '--json', '--spend', '--server', t.grpcAddress, '--domain', 'edge', 'ip=1.2.3.4']);
    expect(second.code).toBe(3);
    expect(JSON.parse(second.stdout)).toMatchObject({ overall_code: 'OVER_LIMIT', statuses: [{ code: 'OVER_LIMIT' }] });
  });

  it('query --json prints dynamic_metadata (a google.protobuf.Struct) with its values, not nulls', async () => {
    // RESPONSE_DYNAMIC_METADATA=true (this service): the request as the reference sends it, plus the quota fields.
    const r = await run(['query', '--json', '--spend', '--server', t.grpcAddress, '--domain', 'quota', 'user=ann']);
    expect(r.code).toBe(0);
    expect((JSON.parse(r.stdout) as { dynamic_metadata: unknown }).dynamic_metadata).toEqual({
      domain: 'quota',
      descriptors: [{ entries: ['user=ann'] }],
      quotaModeEnabled: true,
      quotaModeViolations: [],
    });
    const over = await run(['query', '--json', '--spend', '--hits', '6', '--server', t.grpcAddress, '--domain', 'quota', 'user=bob']);
    expect(over.code).toBe(3);
    expect((JSON.parse(over.stdout) as { dynamic_metadata: unknown }).dynamic_metadata).toMatchObject({ hitsAddend: 6, quotaModeViolations: [0] });
  });

  it('serve refuses a reference setting that contradicts ours, naming both', async () => {
    const r = await run(['serve'], { PORT: '18080', HTTP_PORT: '18090' });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("PORT (envoyproxy/ratelimit) means HTTP_PORT=18080, but HTTP_PORT is '18090': set only one of them");
  });

  it('serve refuses memcache without its servers, saying what to set', async () => {
    const r = await run(['serve'], { BACKEND_TYPE: 'memcache', GRPC_PORT: '0', HTTP_PORT: '0' });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('BACKEND=memcached needs MEMCACHE_HOST_PORT (host:port,...) or MEMCACHE_SRV (_service._proto.name)');
  });
});

describe('ratelimit check with the reference runtime settings', () => {
  it('checks RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/config, every non-dot file', async () => {
    const root = mkdtempSync(join(tmpdir(), 'rl-check-'));
    mkdirSync(join(root, 'ratelimit/config'), { recursive: true });
    writeFileSync(join(root, 'ratelimit/config/rules'), 'domain: rl\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n');
    try {
      const r = await run(['check'], { RUNTIME_ROOT: root, RUNTIME_SUBDIRECTORY: 'ratelimit' });
      expect(r.code).toBe(0);
      expect(r.stdout).toBe(`${join(root, 'ratelimit/config')}: OK — 1 file(s), 1 domain(s): rl\n`);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
