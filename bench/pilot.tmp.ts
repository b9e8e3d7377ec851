import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeRequest } from '../test/support/raw-rls.js';
import { h2load } from '../bench/lib/h2load.js';
import { startNoop, startOurs, type Target } from '../bench/lib/servers.js';
const dir = mkdtempSync(join(tmpdir(), 'pilot-'));
writeFileSync(join(dir, 'b.yaml'), 'domain: bench\ndescriptors:\n  - key: user\n    rate_limit: {unit: second, requests_per_unit: 1000000000}\n');
const body = encodeRequest('bench', [{ entries: [['user', 'alice']] }]);
const targets: Target[] = [await startNoop(), await startOurs('lean', { CONFIG_DIR: dir, GRPC_TRANSPORT: 'lean' }), await startOurs('grpc-js', { CONFIG_DIR: dir, GRPC_TRANSPORT: 'grpc-js' })];
for (const t of targets) await h2load({ address: t.address, body, requests: 20000, clients: 8, streams: 16, dir });
for (let r = 0; r < 3; r++) for (const t of targets) {
  const x = await h2load({ address: t.address, body, requests: Number(process.argv[2] ?? 60000), clients: 8, streams: 16, dir });
  console.log(t.name, Math.round(x.rps), x.ok, x.sent, x.p50.toFixed(2), x.p99.toFixed(2));
}
for (const t of targets) await t.stop();
