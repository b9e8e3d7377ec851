/**
 * `ratelimit capacity [--server HOST:PORT] COMMAND...`: asks a capacity server (ours or Doorman) as Doorman's
 * shell does. Commands, several allowed in one call (`;`-separated arguments are not needed: each command takes
 * a fixed number of words):
 *   get CLIENT RESOURCE WANTS   ask for (or refresh) a lease and print it
 *   release CLIENT RESOURCE     give a lease back
 *   master                      print the master's address (Discovery)
 */
import * as grpc from '@grpc/grpc-js';
import { doormanDefinition } from '../capacity/doorman-messages.js';
import type * as M from '../capacity/doorman-messages.js';

export const CAPACITY_USAGE = `usage: ratelimit capacity [--server HOST:PORT] COMMAND...   (default server 127.0.0.1:8081)
  get CLIENT RESOURCE WANTS    ask for capacity (refreshes the lease of CLIENT) and print the grant
  release CLIENT RESOURCE      release the lease
  master                       print the master's address`;

type Write = { write(text: string): unknown };

export async function runCapacityCli(argv: readonly string[], out: Write, err: Write): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    out.write(`${CAPACITY_USAGE}\n`);
    return 0;
  }
  let server = '127.0.0.1:8081';
  const words: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--server') server = argv[++i] ?? '';
    else if (a.startsWith('--server=')) server = a.slice('--server='.length);
    else words.push(a);
  }
  if (words.length === 0 || server === '') {
    err.write(`${CAPACITY_USAGE}\n`);
    return 2;
  }
  const Ctor = (grpc.loadPackageDefinition(doormanDefinition()) as unknown as { doorman: { Capacity: grpc.ServiceClientConstructor } }).doorman.Capacity;
  const client = new Ctor(server, grpc.credentials.createInsecure());
  const call = <T>(method: string, request: unknown): Promise<T> =>
    new Promise((resolve, reject) => {
      const fn = client[method] as unknown as (r: unknown, o: grpc.CallOptions, cb: (e: grpc.ServiceError | null, v: unknown) => void) => void;
      fn.call(client, request, { deadline: Date.now() + 5000 }, (e, v) => (e ? reject(e) : resolve(v as T)));
    });
  try {
    for (let i = 0; i < words.length;) {
      const cmd = words[i++];
      if (cmd === 'get' && i + 3 <= words.length) {
        const [clientId, resource, wantsText] = words.slice(i, (i += 3)) as [string, string, string];
        const wants = Number(wantsText);
        if (!Number.isFinite(wants) || wants < 0) throw new Error(`wants must be a number ≥ 0, not '${wantsText}'`);
        const res = await call<M.GetCapacityResponse>('GetCapacity', { client_id: clientId, resource: [{ resource_id: resource, priority: 1, wants }] });
        if (res.response.length === 0) out.write(`${resource}: no answer (not the master; master: ${res.mastership?.master_address ?? 'unknown'})\n`);
        for (const r of res.response) {
          const safe = r.safe_capacity === undefined ? '' : `, safe capacity ${r.safe_capacity}`;
          out.write(
            `${clientId} ${r.resource_id}: capacity ${r.gets.capacity} until ${new Date(r.gets.expiry_time * 1000).toISOString()}, refresh every ${r.gets.refresh_interval}s${safe}\n`,
          );
        }
      } else if (cmd === 'release' && i + 2 <= words.length) {
        const [clientId, resource] = words.slice(i, (i += 2)) as [string, string];
        await call('ReleaseCapacity', { client_id: clientId, resource_id: [resource] });
        out.write(`${clientId} ${resource}: released\n`);
      } else if (cmd === 'master') {
        const res = await call<M.DiscoveryResponse>('Discovery', {});
        out.write(`master: ${res.mastership.master_address ?? '(unknown)'}${res.is_master ? ' (this server)' : ''}\n`);
      } else {
        err.write(`bad command at '${cmd ?? ''}'\n${CAPACITY_USAGE}\n`);
        return 2;
      }
    }
    return 0;
  } catch (e) {
    err.write(`capacity: ${e instanceof Error ? e.message : String(e)}\n`);
    return 1;
  } finally {
    client.close();
  }
}
