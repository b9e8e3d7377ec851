/**
 * Region lookups in a MaxMind-format database (GEOIP_DB: GeoLite2/GeoIP2 Country or City, or any .mmdb whose
 * records carry `country.iso_code`), read with the `maxmind` package's reader.
 *
 * The file is polled (fs.watchFile) and re-read when it changes. A new file replaces the one in use only once
 * it reads as a whole database: a half-copied or corrupt file is reported and the last good one kept. (The
 * package's own watcher would reload inside an unguarded callback, where a corrupt file is an unhandled
 * rejection, which ends the process.) Lookups are cached, bounded.
 */
import { readFile } from 'node:fs/promises';
import { unwatchFile, watchFile } from 'node:fs';
import { Reader, type CountryResponse } from 'maxmind';
import type { RegionLookup } from '../authz/types.js';

export interface RegionDatabase {
  readonly lookup: RegionLookup;
  /** The database's type as it names itself (e.g. GeoLite2-Country). */
  readonly databaseType: string;
  /** Re-reads the file now (the poller calls it on a change); false, keeping the database in use, when it cannot be read. */
  reload(): Promise<boolean>;
  close(): void;
}

export interface RegionDatabaseOptions {
  /** Addresses whose answer is cached (default 10,000); the cache is emptied when full and on every reload. */
  readonly cacheSize?: number;
  /** How often the file is polled for changes, ms (default 5 s); 0: never. */
  readonly pollMs?: number;
  readonly onReload?: (databaseType: string) => void;
  readonly onError?: (message: string) => void;
}

/** A Map emptied when it reaches its bound: what a lookup cache needs, at no per-hit cost. */
class BoundedCache {
  private readonly map = new Map<string | number, unknown>();
  constructor(private readonly max: number) {}
  get(key: string | number): unknown {
    return this.map.get(key);
  }
  set(key: string | number, value: unknown): void {
    if (this.map.size >= this.max) this.map.clear();
    this.map.set(key, value);
  }
}

async function readDatabase(path: string, cacheSize: number): Promise<Reader<CountryResponse>> {
  try {
    return new Reader<CountryResponse>(await readFile(path), { cache: new BoundedCache(cacheSize) });
  } catch (err) {
    throw new Error(`GEOIP_DB ${path} cannot be read as a MaxMind database: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** Opens the database; rejects with a message naming the file when it is missing or not a MaxMind DB. */
export async function openRegionDatabase(path: string, options: RegionDatabaseOptions = {}): Promise<RegionDatabase> {
  const cacheSize = options.cacheSize ?? 10_000;
  let reader = await readDatabase(path, cacheSize);
  const lookup: RegionLookup = (ip) => {
    // Databases differ (Country, City, custom): the fields are checked at run time, not trusted to the type.
    let record: CountryResponse | null;
    try {
      record = reader.get(ip);
    } catch {
      return undefined; // not an address the database can hold (e.g. IPv6 in an IPv4-only file)
    }
    const code: unknown = record?.country?.iso_code ?? record?.registered_country?.iso_code;
    return typeof code === 'string' && code !== '' ? code : undefined;
  };
  const reload = async (): Promise<boolean> => {
    try {
      reader = await readDatabase(path, cacheSize);
      options.onReload?.(reader.metadata.databaseType);
      return true;
    } catch (err) {
      options.onError?.(`${(err as Error).message}; still using the database read before`);
      return false;
    }
  };
  const pollMs = options.pollMs ?? 5_000;
  if (pollMs > 0) {
    watchFile(path, { interval: pollMs, persistent: false }, (now, before) => {
      if (now.mtimeMs !== before.mtimeMs || now.size !== before.size || now.ino !== before.ino) void reload();
    });
  }
  return {
    lookup,
    get databaseType() {
      return reader.metadata.databaseType;
    },
    reload,
    close: () => unwatchFile(path),
  };
}
