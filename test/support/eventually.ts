/**
 * Waits for an effect of real I/O (file events, a process starting, a reconnect) by polling `probe` until it
 * holds, with a bounded timeout; a probe that throws counts as "not yet". For things a fake clock cannot drive.
 */
export async function eventually(
  probe: () => boolean | Promise<boolean>,
  options: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<void> {
  const { timeoutMs = 5000, intervalMs = 20, what = 'condition' } = options;
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await probe()) return;
    } catch {
      // not yet
    }
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
