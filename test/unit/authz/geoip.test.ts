/**
 * GEOIP_DB: lookups in a MaxMind database the test writes (test/support/mmdb-writer.ts), read by the real
 * reader library; a changed file is picked up, a corrupt or missing one is reported and the last good kept.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openRegionDatabase } from '../../../src/app/geoip.js';
import { countryRecord, writeMmdb } from '../../support/mmdb-writer.js';

describe('GEOIP_DB region lookups', () => {
  let dir: string;
  let file: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'rl-geoip-'));
    file = join(dir, 'country.mmdb');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('answers the most specific network, IPv4 and IPv6, and nothing outside the database', async () => {
    writeFileSync(
      file,
      writeMmdb([
        { network: '81.2.0.0/16', record: countryRecord('FR') },
        { network: '81.2.69.0/24', record: countryRecord('GB') },
        { network: '2001:db8::/32', record: countryRecord('DE') },
        { network: '1.2.3.4/32', record: { registered_country: { iso_code: 'JP' } } },
      ]),
    );
    const db = await openRegionDatabase(file, { pollMs: 0 });
    try {
      expect(['81.2.69.7', '81.2.70.1', '2001:db8:5::1', '1.2.3.4', '1.2.3.5', '8.8.8.8', '2001:db9::1'].map(db.lookup)).toEqual([
        'GB',
        'FR',
        'DE',
        'JP',
        undefined,
        undefined,
        undefined,
      ]);
      expect(db.databaseType).toBe('Test-Country');
    } finally {
      db.close();
    }
  });

  it('re-reads a changed file; keeps the last good database when the new file is corrupt or gone', async () => {
    writeFileSync(file, writeMmdb([{ network: '10.0.0.0/8', record: countryRecord('NL') }]));
    const errors: string[] = [];
    const db = await openRegionDatabase(file, { pollMs: 0, onError: (m) => errors.push(m) });
    try {
      expect(db.lookup('10.1.1.1')).toBe('NL');
      writeFileSync(file, writeMmdb([{ network: '10.0.0.0/8', record: countryRecord('BE') }]));
      expect(await db.reload()).toBe(true);
      expect(db.lookup('10.1.1.1')).toBe('BE');
      writeFileSync(file, writeMmdb([{ network: '10.0.0.0/8', record: countryRecord('LU') }]).subarray(0, 40)); // half copied
      expect(await db.reload()).toBe(false);
      rmSync(file);
      expect(await db.reload()).toBe(false);
      expect(db.lookup('10.1.1.1')).toBe('BE');
      expect(errors).toHaveLength(2);
      expect(errors[0]).toContain(`GEOIP_DB ${file} cannot be read as a MaxMind database`);
    } finally {
      db.close();
    }
  });

  it('refuses to start on a file that is not a MaxMind database, naming it', async () => {
    writeFileSync(file, 'not a database');
    await expect(openRegionDatabase(file, { pollMs: 0 })).rejects.toThrow(`GEOIP_DB ${file} cannot be read as a MaxMind database`);
  });
});
