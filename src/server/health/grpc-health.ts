/**
 * grpc.health.v1.Health: Check, Watch and List. The overall service ("") and the names "ratelimit" and
 * "envoy.service.ratelimit.v3.RateLimitService" share one status, derived from `isServing()`; further names
 * (e.g. "ratelimit.store", the raw store state) each follow their own function. Watch streams push a change
 * as soon as refresh() sees one. Unknown names: Check → NOT_FOUND, Watch → SERVICE_UNKNOWN.
 */
import { Code, GrpcStatusError } from '../grpc/lean/grpc-wire.js';

export type Status = 'SERVING' | 'NOT_SERVING';
export type ServingStatus = Status | 'SERVICE_UNKNOWN';

/** A Watch call's sending half (the lean route's sink, lean/health-routes.ts). */
export interface HealthWatcher {
  write(message: { status: ServingStatus }): unknown;
  end(): unknown;
}

export const HEALTH_SERVICE_NAMES = ['', 'ratelimit', 'envoy.service.ratelimit.v3.RateLimitService'] as const;
/** The raw counter-store state (connected and deciding), whatever FAILURE_MODE answers meanwhile. */
export const STORE_HEALTH_SERVICE = 'ratelimit.store';

export class HealthState {
  private readonly sources = new Map<string, () => boolean>();
  private readonly current = new Map<string, Status>();
  private readonly watchers = new Map<HealthWatcher, string>();
  private shuttingDown = false;
  /** Watch calls open now, and the most allowed (GRPC_MAX_WATCH_STREAMS): each holds a stream and its buffers. */
  private openWatches = 0;
  private maxWatches = Number.POSITIVE_INFINITY;
  private onWatchRefused: (() => void) | undefined;
  /** Re-reads the sources while a Watch call is open (and only then: nothing ticks at rest). */
  private poll: NodeJS.Timeout | undefined;

  /**
   * `others`: further service names, each with its own status function. Check, List and status() read the
   * sources when asked; Watch calls are told of a change within `watchPollMs`.
   */
  constructor(
    isServing: () => boolean,
    others: Readonly<Record<string, () => boolean>> = {},
    private readonly watchPollMs = 500,
  ) {
    for (const name of HEALTH_SERVICE_NAMES) this.sources.set(name, isServing);
    for (const [name, fn] of Object.entries(others)) this.sources.set(name, fn);
    for (const [name, fn] of this.sources) this.current.set(name, fn() ? 'SERVING' : 'NOT_SERVING');
  }

  /** At most `max` Watch calls at once; one more is answered RESOURCE_EXHAUSTED (and `onRefused` told). */
  limitWatches(max: number, onRefused?: () => void): void {
    this.maxWatches = max;
    this.onWatchRefused = onRefused;
  }

  /** Watch calls open now. */
  get watches(): number {
    return this.openWatches;
  }

  /** Status of the overall service (""). */
  status(): Status {
    this.refresh();
    return this.current.get('')!;
  }

  /** Re-reads every status function and notifies watchers on a change. Call it on events. */
  refresh(): void {
    for (const [name, fn] of this.sources) {
      const next: Status = !this.shuttingDown && fn() ? 'SERVING' : 'NOT_SERVING';
      if (next === this.current.get(name)) continue;
      this.current.set(name, next);
      for (const [w, watched] of this.watchers) if (watched === name) w.write({ status: next });
    }
  }

  /** From now on NOT_SERVING (graceful shutdown: let probes and Envoy health checks drain us). */
  shutdown(): void {
    this.shuttingDown = true;
    this.refresh();
    for (const w of this.watchers.keys()) w.end();
    this.watchers.clear();
    this.pollWhileWatched();
  }

  /** The status Check answers for `service`. */
  of(service: string): ServingStatus {
    this.refresh();
    return this.current.get(service) ?? 'SERVICE_UNKNOWN';
  }

  /** Every known name with its status (List). */
  entries(): [string, Status][] {
    this.refresh();
    return [...this.current];
  }

  /**
   * Watch: writes the current status, then every change of a known name until shutdown (which ends the
   * watcher) or the returned function is called.
   */
  watch(service: string, w: HealthWatcher): () => void {
    if (this.openWatches >= this.maxWatches) {
      this.onWatchRefused?.();
      throw new GrpcStatusError(Code.RESOURCE_EXHAUSTED, `too many Watch calls open (GRPC_MAX_WATCH_STREAMS=${this.maxWatches})`);
    }
    this.openWatches++;
    let open = true;
    const close = () => {
      if (open) this.openWatches--;
      open = false;
    };
    w.write({ status: this.of(service) });
    if (this.shuttingDown) {
      close();
      w.end();
      return () => undefined;
    }
    if (this.of(service) !== 'SERVICE_UNKNOWN') this.watchers.set(w, service);
    this.pollWhileWatched();
    return () => {
      close();
      this.watchers.delete(w);
      this.pollWhileWatched();
    };
  }

  /** The poll runs while (and only while) a watcher is registered. */
  private pollWhileWatched(): void {
    if (this.watchers.size > 0 && this.poll === undefined) {
      this.poll = setInterval(() => this.refresh(), this.watchPollMs);
      this.poll.unref();
    } else if (this.watchers.size === 0 && this.poll !== undefined) {
      clearInterval(this.poll);
      this.poll = undefined;
    }
  }
}
