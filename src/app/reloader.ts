/**
 * Holds the rules in use and swaps them whole on reload. A reload that fails validation keeps the last
 * good rules and is reported (log, metric, GET /rules).
 */
import { withInForce } from '../config/compile/rules-in-force.js';
import type { ConfigDescription } from '../config/compile/describe-rules.js';
import type { CompiledConfig } from '../config/types.js';
import { systemClock, type Clock } from '../vocab/clock.js';

export interface LoadResult {
  readonly ok: boolean;
  readonly config?: CompiledConfig;
  readonly errors?: readonly { toString(): string }[];
  readonly warnings?: readonly { toString(): string }[];
}

export interface ReloadStatus {
  readonly at: string;
  readonly ok: boolean;
  readonly version: string;
  readonly errors: readonly string[];
  /** Keys ignored as envoyproxy/ratelimit ignores them (the rules loaded). */
  readonly warnings: readonly string[];
}

export class RulesHolder {
  private last: ReloadStatus;
  /** Where the rules come from, for describe() (GET /rules): set when they do not come from CONFIG_DIR. */
  source: (() => unknown) | undefined;
  private inFlight: Promise<ReloadStatus> | undefined;
  private again = false;

  constructor(
    private current: CompiledConfig,
    private readonly load: () => Promise<LoadResult>,
    private readonly report: (status: ReloadStatus, changed: boolean) => void,
    initialWarnings: readonly { toString(): string }[] = [],
    /** The service's clock: the instant `in_force` is read at, and the reloads' times. */
    private readonly clock: Clock = systemClock,
    /** What the store cannot run (app/memcached-rules.ts): a set with problems is refused like an invalid one. */
    private readonly vet: (config: CompiledConfig) => readonly string[] = () => [],
  ) {
    this.last = { at: new Date(clock.nowMs()).toISOString(), ok: true, version: current.version, errors: [], warnings: initialWarnings.map(String) };
  }

  get config(): CompiledConfig {
    return this.current;
  }

  get lastReload(): ReloadStatus {
    return this.last;
  }

  /** Reloads now; concurrent calls coalesce into one more reload after the running one. */
  reload(): Promise<ReloadStatus> {
    if (this.inFlight) {
      this.again = true;
      return this.inFlight;
    }
    this.inFlight = this.run().finally(() => {
      this.inFlight = undefined;
      if (this.again) {
        this.again = false;
        void this.reload();
      }
    });
    return this.inFlight;
  }

  private async run(): Promise<ReloadStatus> {
    const at = new Date(this.clock.nowMs()).toISOString();
    let result: LoadResult;
    try {
      result = await this.load();
    } catch (err) {
      result = { ok: false, errors: [err instanceof Error ? err.message : String(err)] };
    }
    return this.apply(result, at);
  }

  /** Swaps in a set loaded elsewhere (rules over xDS), or keeps the rules in force when it failed; as reload(). */
  apply(loaded: LoadResult, at = new Date(this.clock.nowMs()).toISOString()): ReloadStatus {
    const refused = loaded.ok && loaded.config ? this.vet(loaded.config) : [];
    const result: LoadResult = refused.length > 0 ? { ok: false, errors: refused } : loaded;
    if (result.ok && result.config) {
      const changed = result.config.version !== this.current.version;
      this.current = result.config;
      this.last = { at, ok: true, version: result.config.version, errors: [], warnings: (result.warnings ?? []).map(String) };
      this.report(this.last, changed);
    } else {
      this.last = { at, ok: false, version: this.current.version, errors: (result.errors ?? []).map(String), warnings: [] };
      this.report(this.last, false);
    }
    return this.last;
  }

  /** GET /rules: `in_force` on the rules with a valid_from / valid_until, read at the service's clock. */
  describe(): unknown {
    return {
      ...(this.source === undefined ? {} : { source: this.source() }),
      version: this.current.version,
      files: this.current.files,
      lastReload: this.last,
      domains: withInForce(this.current.describe() as ConfigDescription, this.clock.nowMs()),
    };
  }
}
