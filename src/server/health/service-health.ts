/**
 * The one health model every surface reads (docs/redis.md, "Health and readiness"):
 *
 * - canAnswer():     this replica can answer: rules loaded, gRPC serving, not draining.
 *                    GET /healthcheck (the Kubernetes readiness probe).
 * - storeHealthy():  the counter store decides successfully right now (Redis: connected AND the last real
 *                    calls or the idle probe succeeded); storeProblem() says why not. Memory: always.
 *                    gRPC health "ratelimit.store", gauge ratelimit_store_ready.
 * - ready():         canAnswer() AND storeHealthy(), with a short reason when not. GET /readyz.
 * - rlsServing():    canAnswer() AND storeHealthy(): the answers are real decisions, not FAILURE_MODE's, in
 *                    every failure mode (an ACL user that may not run scripts must not look SERVING).
 *                    gRPC health "", "ratelimit", "envoy.service.ratelimit.v3.RateLimitService", for Envoy.
 *                    Not for Kubernetes readiness: with one shared Redis every replica would go NotReady.
 *
 * Server-layer code: it sees the store only through the functions it is given.
 */

export interface ServiceHealthOptions {
  /** Raw store state: healthy, and why not. */
  readonly store: () => { readonly healthy: boolean; readonly problem?: string | undefined };
  /** Rules are loaded (default: always, the service does not start without them). */
  readonly rulesLoaded?: () => boolean;
}

export interface Readiness {
  readonly ready: boolean;
  /** Why not, e.g. "store: WRONGPASS invalid username-password pair" or "draining". */
  readonly reason?: string;
}

export class ServiceHealth {
  private draining = false;
  private grpcServing = false;

  constructor(private readonly options: ServiceHealthOptions) {}

  /** The gRPC server is listening (true) or stopped (false). */
  setGrpcServing(serving: boolean): void {
    this.grpcServing = serving;
  }

  /** Graceful shutdown began: from now on nothing is ready or serving. */
  startDraining(): void {
    this.draining = true;
  }

  isDraining(): boolean {
    return this.draining;
  }

  canAnswer(): boolean {
    return this.whyCannotAnswer() === undefined;
  }

  storeHealthy(): boolean {
    return this.options.store().healthy;
  }

  storeProblem(): string | undefined {
    const s = this.options.store();
    return s.healthy ? undefined : (s.problem ?? 'unknown problem');
  }

  ready(): Readiness {
    const cannot = this.whyCannotAnswer();
    if (cannot !== undefined) return { ready: false, reason: cannot };
    const problem = this.storeProblem();
    return problem === undefined ? { ready: true } : { ready: false, reason: `store: ${problem}` };
  }

  rlsServing(): boolean {
    return this.canAnswer() && this.storeHealthy();
  }

  private whyCannotAnswer(): string | undefined {
    if (this.draining) return 'draining';
    if (!this.grpcServing) return 'gRPC server not serving';
    if (this.options.rulesLoaded && !this.options.rulesLoaded()) return 'rules not loaded';
    return undefined;
  }
}
