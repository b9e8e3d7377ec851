/**
 * The service's graceful stop: NOT_SERVING at once while calls are still answered for SHUTDOWN_DRAIN_MS
 * (Envoy and Kubernetes notice and stop sending); then `endServing` (rule changes no longer taken, new calls
 * refused, in-flight ones finished within SHUTDOWN_GRACE_MS); then the rest of the teardown, newest first.
 * `{ now: true }` (a second signal) cuts a drain in progress short.
 */
import type { Logger } from '../observability/log.js';
import type { HealthState } from '../server/health/grpc-health.js';
import type { ServiceHealth } from '../server/health/service-health.js';
import type { Settings } from '../settings/settings.js';
import type { Teardown } from './teardown.js';

export interface ShutdownParts {
  readonly settings: Settings;
  readonly log: Logger;
  readonly model: ServiceHealth;
  readonly health: HealthState;
  readonly teardown: Teardown;
}

/** Returns the service's close(): calling it again returns the same promise. */
export function shutdown({ settings, log, model, health, teardown }: ShutdownParts): (options?: { now?: boolean }) => Promise<void> {
  let closing: Promise<void> | undefined;
  let endDrain: (() => void) | undefined;
  const drain = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      endDrain = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  return (options = {}) => {
    if (options.now === true) endDrain?.();
    return (closing ??= (async () => {
      model.startDraining();
      health.shutdown();
      const drainMs = options.now === true ? 0 : settings.shutdownDrainMs;
      log.info('shutting down: NOT_SERVING, still answering during the drain', { drainMs, graceMs: settings.shutdownGraceMs });
      if (drainMs > 0) await drain(drainMs);
      await teardown.close();
      log.info('ratelimit-sidecar stopped');
    })());
  };
}
