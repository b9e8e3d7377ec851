/**
 * One stack of closers for everything the service starts: each start registers how it stops, at once, and
 * the stack is closed once, newest first. A closer runs at most once: in its turn, or earlier when the
 * function `defer` returns is called (the drain ends the serving before its turn comes). A closer that
 * throws does not stop the ones after it; every failure is reported as it happens and all of them together
 * when the stack is closed.
 */

export type Closer = () => void | Promise<void>;

/** The failures of one close, each named by what it was closing. */
export class TeardownError extends AggregateError {
  constructor(readonly failures: readonly { readonly name: string; readonly error: unknown }[]) {
    super(
      failures.map((f) => f.error),
      `${failures.length} closer(s) failed: ${failures.map((f) => `${f.name}: ${f.error instanceof Error ? f.error.message : String(f.error)}`).join('; ')}`,
    );
    this.name = 'TeardownError';
  }
}

interface Entry {
  readonly name: string;
  readonly close: Closer;
  /** Set when the closer has started; settles when it has ended (never rejects). */
  run?: Promise<void>;
}

export class Teardown {
  private readonly entries: Entry[] = [];
  private readonly failures: { name: string; error: unknown }[] = [];
  private closing: Promise<void> | undefined;

  /** `onError` hears each failing closer as it fails (to log it); close() still reports them all. */
  constructor(private readonly onError: (name: string, error: unknown) => void = () => {}) {}

  /**
   * Registers how to stop what has just started. Returns that closer, run at most once: calling it runs it
   * now (its failure rejects the call, and close() does not run or report it again). Registered after close()
   * began, it runs at once.
   */
  defer(name: string, close: Closer): () => Promise<void> {
    const entry: Entry = { name, close };
    this.entries.push(entry);
    const early = async (): Promise<void> => {
      if (entry.run !== undefined) return entry.run;
      let failure: { error: unknown } | undefined;
      entry.run = this.invoke(entry).then((f) => void (failure = f));
      await entry.run;
      if (failure !== undefined) throw failure.error;
    };
    if (this.closing !== undefined) void this.turn(entry);
    return early;
  }

  /** Runs every closer not run yet, newest first, each after the one before has ended. Calling it again returns the same promise. */
  close(): Promise<void> {
    return (this.closing ??= (async () => {
      for (let i = this.entries.length - 1; i >= 0; i--) await this.turn(this.entries[i]!);
      if (this.failures.length > 0) throw new TeardownError(this.failures);
    })());
  }

  /** An entry's turn in close(): runs it unless it ran (or runs) already, which it then waits for. */
  private async turn(entry: Entry): Promise<void> {
    if (entry.run !== undefined) return entry.run;
    entry.run = this.invoke(entry).then((f) => {
      if (f === undefined) return;
      this.failures.push({ name: entry.name, error: f.error });
    });
    return entry.run;
  }

  /** Runs a closer; resolves with its failure (reported to onError) or undefined. */
  private async invoke(entry: Entry): Promise<{ error: unknown } | undefined> {
    try {
      await entry.close();
      return undefined;
    } catch (error) {
      try {
        this.onError(entry.name, error);
      } catch {
        // A failing report must not stop the closers after it.
      }
      return { error };
    }
  }
}
