/**
 * grpc.health.v1.Health: Check, Watch and List. The overall service ("") and the names "ratelimit" and
 * "envoy.service.ratelimit.v3.RateLimitService" share one status, derived from `isServing()`; Watch
 * streams push a change as soon as refresh() sees one. Unknown names: Check → NOT_FOUND, Watch → SERVICE_UNKNOWN.
 */
import * as grpc from '@grpc/grpc-js';

type ServingStatus = 'SERVING' | 'NOT_SERVING' | 'SERVICE_UNKNOWN';

export const HEALTH_SERVICE_NAMES = ['', 'ratelimit', 'envoy.service.ratelimit.v3.RateLimitService'] as const;

export class HealthState {
  private current: 'SERVING' | 'NOT_SERVING';
  private readonly watchers = new Set<grpc.ServerWritableStream<{ service: string }, unknown>>();
  private shuttingDown = false;

  constructor(private readonly isServing: () => boolean) {
    this.current = isServing() ? 'SERVING' : 'NOT_SERVING';
  }

  status(): 'SERVING' | 'NOT_SERVING' {
    return this.current;
  }

  /** Re-reads isServing() and notifies watchers on a change. Call it periodically and on events. */
  refresh(): void {
    const next = !this.shuttingDown && this.isServing() ? 'SERVING' : 'NOT_SERVING';
    if (next === this.current) return;
    this.current = next;
    for (const w of this.watchers) w.write({ status: next });
  }

  /** From now on NOT_SERVING (graceful shutdown: let probes and Envoy health checks drain us). */
  shutdown(): void {
    this.shuttingDown = true;
    this.refresh();
    for (const w of this.watchers) w.end();
    this.watchers.clear();
  }

  private of(service: string): ServingStatus {
    return (HEALTH_SERVICE_NAMES as readonly string[]).includes(service) ? this.current : 'SERVICE_UNKNOWN';
  }

  handlers(): grpc.UntypedServiceImplementation {
    const check: grpc.handleUnaryCall<{ service: string }, unknown> = (call, callback) => {
      const s = this.of(call.request.service);
      if (s === 'SERVICE_UNKNOWN') callback({ code: grpc.status.NOT_FOUND, details: `unknown service '${call.request.service}'` });
      else callback(null, { status: s });
    };
    const watch: grpc.handleServerStreamingCall<{ service: string }, unknown> = (call) => {
      call.write({ status: this.of(call.request.service) });
      if (this.shuttingDown) {
        call.end();
        return;
      }
      // Unknown names stay SERVICE_UNKNOWN; known ones get every change.
      if (this.of(call.request.service) !== 'SERVICE_UNKNOWN') this.watchers.add(call);
      call.on('cancelled', () => this.watchers.delete(call));
      call.on('close', () => this.watchers.delete(call));
    };
    const list: grpc.handleUnaryCall<unknown, unknown> = (_call, callback) => {
      const statuses: Record<string, unknown> = {};
      for (const name of HEALTH_SERVICE_NAMES) statuses[name] = { status: this.current };
      callback(null, { statuses });
    };
    return { Check: check, Watch: watch, List: list };
  }
}
