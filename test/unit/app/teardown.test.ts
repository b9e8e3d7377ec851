import { describe, expect, it } from 'vitest';
import { Teardown, TeardownError } from '../../../src/app/teardown.js';

describe('Teardown', () => {
  it('closes newest first, each closer after the one before has ended', async () => {
    const seen: string[] = [];
    const t = new Teardown();
    t.defer('store', () => void seen.push('store'));
    t.defer('server', async () => {
      seen.push('server starts');
      await new Promise((r) => setImmediate(r));
      seen.push('server ends');
    });
    t.defer('watcher', () => void seen.push('watcher'));
    await t.close();
    expect(seen).toEqual(['watcher', 'server starts', 'server ends', 'store']);
  });

  it('runs each closer once when close() is called twice, and returns the same promise', async () => {
    let runs = 0;
    const t = new Teardown();
    t.defer('one', () => void runs++);
    const first = t.close();
    const second = t.close();
    expect(second).toBe(first);
    await Promise.all([first, second]);
    await t.close();
    expect(runs).toBe(1);
  });

  it('keeps closing past a closer that throws, and reports every failure by name', async () => {
    const seen: string[] = [];
    const heard: string[] = [];
    const t = new Teardown((name, err) => heard.push(`${name}: ${(err as Error).message}`));
    t.defer('store', () => void seen.push('store'));
    t.defer('admin', () => {
      throw new Error('admin port stuck');
    });
    t.defer('grpc', () => Promise.reject(new Error('grpc refused to stop')));
    t.defer('watcher', () => void seen.push('watcher'));
    const err = await t.close().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(seen).toEqual(['watcher', 'store']);
    expect(heard).toEqual(['grpc: grpc refused to stop', 'admin: admin port stuck']);
    expect(err).toBeInstanceOf(TeardownError);
    const failure = err as TeardownError;
    expect(failure.failures.map((f) => f.name)).toEqual(['grpc', 'admin']);
    expect(failure.message).toBe('2 closer(s) failed: grpc: grpc refused to stop; admin: admin port stuck');
    expect(failure.errors).toHaveLength(2);
    // Closed once: a second close reports the same failures without running anything again.
    await expect(t.close()).rejects.toBe(failure);
    expect(seen).toEqual(['watcher', 'store']);
  });

  it('runs a closer called early once: not again in its turn, its failure reported to the early caller only', async () => {
    const seen: string[] = [];
    const t = new Teardown();
    const stopWatcher = t.defer('watcher', () => void seen.push('watcher'));
    const stopRlqs = t.defer('rlqs', () => {
      seen.push('rlqs');
      throw new Error('stream stuck');
    });
    t.defer('store', () => void seen.push('store'));
    t.defer('serving', async () => {
      await stopWatcher();
      await stopRlqs().catch((e: unknown) => seen.push(`caught ${(e as Error).message}`));
      await stopRlqs();
    });
    await t.close();
    expect(seen).toEqual(['watcher', 'rlqs', 'caught stream stuck', 'store']);
  });

  it('an early call in progress holds the closers after it in its turn', async () => {
    const seen: string[] = [];
    const t = new Teardown();
    t.defer('store', () => void seen.push('store'));
    let release!: () => void;
    const stopGrpc = t.defer('grpc', () => new Promise<void>((r) => (release = r)).then(() => void seen.push('grpc')));
    const early = stopGrpc();
    const closed = t.close();
    await new Promise((r) => setImmediate(r));
    expect(seen).toEqual([]);
    release();
    await Promise.all([early, closed]);
    expect(seen).toEqual(['grpc', 'store']);
  });

  it('runs at once a closer registered after close() began', async () => {
    const seen: string[] = [];
    const t = new Teardown();
    await t.close();
    t.defer('late listener', () => void seen.push('late listener'));
    await new Promise((r) => setImmediate(r));
    expect(seen).toEqual(['late listener']);
  });
});
