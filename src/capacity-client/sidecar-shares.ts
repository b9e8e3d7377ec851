/**
 * The sidecar as a capacity client (docs/capacity-client.md): one capacity resource per resource named by the
 * rules' `capacity:` limits, wants set from the replica's observed demand before each refresh, and the granted
 * share read by the decision engine on every request (it implements core's CapacityShares by shape; the client
 * library imports nothing from the server side).
 *
 * Wants, per resource, in requests per the rule's window: the hits asked for since the last refresh, as a rate
 * over the time elapsed, raised by the headroom, at least min_wants and at most the ceiling (requests_per_unit).
 * A replica starts by asking for its ceiling (nothing observed yet) and settles after one refresh interval.
 * Without a server (no CAPACITY_SERVER), each resource keeps its fallback: pessimistic 0, optimistic its wants,
 * safe 0 (no safe capacity was ever sent).
 */
import { CapacityClient, type CapacityClientOptions } from './client.js';
import { Resource, type FallbackMode } from './resource.js';
import type { ClientTime } from './time.js';
import { systemTime } from './time.js';

/** One resource as the rules ask for it (the fields of core's CapacityRuleSpec, plus the limit's ceiling and window). */
export interface ShareSpec {
  readonly resource: string;
  readonly fallback: FallbackMode;
  readonly wants: 'observed' | number;
  readonly minWants: number;
  readonly headroomPercent: number;
  /** requests_per_unit: the most asked for and admitted per window. */
  readonly ceiling: number;
  readonly windowMs: number;
}

interface Held {
  spec: ShareSpec;
  resource: Resource;
  asked: number;
  sinceMs: number;
}

export interface SidecarSharesOptions {
  /** host:port of the capacity servers; empty: no server, every resource keeps its fallback. */
  readonly servers: readonly string[];
  readonly clientId?: string;
  readonly time?: ClientTime;
  readonly client?: Omit<CapacityClientOptions, 'servers' | 'clientId' | 'time' | 'beforeRefresh'>;
}

export class SidecarShares {
  private readonly held = new Map<string, Held>();
  private readonly client: CapacityClient | undefined;
  private readonly time: ClientTime;
  /** Stands in for the client when there is no server: resources that only ever fall back. */
  private readonly offline = { nowMs: () => this.time.nowMs(), asked: () => undefined, release: () => Promise.resolve() };

  constructor(options: SidecarSharesOptions) {
    this.time = options.time ?? systemTime;
    this.client =
      options.servers.length === 0
        ? undefined
        : new CapacityClient({
            ...options.client,
            servers: options.servers,
            ...(options.clientId ? { clientId: options.clientId } : {}),
            time: this.time,
            beforeRefresh: (now) => this.updateWants(now),
          });
  }

  /** Whether a capacity server is configured. */
  get connected(): boolean {
    return this.client !== undefined;
  }

  /** The resource the engine reads (for tests and /capacity views). */
  resource(id: string): Resource | undefined {
    return this.held.get(id)?.resource;
  }

  /** After each rules load: hold the resources the rules name (the first spec of a resource wins), release the others. */
  sync(specs: readonly ShareSpec[]): void {
    const wanted = new Map<string, ShareSpec>();
    for (const s of specs) if (!wanted.has(s.resource)) wanted.set(s.resource, s);
    for (const [id, h] of this.held) {
      if (wanted.has(id) && sameAsking(wanted.get(id)!, h.spec)) continue;
      this.held.delete(id);
      void h.resource.release();
    }
    for (const [id, spec] of wanted) {
      if (this.held.has(id)) continue;
      const wants = initialWants(spec);
      const options = { fallback: spec.fallback };
      const resource = this.client !== undefined ? this.client.resource(id, wants, options) : new Resource(id, wants, options, this.offline);
      this.held.set(id, { spec, resource, asked: 0, sinceMs: this.time.nowMs() });
    }
  }

  grant(resource: string): number {
    return this.held.get(resource)?.resource.capacity ?? 0;
  }

  observe(resource: string, hits: number): void {
    const h = this.held.get(resource);
    if (h !== undefined) h.asked += hits;
  }

  /** Releases every resource and closes the client. */
  async close(): Promise<void> {
    this.held.clear();
    await this.client?.close();
  }

  private updateWants(nowMs: number): void {
    for (const h of this.held.values()) {
      const elapsed = nowMs - h.sinceMs;
      if (h.spec.wants !== 'observed' || elapsed < 100) continue; // too short a sample: keep the last wants
      const rate = (h.asked * h.spec.windowMs) / elapsed;
      h.resource.setWants(clampWants(rate * (1 + h.spec.headroomPercent / 100), h.spec));
      h.asked = 0;
      h.sinceMs = nowMs;
    }
  }
}

function initialWants(spec: ShareSpec): number {
  return spec.wants === 'observed' ? spec.ceiling : clampWants(spec.wants, spec);
}

function clampWants(wants: number, spec: ShareSpec): number {
  return Math.min(spec.ceiling, Math.max(spec.minWants, wants));
}

function sameAsking(a: ShareSpec, b: ShareSpec): boolean {
  return (
    a.fallback === b.fallback &&
    a.wants === b.wants &&
    a.minWants === b.minWants &&
    a.headroomPercent === b.headroomPercent &&
    a.ceiling === b.ceiling &&
    a.windowMs === b.windowMs
  );
}
