/**
 * CPU time of this process, in milliseconds, for bounds on how much work a step does. On a shared machine at
 * load 5-20, wall-clock time stretches with every other process on the cores; the CPU time a synchronous step
 * spends barely moves, so a bound on it proves "no blow-up" (an alias bomb, a quadratic scan) without failing
 * because the machine is busy.
 */
export function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/** Runs `fn` and returns its result with the CPU milliseconds it took. */
export function cpuTimed<T>(fn: () => T): { result: T; ms: number } {
  const started = cpuMs();
  const result = fn();
  return { result, ms: cpuMs() - started };
}
