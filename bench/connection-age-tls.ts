/**
 * What connection aging costs a TLS connection: the service over TLS with GRPC_MAX_CONNECTION_AGE at its default
 * (24h: each TLS connection's HTTP/2 session reads and writes through a JavaScript passage, so that the first
 * GOAWAY can be written between two of nghttp2's writes) against GRPC_MAX_CONNECTION_AGE=0 (the session on the
 * TLS socket directly). h2load over TLS, the two servers alternating round by round; server CPU per call from /proc.
 *
 *   npx tsx bench/connection-age-tls.ts [--rounds 5] [--requests 100000] [--connections 4] [--streams 32]
 *
 * Bounded: a fixed number of calls per round, to 127.0.0.1 only. Compare the two rows of one run.
 */
import { encodeRequest } from '../test/support/raw-rls.js';
import { rulesFolder } from '../test/support/rules-folder.js';
import { makeTestPki } from '../test/support/tls.js';
import { benchArgs } from './lib/args.js';
import { h2load } from './lib/h2load.js';
import { treeCpuSeconds } from './lib/proc-cpu.js';
import { startImage } from './lib/servers.js';

const args = benchArgs('bench/connection-age-tls.ts', { rounds: 'string', requests: 'string', connections: 'string', streams: 'string' });
const ROUNDS = args.num('rounds', 5);
const REQUESTS = args.num('requests', 100_000);
const CONNECTIONS = args.num('connections', 4);
const STREAMS = args.num('streams', 32);

const rules = rulesFolder('rl-bench-age-');
const dir = rules.write({ 'bench.yaml': 'domain: bench\ndescriptors:\n  - key: user\n    rate_limit: {unit: second, requests_per_unit: 1000000000}\n' });
const pki = await makeTestPki();
const body = encodeRequest('bench', [{ entries: [['user', 'alice']] }]);
const tls = { GRPC_TLS_CERT: pki.serverCert, GRPC_TLS_KEY: pki.serverKey };
const variants = [
  { name: 'TLS, GRPC_MAX_CONNECTION_AGE=24h (default)', env: { ...tls } },
  { name: 'TLS, GRPC_MAX_CONNECTION_AGE=0', env: { ...tls, GRPC_MAX_CONNECTION_AGE: '0' } },
];
const servers = await Promise.all(variants.map((v) => startImage({ CONFIG_DIR: dir, ...v.env })));
const cpu = variants.map(() => [] as number[]);
const rps = variants.map(() => [] as number[]);
try {
  for (const s of servers) await h2load({ address: s.grpcAddress, body, requests: 5000, clients: CONNECTIONS, streams: STREAMS, dir, tls: true });
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, s] of servers.entries()) {
      const before = treeCpuSeconds(s.child.pid);
      const r = await h2load({ address: s.grpcAddress, body, requests: REQUESTS, clients: CONNECTIONS, streams: STREAMS, dir, tls: true });
      if (r.ok !== r.sent) throw new Error(`${variants[i]!.name}: ${r.sent - r.ok} of ${r.sent} calls not answered 200`);
      cpu[i]!.push(((treeCpuSeconds(s.child.pid) - before) * 1e6) / r.ok);
      rps[i]!.push(r.rps);
    }
  }
} finally {
  await Promise.all(servers.map((s) => s.stop()));
  rules.remove();
  pki.remove();
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`connection aging over TLS: ${ROUNDS} rounds of ${REQUESTS} calls, ${CONNECTIONS} connections x ${STREAMS} streams, alternating`);
console.log('variant | server CPU per call, µs (median) | calls/s (median) | CPU per round');
for (const [i, v] of variants.entries())
  console.log(`${v.name} | ${median(cpu[i]!).toFixed(1)} | ${median(rps[i]!).toFixed(0)} | ${cpu[i]!.map((c) => c.toFixed(1)).join(' ')}`);
console.log(`ratio (default / 0): ${(median(cpu[0]!) / median(cpu[1]!)).toFixed(3)}`);
