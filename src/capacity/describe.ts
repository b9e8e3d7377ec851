/** What GET /capacity and the metrics show of the capacity service: resources, totals and (bounded) clients. */
import type { CapacityServer } from './capacity-server.js';

/** Most clients listed per resource by GET /capacity (the totals always cover all of them). */
export const MAX_LISTED_CLIENTS = 1000;

export function capacityStats(server: CapacityServer, nowMs: number): { resource: string; capacity: number; granted: number; wanted: number; clients: number; learning: boolean }[] {
  return [...server.list()].map((res) => ({
    resource: res.id,
    capacity: server.capacity(res),
    granted: res.store.sumHas,
    wanted: res.store.sumWants,
    clients: res.store.count,
    learning: server.learning(res, nowMs),
  }));
}

export function describeCapacity(server: CapacityServer, file: string, nowMs: number): unknown {
  server.cleanAll();
  return {
    file,
    resources: [...server.list()].map((res) => {
      const clients: unknown[] = [];
      res.store.forEach((client, lease) => {
        if (clients.length < MAX_LISTED_CLIENTS) {
          clients.push({ client, has: lease.has, wants: lease.wants, subclients: lease.subclients, priority: lease.priority, expiry_time: Math.floor(lease.expiryMs / 1000) });
        }
      });
      const t = res.template;
      return {
        resource_id: res.id,
        template: t.identifierGlob,
        algorithm: t.algorithm.kind,
        capacity: server.capacity(res),
        ...(t.safeCapacity === undefined ? {} : { safe_capacity: t.safeCapacity }),
        learning_mode: server.learning(res, nowMs),
        sum_has: res.store.sumHas,
        sum_wants: res.store.sumWants,
        count: res.store.count,
        leases: res.store.size,
        clients,
      };
    }),
  };
}
