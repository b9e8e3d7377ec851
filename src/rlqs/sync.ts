/**
 * Shares between replicas settle between Envoy's reports (BACKEND=redis): once a second, each replica reads the
 * buckets signalled by any replica (an Envoy there gets less than its fair part because others hold it) and
 * the buckets held back here, reshares them over the other replicas' holders as they are now, pushes the
 * changed shares to its Envoys and writes its entries back. An Envoy joining on one replica thus makes the
 * Envoys on the others shrink within about a second, and then grows into what they gave up, instead of waiting
 * for their next 5 s reports. A tick runs only after the last one ended; a store that does not answer skips it.
 */
import type { QuotaBook } from './book.js';
import type { ShareExchange } from './shared.js';

export const SYNC_INTERVAL_MS = 1000;

/** One round: the signalled and held-back buckets read again, resplit, pushed and written back. */
export async function syncOnce(book: QuotaBook, exchange: ShareExchange): Promise<void> {
  const keys = book.unsettled(await exchange.signalled());
  if (keys.length === 0) return;
  book.rebalance(await exchange.read(keys));
  exchange.write(book.ownHolders(keys));
}

export function startShareSync(book: QuotaBook, exchange: ShareExchange, intervalMs = SYNC_INTERVAL_MS): { stop(): void } {
  let running = false;
  const run = () => {
    if (running) return;
    running = true;
    syncOnce(book, exchange)
      .catch(() => undefined)
      .finally(() => (running = false));
  };
  const timer = setInterval(run, intervalMs);
  run(); // the first reads where the signals are now
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
