/** HealthState: read when asked, polled only while a Watch call is open (server/health/grpc-health.ts). */
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { HealthState, type HealthWatcher } from '../../../src/server/health/grpc-health.js';

beforeEach(() => void vi.useFakeTimers());
afterEach(() => void vi.useRealTimers());

it('Check and status() read the sources when asked, with no timer running', () => {
  let serving = true;
  const health = new HealthState(() => serving, { 'ratelimit.store': () => serving });
  expect(vi.getTimerCount()).toBe(0);
  expect(health.of('')).toBe('SERVING');
  serving = false;
  expect(health.of('')).toBe('NOT_SERVING');
  expect(health.of('ratelimit.store')).toBe('NOT_SERVING');
  serving = true;
  expect(health.status()).toBe('SERVING');
  expect(health.entries().every(([, s]) => s === 'SERVING')).toBe(true);
  expect(vi.getTimerCount()).toBe(0);
});

it('a Watch call hears of a change within the poll, and the poll stops with the last watcher', () => {
  let serving = true;
  const health = new HealthState(() => serving, {}, 500);
  const seen: string[] = [];
  const stop = health.watch('', { write: (m) => void seen.push(m.status), end: () => undefined } satisfies HealthWatcher);
  expect(seen).toEqual(['SERVING']);
  expect(vi.getTimerCount()).toBe(1);
  serving = false;
  vi.advanceTimersByTime(500);
  expect(seen).toEqual(['SERVING', 'NOT_SERVING']);
  stop();
  expect(vi.getTimerCount()).toBe(0);
});

it('shutdown ends the watchers and their poll', () => {
  const health = new HealthState(() => true);
  let ended = 0;
  health.watch('', { write: () => undefined, end: () => void ended++ } satisfies HealthWatcher);
  health.shutdown();
  expect(ended).toBe(1);
  expect(health.of('')).toBe('NOT_SERVING');
  expect(vi.getTimerCount()).toBe(0);
});
