/**
 * What GET /capacity and the metrics show of the capacity service: resources, totals and clients, bounded
 * (ids as text: ids.ts idText).
 */
import type { CapacityServer, Resource } from './capacity-server.js';
import { idText } from './ids.js';

/** Most clients listed per resource by GET /capacity (the totals always cover all of them). */
export const MAX_LISTED_CLIENTS = 1000;
/** Most resources listed by GET /capacity, and exported as metrics series; `resources_total` counts all. */
export const MAX_LISTED_RESOURCES = 1000;
/** Most clients listed by GET /capacity over all resources. */
export const MAX_LISTED_CLIENTS_TOTAL = 10_000;

function firstResources(server: CapacityServer): Resource[] {
  const out: Resource[] = [];
  for (const res of server.list()) {
    if (out.length >= MAX_LISTED_RESOURCES) break;
    out.push(res);
  }
  return out;
}

export function capacityStats(
  server: CapacityServer,
  nowMs: number,
): { resource: string; capacity: number; granted: number; wanted: number; clients: number; learning: boolean }[] {
  return firstResources(server).map((res) => ({
    resource: idText(res.id),
    capacity: server.capacity(res),
    granted: res.store.sumHas,
    wanted: res.store.sumWants,
    clients: res.store.count,
    learning: server.learning(res, nowMs),
  }));
}

export function describeCapacity(server: CapacityServer, file: string, nowMs: number): unknown {
  server.cleanAll();
  let listed = 0;
  return {
    file,
    resources_total: server.resourceCount,
    resources_listed_max: MAX_LISTED_RESOURCES,
    resources: firstResources(server).map((res) => {
      const clients: unknown[] = [];
      res.store.forEach((client, lease) => {
        if (clients.length < MAX_LISTED_CLIENTS && listed < MAX_LISTED_CLIENTS_TOTAL) {
          listed++;
          clients.push({
            client: idText(client),
            has: lease.has,
            wants: lease.wants,
            subclients: lease.subclients,
            priority: lease.priority,
            expiry_time: Math.floor(lease.expiryMs / 1000),
          });
        }
      });
      const t = res.template;
      return {
        resource_id: idText(res.id),
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
