/** The health model every surface reads: each answer from its inputs (no store needed: it takes functions). */
import { describe, expect, it } from 'vitest';
import { ServiceHealth } from '../../src/server/service-health.js';

function model(store: { healthy: boolean; problem?: string }, storeCanAnswer: boolean, rulesLoaded = true) {
  const h = new ServiceHealth({ store: () => store, storeCanAnswer: () => storeCanAnswer, rulesLoaded: () => rulesLoaded });
  h.setGrpcServing(true);
  return h;
}

describe('ServiceHealth', () => {
  it('is ready and serving with a healthy store', () => {
    const h = model({ healthy: true }, true);
    expect(h.canAnswer()).toBe(true);
    expect(h.ready()).toEqual({ ready: true });
    expect(h.rlsServing()).toBe(true);
    expect(h.storeProblem()).toBeUndefined();
  });

  it('a failing store: not ready with its cause; RLS serving only while the failure mode can answer', () => {
    const open = model({ healthy: false, problem: 'NOPERM no evalsha' }, true);
    expect(open.canAnswer()).toBe(true);
    expect(open.ready()).toEqual({ ready: false, reason: 'store: NOPERM no evalsha' });
    expect(open.rlsServing()).toBe(true);
    const closed = model({ healthy: false, problem: 'NOPERM no evalsha' }, false);
    expect(closed.rlsServing()).toBe(false);
    expect(closed.storeHealthy()).toBe(false);
  });

  it('draining, gRPC not serving or rules not loaded: cannot answer, whatever the store', () => {
    const draining = model({ healthy: true }, true);
    draining.startDraining();
    expect(draining.canAnswer()).toBe(false);
    expect(draining.ready()).toEqual({ ready: false, reason: 'draining' });
    expect(draining.rlsServing()).toBe(false);
    expect(draining.storeHealthy()).toBe(true);

    const stopped = model({ healthy: true }, true);
    stopped.setGrpcServing(false);
    expect(stopped.ready().reason).toBe('gRPC server not serving');
    expect(model({ healthy: true }, true, false).ready().reason).toBe('rules not loaded');
  });
});
