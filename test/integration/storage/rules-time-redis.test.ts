import { Cluster, Redis } from 'ioredis';
import { startRedisStore, type RedisShape } from '../../support/redis-stores.js';
import { describeRulesTime } from './rules-time-behaviour.js';

for (const shape of ['single', 'sentinel', 'cluster'] as const satisfies readonly RedisShape[]) {
  describeRulesTime(`Redis ${shape}`, async () => {
    const handle = await startRedisStore(shape);
    const client =
      shape === 'cluster'
        ? new Cluster([{ host: '127.0.0.1', port: handle.port }], { lazyConnect: false })
        : new Redis({ host: '127.0.0.1', port: handle.port }); // Sentinel: the master's port
    const masters = (): Redis[] => (client instanceof Cluster ? client.nodes('master') : [client]);
    return {
      store: handle.store,
      keys: async (prefix) => {
        const found: string[] = [];
        for (const node of masters()) {
          let cursor = '0';
          for (let i = 0; i < 1000; i++) {
            const [next, batch] = await node.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
            found.push(...batch);
            cursor = next;
            if (cursor === '0') break;
          }
        }
        return found;
      },
      pttl: (key) => client.pttl(key),
      stop: async () => {
        client.disconnect();
        await handle.stop();
      },
    };
  });
}
