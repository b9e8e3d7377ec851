/**
 * Start phase, part of the servers': what the gRPC port serves beside RateLimitService and RLQS (ext_authz,
 * the capacity service with CAPACITY_CONFIG) and its TLS credentials. Each closes after the gRPC server has
 * answered its last call.
 */
import { setUpCapacity, type CapacityReport, type CapacitySetup } from '../capacity/capacity-setup.js';
import { componentLogger } from '../observability/log.js';
import type { ReloadingServerCredentials } from '../server/grpc/tls-credentials.js';
import { createRedisStore } from '../storage/redis/redis-store.js';
import { setUpExtAuthz, type ExtAuthzSetup } from './ext-authz-setup.js';
import { grpcCredentials } from './listeners.js';
import type { StartContext } from './start-context.js';
import type { StartedEngine } from './start-engine.js';
import type { StartedRules } from './start-rules.js';
import { redisOptions } from './store-factory.js';

export interface StartedServices {
  readonly extAuthz: ExtAuthzSetup;
  readonly capacity: CapacitySetup | undefined;
  readonly credentials: ReloadingServerCredentials | undefined;
}

export async function startServices(ctx: StartContext, rules: StartedRules, { limiter }: StartedEngine): Promise<StartedServices> {
  const { settings, clock, log, metrics, teardown } = ctx;
  const extAuthz = await setUpExtAuthz(settings, { limiter, config: () => rules.holder.config, metrics, log });
  teardown.defer('ext_authz', () => extAuthz.close());
  let capacity: CapacitySetup | undefined;
  if (settings.capacityConfig !== '') {
    // BACKEND=redis: the capacity leases get their own connection (closed with the capacity service).
    const capacityRedis = settings.backend === 'redis' ? createRedisStore(redisOptions(settings, clock, componentLogger(log, 'capacity'))) : undefined;
    teardown.defer('capacity Redis', () => capacityRedis?.close());
    const report: CapacityReport = {
      ...metrics.capacityReport(),
      watch: (stats) => metrics.watchCapacity(stats),
      watchRedis: (stats) => metrics.watchCapacityRedis(stats),
    };
    const started = await setUpCapacity(settings, {
      clock,
      log: componentLogger(log, 'capacity'),
      report,
      ...(capacityRedis === undefined ? {} : { redis: capacityRedis.connection }),
    });
    teardown.defer('capacity service', () => started.close());
    capacity = started;
  }
  const credentials = await grpcCredentials(settings, log);
  teardown.defer('gRPC TLS credentials', () => credentials?.close());
  return { extAuthz, capacity, credentials };
}
