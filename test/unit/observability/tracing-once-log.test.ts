/**
 * The SDK's diagnostics reach the log at most once a minute per kind (its text without numbers), on an injected
 * clock: a collector away or a full queue gives a line, not one per batch.
 */
import { expect, it } from 'vitest';
import { onceLog } from '../../../src/observability/tracing/export-watch.js';

it('writes each kind of warning once a minute, an exception by its message', () => {
  const lines: string[] = [];
  let now = 0;
  const diag = onceLog({ info: () => {}, warn: (m) => lines.push(m) }, () => now);
  diag.warn('Dropped 12 spans because maxQueueSize reached');
  diag.warn('Dropped 40 spans because maxQueueSize reached');
  diag.error(JSON.stringify({ message: 'Timeout', stack: 'Error: Timeout\n    at ...' }));
  diag.error(JSON.stringify({ message: 'Timeout', stack: 'Error: Timeout\n    at ...' }));
  diag.info('not logged');
  diag.debug('not logged');
  expect(lines).toEqual(['tracing: Dropped 12 spans because maxQueueSize reached', 'tracing: Timeout']);
  now = 59_999;
  diag.warn('Dropped 7 spans because maxQueueSize reached');
  expect(lines).toHaveLength(2);
  now = 60_000;
  diag.warn('Dropped 7 spans because maxQueueSize reached');
  expect(lines.at(-1)).toBe('tracing: Dropped 7 spans because maxQueueSize reached');
});

it('keeps at most 32 kinds', () => {
  const lines: string[] = [];
  const diag = onceLog({ info: () => {}, warn: (m) => lines.push(m) }, () => 0);
  for (let i = 0; i < 40; i++) diag.warn(`kind ${String.fromCharCode(97 + (i % 26))}${String.fromCharCode(97 + Math.floor(i / 26))}`);
  expect(lines).toHaveLength(40);
  // The first kinds were forgotten to make room: said again, they are logged again.
  diag.warn('kind aa');
  expect(lines).toHaveLength(41);
  diag.warn(`kind ${String.fromCharCode(97 + (39 % 26))}b`);
  expect(lines).toHaveLength(41);
});
