/**
 * How the memory store keeps each algorithm's state in a slot (slot-table.ts), and how many bytes beyond
 * the fixed entry overhead it is accounted for.
 *
 * Fixed-size states are packed into the three float64 columns s0..s2 (every field is a number, so the
 * round trip is exact) and cost nothing extra; reading one builds a fresh object, which the algorithm
 * treats as immutable input. sliding_window_log's log is variable-sized and stays the object it is.
 */
import type { AlgorithmName } from '../../vocab/algorithm-names.js';
import type { FixedWindowState } from '../../algorithms/fixed-window.js';
import type { MeterState } from '../../algorithms/meter.js';
import type { SlidingWindowCounterState } from '../../algorithms/sliding-window-counter.js';
import type { SlidingWindowLogState } from '../../algorithms/sliding-window-log.js';
import type { SlotTable } from './slot-table.js';

interface Codec {
  /** 1..255: the value of the slot's algorithm column. */
  readonly code: number;
  write(table: SlotTable, slot: number, state: unknown): void;
  read(table: SlotTable, slot: number): unknown;
  /** Bytes the state takes beyond what every entry is accounted for. */
  extraBytes(state: unknown): number;
}

const fixedWindow: Codec = {
  code: 1,
  write(t, slot, state) {
    const s = state as FixedWindowState;
    t.s0[slot] = s.start;
    t.s1[slot] = s.count;
  },
  read: (t, slot): FixedWindowState => ({ start: t.s0[slot]!, count: t.s1[slot]! }),
  extraBytes: () => 0,
};

function meter(code: number): Codec {
  return {
    code,
    write(t, slot, state) {
      const s = state as MeterState;
      t.s0[slot] = s.tatMs;
      t.s1[slot] = s.tatFrac;
      t.s2[slot] = s.den;
    },
    read: (t, slot): MeterState => ({ tatMs: t.s0[slot]!, tatFrac: t.s1[slot]!, den: t.s2[slot]! }),
    extraBytes: () => 0,
  };
}

const slidingWindowCounter: Codec = {
  code: 3,
  write(t, slot, state) {
    const s = state as SlidingWindowCounterState;
    t.s0[slot] = s.start;
    t.s1[slot] = s.current;
    t.s2[slot] = s.previous;
  },
  read: (t, slot): SlidingWindowCounterState => ({ start: t.s0[slot]!, current: t.s1[slot]!, previous: t.s2[slot]! }),
  extraBytes: () => 0,
};

/** Object header and three array headers (V8, 64-bit), then 8 bytes per element of each array. */
const LOG_OBJECT_BYTES = 160;

const slidingWindowLog: Codec = {
  code: 2,
  write(t, slot, state) {
    t.objects.set(slot, state);
  },
  read: (t, slot) => t.objects.get(slot),
  extraBytes(state) {
    const s = state as SlidingWindowLogState;
    // The arrays may hold a dead prefix and spare capacity beyond `end`: count what they hold, not the view.
    return LOG_OBJECT_BYTES + 8 * (s.times.length + s.cums.length + s.counts.length);
  },
};

export const CODECS: Readonly<Record<AlgorithmName, Codec>> = Object.freeze({
  fixed_window: fixedWindow,
  sliding_window_log: slidingWindowLog,
  sliding_window_counter: slidingWindowCounter,
  token_bucket: meter(4),
  leaky_bucket: meter(5),
});
