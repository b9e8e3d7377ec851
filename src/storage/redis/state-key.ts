/**
 * The Redis key of an algorithm's state, given the key vocab/keys.ts built for the limit: the one place where a
 * change of a state layout in Redis shows in its key names (lua/algorithms/*.lua describe the layouts).
 */
import type { AlgorithmName } from '../../vocab/algorithm-names.js';

/**
 * Redis state layouts this version changed: fixed_window and sliding_window_counter keep binary integers
 * (lua/algorithms/*.lua) where version 1 kept text ("<start>:<count>", "<start>:<current>:<previous>").
 * Their keys gain LAYOUT_SUFFIX, so that during a rolling upgrade replicas of the two versions on one Redis
 * count apart (each in its own keys) instead of each reading the other's value as empty and overwriting it.
 * No other key ends in it (counter keys end in their window's digits, the keys derived from them in a word);
 * the hash tag is kept, so the slot is the counter's.
 */
export const LAYOUT_SUFFIX = ':v2';
const SUFFIXED: ReadonlySet<string> = new Set<AlgorithmName>(['fixed_window', 'sliding_window_counter']);

/** The Redis key of an algorithm's state under `key` (the key vocab/keys.ts built): see LAYOUT_SUFFIX. */
export function stateKey(key: string, algorithm: string): string {
  return SUFFIXED.has(algorithm) ? key + LAYOUT_SUFFIX : key;
}
