/**
 * What one oversized request costs the service: `ratelimit serve` in its own process (memory
 * backend), a probe client sending a small call every 5 ms, and one big ShouldRateLimit request (by default
 * ~4 MiB of 320k descriptors). Prints the big call's status and time, the probe's worst latency
 * while it was handled (how long the event loop froze), and the server's resident memory before and after.
 *
 *   npx tsx bench/big-request.ts [--descriptors 320000] [--env MAX_REQUEST_BYTES=8388608,MAX_REQUEST_DESCRIPTORS=1000000]
 *
 * --env passes extra settings to the service (e.g. raise the limits to see the cost without them).
 */
import * as grpc from '@grpc/grpc-js';
import { encodeRequest, RawRlsClient, RLS_PATH } from '../test/support/raw-rls.js';
import { startImage } from './lib/servers.js';
import { rulesFolder } from '../test/support/rules-folder.js';
import { benchArgs, envPairs } from './lib/args.js';

const args = benchArgs('bench/big-request.ts', { descriptors: 'string', env: 'string' });
const descriptors = args.num('descriptors', 320000);
const extraEnv = envPairs(args.str('env', '').split(','));

const rules = rulesFolder('rl-bench-');
const dir = rules.write({ 'x.yaml': 'domain: x\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 1000000000}\n' });
const service = await startImage({ CONFIG_DIR: dir, BACKEND: 'memory', ...extraEnv });
const probe = new RawRlsClient(service.grpcAddress);
const rssMiB = async () => {
  const text = await (await fetch(`http://${service.httpAddress}/metrics`)).text();
  return Number(/^ratelimit_process_resident_memory_bytes (\d+)/m.exec(text)?.[1] ?? NaN) / 2 ** 20;
};

try {
  for (let i = 0; i < 50; i++) await probe.call('x', [{ entries: [['user', 'warm']] }]);
  const before = await rssMiB();
  const big = encodeRequest(
    'x',
    Array.from({ length: descriptors }, (_, i) => ({ entries: [['user', `u${i % 1000}`]] as [string, string][] })),
  );
  let done = false;
  let worst = 0;
  const probing = (async () => {
    while (!done) {
      const started = performance.now();
      await probe.call('x', [{ entries: [['user', 'probe']] }], 0, 60_000);
      worst = Math.max(worst, performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  })();
  const c = new grpc.Client(service.grpcAddress, grpc.credentials.createInsecure());
  const started = performance.now();
  const status = await new Promise<string>((resolve) => {
    c.makeUnaryRequest(
      RLS_PATH,
      (b: Uint8Array) => Buffer.from(b),
      (b: Buffer) => b,
      big,
      new grpc.Metadata(),
      { deadline: Date.now() + 60_000 },
      (e) => resolve(e ? `${grpc.status[e.code]}: ${e.details}` : 'OK'),
    );
  });
  const took = performance.now() - started;
  await new Promise((resolve) => setTimeout(resolve, 200));
  done = true;
  await probing;
  c.close();
  const after = await rssMiB();
  console.log(`request of ${descriptors} descriptors, ${(big.length / 2 ** 20).toFixed(2)} MiB; env ${JSON.stringify(extraEnv)}`);
  console.log(`  answer: ${status.slice(0, 100)} after ${took.toFixed(0)} ms`);
  console.log(`  worst probe latency meanwhile: ${worst.toFixed(0)} ms; server RSS ${before.toFixed(0)} → ${after.toFixed(0)} MiB`);
} finally {
  probe.close();
  await service.stop();
  rules.remove();
}
