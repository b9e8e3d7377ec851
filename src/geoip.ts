/**
 * Region lookups in a MaxMind-format database (GEOIP_DB: GeoLite2/GeoIP2 Country or City, or any .mmdb
 * whose records carry `country.iso_code`), read with the `maxmind` package. The file is re-read when it
 * changes (the package polls it), so a database update needs no restart. Lookups are cached (bounded).
 */
import { unwatchFile } from 'node:fs';
import maxmind from 'maxmind';
import type { RegionLookup } from './authz/types.js';

/** The part of a record we read; databases differ (Country, City, custom), so every field is checked. */
interface CountryRecord {
  readonly country?: { readonly iso_code?: unknown };
  readonly registered_country?: { readonly iso_code?: unknown };
}

export interface RegionDatabase {
  readonly lookup: RegionLookup;
  /** The database's type as it names itself (e.g. GeoLite2-Country). */
  readonly databaseType: string;
  close(): void;
}

/** Opens the database; rejects with a message naming the file when it is missing or not a MaxMind DB. */
export async function openRegionDatabase(path: string, cacheSize = 10_000): Promise<RegionDatabase> {
  let reader;
  try {
    reader = await maxmind.open(path, { cache: { max: cacheSize }, watchForUpdates: true, watchForUpdatesNonPersistent: true });
  } catch (err) {
    throw new Error(`GEOIP_DB ${path} cannot be read as a MaxMind database: ${err instanceof Error ? err.message : String(err)}`);
  }
  const lookup: RegionLookup = (ip) => {
    let record: CountryRecord | null;
    try {
      record = reader.get(ip) as CountryRecord | null;
    } catch {
      return undefined; // not an address the database can hold (e.g. IPv6 in an IPv4-only file)
    }
    const code = record?.country?.iso_code ?? record?.registered_country?.iso_code;
    return typeof code === 'string' && code !== '' ? code : undefined;
  };
  return { lookup, databaseType: reader.metadata.databaseType, close: () => unwatchFile(path) };
}
