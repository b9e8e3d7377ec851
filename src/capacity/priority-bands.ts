/**
 * Priorities (ours, for a template with `priority_bands: true`; Doorman's algorithms never read `priority`,
 * and without the parameter neither do ours): the clients of a resource are split into bands by priority,
 * each band with its own totals and index, and a band's algorithm runs on what the bands above it leave:
 * C_p = max(0, C − Σ wants of the higher bands). The grant is then also capped by what is unallocated over
 * all bands, so the resource is never over-granted. With one priority there is one band and C_p = C: the
 * answers are Doorman's unchanged.
 */
import { LeaseStore, type StoredLease } from './resource-leases.js';

export class PriorityBands {
  private readonly bands = new Map<number, LeaseStore>();

  /** The band of a priority, made on first use. */
  band(priority: number): LeaseStore {
    let b = this.bands.get(priority);
    if (b === undefined) {
      b = new LeaseStore();
      this.bands.set(priority, b);
    }
    return b;
  }

  /** The capacity left for `priority` once the higher bands have what they want. */
  capacityFor(priority: number, capacity: number): number {
    let above = 0;
    for (const [p, b] of this.bands) if (p > priority) above += b.sumWants;
    return Math.max(0, capacity - above);
  }

  /** Records a lease (moving the client out of the band it was in). */
  assign(client: string, old: StoredLease | undefined, lease: StoredLease): void {
    if (old !== undefined && old.priority !== lease.priority) this.release(client, old.priority);
    this.band(lease.priority).assign(client, lease);
  }

  release(client: string, priority: number): void {
    const b = this.bands.get(priority);
    if (b === undefined) return;
    b.release(client);
    if (b.size === 0) this.bands.delete(priority);
  }

  clean(nowMs: number): void {
    for (const [p, b] of this.bands) {
      b.clean(nowMs);
      if (b.size === 0) this.bands.delete(p);
    }
  }

  get count(): number {
    return this.bands.size;
  }
}
