/**
 * How far V8 lets the old generation grow past what survived its last full collection before it collects again
 * (V8's --heap-growing-percent, which NODE_OPTIONS does not accept, so it is set here, before the service starts).
 *
 * Under load, the objects of the calls in flight outlive a scavenge or two and are promoted; almost all of them
 * are garbage soon after. Left to its own choice of factor, V8 lets that garbage pile up to several times what
 * is live before a full collection, and the native memory the dead HTTP/2 streams hold (malloc) stays until
 * then too: most of the resident memory a sidecar gains under load. A fixed, small factor collects it sooner;
 * a full collection of a small live heap is mostly concurrent and costs little CPU (docs/performance.md).
 */
import { setFlagsFromString } from 'node:v8';

/** `percent` 0 leaves V8's own (dynamic) factor. Process-wide: the last call wins. */
export function setHeapGrowingPercent(percent: number): void {
  if (!Number.isInteger(percent) || percent < 0) throw new Error(`heap growing percent must be a whole number ≥ 0, got ${percent}`);
  if (percent > 0) setFlagsFromString(`--heap-growing-percent=${percent}`);
}
