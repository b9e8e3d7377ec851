/**
 * Space-Saving (Metwally, Agrawal, El Abbadi): the heaviest items of a stream in fixed memory. At most
 * `capacity` items are counted; a new item arriving when all slots are taken replaces the least counted one
 * and inherits its count as `error`. Every item whose true count exceeds total / capacity is present, and an
 * item's true count lies in [count − error, count]. The slots are one array, reused in place: a replacement
 * scans `capacity` counts and allocates nothing.
 */
export interface CountedItem<T> {
  id: string;
  payload: T;
  count: number;
  error: number;
}

export class SpaceSaving<T> {
  private readonly slots: CountedItem<T>[] = [];
  private readonly index = new Map<string, CountedItem<T>>();

  constructor(private readonly capacity: number) {}

  /** Counts `n` for `id`; `payload` is kept with the item when it enters. */
  add(id: string, n: number, payload: T): void {
    const known = this.index.get(id);
    if (known !== undefined) {
      known.count += n;
      return;
    }
    if (this.slots.length < this.capacity) {
      const item = { id, payload, count: n, error: 0 };
      this.slots.push(item);
      this.index.set(id, item);
      return;
    }
    let least = this.slots[0]!;
    for (let i = 1; i < this.slots.length; i++) if (this.slots[i]!.count < least.count) least = this.slots[i]!;
    this.index.delete(least.id);
    least.id = id;
    least.payload = payload;
    least.error = least.count;
    least.count += n;
    this.index.set(id, least);
  }

  values(): readonly CountedItem<T>[] {
    return this.slots;
  }

  get size(): number {
    return this.slots.length;
  }
}
