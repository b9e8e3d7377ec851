/**
 * Work written as a generator that yields between small steps (a descriptor, a part of a reply), run either at
 * once or on the event loop in slices: a large rule set is then indexed while requests keep being answered
 * between the slices, and the result is swapped in whole at the end. A step may also yield a promise: the
 * work then waits for it (for more input, e.g. the next file from a worker thread); only runInSlices can wait.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';

export type Steps<T> = Generator<Promise<void> | void, T, void>;

/** Event-loop time one slice may take before the other callbacks (requests) run. */
export const SLICE_MS = 10;

/** Runs `steps` to their end now. */
export function runAtOnce<T>(steps: Steps<T>): T {
  for (;;) {
    const r = steps.next();
    if (r.done === true) return r.value;
    if (r.value !== undefined) throw new Error('these steps wait for input: run them in slices');
  }
}

/** Runs `steps` in slices of about `sliceMs`, letting the event loop turn between them (and awaiting what they wait for). */
export async function runInSlices<T>(steps: Steps<T>, sliceMs = SLICE_MS): Promise<T> {
  for (;;) {
    const end = performance.now() + sliceMs;
    let wait: Promise<void> | void;
    for (;;) {
      const r = steps.next();
      if (r.done === true) return r.value;
      wait = r.value;
      if (wait !== undefined || performance.now() >= end) break;
    }
    await (wait ?? nextTurn());
  }
}
