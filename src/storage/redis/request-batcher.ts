/**
 * Cross-request batching of the store's script calls: the requests submitted in one event-loop turn go to
 * Redis as one call of the script (lua/requests.lua), which decides each in order, each atomic on its own.
 * Per call Redis pays its fixed cost (command dispatch, script lookup, Lua entry) and the client builds one
 * Command, one promise and one write: dividing both by the batch size is what the Redis CPU and the service's
 * CPU per request are made of under load (docs/performance.md). Alone, a request still goes at the end of
 * the turn it came in, so batching adds no waiting, only the grouping.
 *
 * On Redis Cluster a call may only name keys of one hash slot: requests are queued per slot (the store gives
 * each call's slot; every check of one call shares it). A batch is bounded by count and by bytes; a request
 * larger than the bounds goes alone. Deadlines stay per request: each carries its own expiry (batch.lua's
 * header), which Redis checks when it reaches that request, and the caller's timer is its own.
 */
import { packDoubles } from './packed.js';

/** How the batcher runs one script call (BatchCommands in batch-script.ts: EVALSHA, EVAL on NOSCRIPT), binary replies. */
export interface ScriptCaller {
  callBuffer(keyCount: number, args: (string | Buffer)[]): Promise<unknown>;
}

export interface BatchLimits {
  /** Most requests in one call (default 128). */
  readonly maxRequests: number;
  /** Most bytes of keys and arguments in one call, about (default 256 KiB). */
  readonly maxBytes: number;
}

export const DEFAULT_BATCH_LIMITS: BatchLimits = { maxRequests: 128, maxBytes: 256 * 1024 };

/** One request's part of the call: its KEYS and its packed fields as batch.lua reads them. */
export interface ScriptRequest {
  readonly keys: readonly string[];
  readonly fields: Buffer;
}

interface Pending {
  readonly request: ScriptRequest;
  readonly bytes: number;
  resolve(reply: unknown): void;
  reject(error: unknown): void;
}

interface Queue {
  items: Pending[];
  bytes: number;
}

function sizeOf(r: ScriptRequest): number {
  let bytes = 0;
  for (const k of r.keys) bytes += k.length + 8;
  return bytes + r.fields.length + 8;
}

export class RequestBatcher {
  private readonly queues = new Map<number, Queue>();
  private scheduled = false;
  /** Script calls sent (each carrying one or more requests). */
  calls = 0;

  constructor(
    private readonly commands: ScriptCaller,
    private readonly limits: BatchLimits = DEFAULT_BATCH_LIMITS,
  ) {}

  /** The script's reply for this request (batch.lua's layout), or its error; rejects when the call fails. */
  submit(slot: number, request: ScriptRequest): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const bytes = sizeOf(request);
      const pending: Pending = { request, bytes, resolve, reject };
      if (bytes >= this.limits.maxBytes) {
        this.send([pending]);
        return;
      }
      let q = this.queues.get(slot);
      if (q !== undefined && q.bytes + bytes > this.limits.maxBytes) {
        this.flushQueue(slot, q);
        q = undefined;
      }
      if (q === undefined) {
        q = { items: [], bytes: 0 };
        this.queues.set(slot, q);
      }
      q.items.push(pending);
      q.bytes += bytes;
      if (q.items.length >= this.limits.maxRequests) this.flushQueue(slot, q);
      else if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(this.flushAll);
      }
    });
  }

  private readonly flushAll = (): void => {
    this.scheduled = false;
    for (const [slot, q] of this.queues) this.flushQueue(slot, q);
  };

  private flushQueue(slot: number, q: Queue): void {
    this.queues.delete(slot);
    if (q.items.length > 0) this.send(q.items);
  }

  private send(items: readonly Pending[]): void {
    this.calls++;
    // KEYS of every request, then requests.lua's header (each request's KEYS count), then each request's fields
    const args: (string | Buffer)[] = [];
    const counts = new Float64Array(items.length);
    items.forEach(({ request }, i) => {
      for (const k of request.keys) args.push(k);
      counts[i] = request.keys.length;
    });
    const keyCount = args.length;
    args.push(packDoubles(counts));
    for (const { request } of items) args.push(request.fields);
    this.commands.callBuffer(keyCount, args).then(
      (reply) => {
        if (!Array.isArray(reply) || reply.length !== items.length) {
          const error = new Error(
            `unexpected reply of the requests script: ${items.length} requests, ${Array.isArray(reply) ? `${reply.length} replies` : typeof reply}`,
          );
          for (const p of items) p.reject(error);
          return;
        }
        items.forEach((p, i) => {
          const r: unknown = reply[i];
          if (r instanceof Error) p.reject(r);
          else p.resolve(r);
        });
      },
      (error: unknown) => {
        for (const p of items) p.reject(error);
      },
    );
  }
}
