/**
 * The one request-deadline guard of the stores (RedisStore for its calls, ResilientStore for its primary).
 */
import type { Clock } from '../vocab/clock.js';
import { StoreError } from '../vocab/errors.js';
import { timerDelay } from '../vocab/timer.js';

/**
 * Start `work` and settle by the absolute deadline, else reject with STORE_TIMEOUT (the late result is
 * dropped, its rejection handled). Past the deadline already, `work` is not started at all.
 */
export function withDeadline<T>(start: () => Promise<T>, deadlineMs: number | undefined, clock: Clock, onGiveUp?: () => void): Promise<T> {
  if (deadlineMs === undefined) return start();
  const left = deadlineMs - clock.nowMs();
  if (left <= 0) return Promise.reject(new StoreError('STORE_TIMEOUT', 'deadline passed before the store was asked'));
  const work = start();
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      onGiveUp?.();
      reject(new StoreError('STORE_TIMEOUT', `store did not answer within ${left} ms (request deadline)`));
    }, timerDelay(left));
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
