/**
 * Space-Saving (Metwally, Agrawal, El Abbadi): the heaviest items of a stream in fixed memory. At most
 * `capacity` items are counted; a new item arriving when all slots are taken replaces the least counted one
 * and inherits its count as `error`. Every item whose true count exceeds total / capacity is present, and an
 * item's true count lies in [count − error, count].
 */
export interface CountedItem<T> {
  readonly id: string;
  readonly payload: T;
  count: number;
  error: number;
}

export class SpaceSaving<T> {
  private readonly items = new Map<string, CountedItem<T>>();

  constructor(private readonly capacity: number) {}

  /** Counts `n` for `id`; `payload` is kept with the item when it enters. O(1), or O(capacity) when an item is replaced. */
  add(id: string, n: number, payload: T): void {
    const known = this.items.get(id);
    if (known !== undefined) {
      known.count += n;
      return;
    }
    if (this.items.size < this.capacity) {
      this.items.set(id, { id, payload, count: n, error: 0 });
      return;
    }
    let least: CountedItem<T> | undefined;
    for (const item of this.items.values()) if (least === undefined || item.count < least.count) least = item;
    this.items.delete(least!.id);
    this.items.set(id, { id, payload, count: least!.count + n, error: least!.count });
  }

  values(): IterableIterator<CountedItem<T>> {
    return this.items.values();
  }

  get size(): number {
    return this.items.size;
  }
}
