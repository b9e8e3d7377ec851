/**
 * RUNTIME_IGNOREDOTFILES=false on a process started the reference's way (RUNTIME_ROOT): rule files whose names
 * start with a dot are loaded, and reloaded when one is added, while a ConfigMap's `..data` copy of the same
 * files is not read twice.
 */
import { expect, onTestFinished } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { eventually } from '../support/eventually.js';
import { test } from '../support/fixtures.js';
import { RlsTestClient } from '../support/rls-client.js';
import { spawnService } from '../support/service-process.js';

const rule = (domain: string) => `domain: ${domain}\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 1}\n`;

test('loads dot files with RUNTIME_IGNOREDOTFILES=false, reloads a new one, and never the ..data copies', { timeout: 60_000 }, async ({ rules }) => {
  const root = rules.write({ 'config/main.yaml': rule('main'), 'config/.team.yaml': rule('team'), 'config/..data/main.yaml': rule('main') });
  const service = await spawnService({ RUNTIME_ROOT: root, RUNTIME_SUBDIRECTORY: '', RUNTIME_IGNOREDOTFILES: 'false', CONFIG_WATCH: 'true' });
  onTestFinished(() => service.stop());
  const client = new RlsTestClient(service.grpcAddress);
  onTestFinished(() => client.close());
  const twice = async (domain: string, value: string) => [
    (await client.ask(domain, [[['k', value]]])).overall_code,
    (await client.ask(domain, [[['k', value]]])).overall_code,
  ];
  expect(await twice('main', 'a')).toEqual(['OK', 'OVER_LIMIT']);
  expect(await twice('team', 'a')).toEqual(['OK', 'OVER_LIMIT']);

  writeFileSync(join(root, 'config/.late.yaml'), rule('late'));
  await eventually(
    async () =>
      (await client.ask('late', [[['k', 'probe']]])).overall_code === 'OK' && (await client.ask('late', [[['k', 'probe']]])).overall_code === 'OVER_LIMIT',
    {
      timeoutMs: 20_000,
      what: 'the new dot file in force',
    },
  );
});
