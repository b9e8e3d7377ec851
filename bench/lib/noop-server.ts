/**
 * The baseline of the throughput ratios: a RateLimitService on grpc-js that decides nothing, with
 * proto-loader's usual object conversion (what any grpc-js service pays), answering OK with one OK status
 * per descriptor. Run as its own process; prints `listening <port>` on stdout.
 *
 *   npx tsx bench/lib/noop-server.ts [port]
 */
import * as grpc from '@grpc/grpc-js';
import { loadProtos } from '../../src/server/grpc/protos.js';

const server = new grpc.Server({ 'grpc.max_concurrent_streams': 10_000 });
server.addService(loadProtos().rls, {
  ShouldRateLimit: (call: grpc.ServerUnaryCall<{ descriptors: unknown[] }, unknown>, callback: grpc.sendUnaryData<unknown>) => {
    callback(null, { overall_code: 'OK', statuses: call.request.descriptors.map(() => ({ code: 'OK' })) });
  },
});
server.bindAsync(`127.0.0.1:${process.argv[2] ?? '0'}`, grpc.ServerCredentials.createInsecure(), (err, port) => {
  if (err) throw err;
  process.stdout.write(`listening ${port}\n`);
});
process.on('SIGTERM', () => server.forceShutdown());
