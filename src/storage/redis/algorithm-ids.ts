/**
 * The numbers that stand for the algorithms (and the envoy key format's fixed_window) in the batch script's
 * packed fields: one list, from which batch-script.ts also writes the script's table of names.
 */
import { ALGORITHM_NAMES } from '../../vocab/algorithm-names.js';

/** The fragment (lua/formats) for checks with keyFormat 'envoy' (REDIS_KEY_FORMAT=envoy): the reference's counters. */
export const ENVOY_FIXED_WINDOW = 'envoy_fixed_window';

/** The fragment (lua/formats) for fixed_window checks with a windowStartMs (calendar windows). */
export const CALENDAR_WINDOW = 'calendar_window';

/** The formats, each a fragment lua/formats/<name>.lua. */
export const FORMATS: readonly string[] = [ENVOY_FIXED_WINDOW, CALENDAR_WINDOW];

/** Id i + 1 is SCRIPT_ALGORITHMS[i]; 0 means none. */
export const SCRIPT_ALGORITHMS: readonly string[] = [...ALGORITHM_NAMES, ...FORMATS];

const IDS = new Map(SCRIPT_ALGORITHMS.map((name, i) => [name, i + 1]));

/** The id of a fragment's name; an unknown name (no fragment) gets an id no fragment has, which the script refuses. */
export function algorithmId(name: string): number {
  return IDS.get(name) ?? SCRIPT_ALGORITHMS.length + 1;
}

/** The Lua table of names by id, inserted into the batch script. */
export function luaAlgorithmNames(): string {
  return `local ALGORITHM_NAMES = { ${SCRIPT_ALGORITHMS.map((n) => `'${n}'`).join(', ')} }`;
}
