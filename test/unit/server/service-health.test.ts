/** The health model every surface reads: each answer from its inputs (no store needed: it takes functions). */
import { describe, expect, it } from 'vitest';
import { ServiceHealth } from '../../../src/server/health/service-health.js';

function model(store: { healthy: boolean; problem?: string }, rulesLoaded = true) {
  const h = new ServiceHealth({ store: () => store, rulesLoaded: () => rulesLoaded });
  h.setGrpcServing(true);
  return h;
}

describe('ServiceHealth', () => {
  it('is ready and serving with a healthy store', () => {
    const h = model({ healthy: true });
    expect(h.canAnswer()).toBe(true);
    expect(h.ready()).toEqual({ ready: true });
    expect(h.rlsServing()).toBe(true);
    expect(h.storeProblem()).toBeUndefined();
  });

  it('a failing store: still answering (by FAILURE_MODE), but neither ready nor RLS-serving, with its cause', () => {
    const failing = model({ healthy: false, problem: 'NOPERM no evalsha' });
    expect(failing.canAnswer()).toBe(true);
    expect(failing.ready()).toEqual({ ready: false, reason: 'store: NOPERM no evalsha' });
    expect(failing.rlsServing()).toBe(false);
    expect(failing.storeHealthy()).toBe(false);
  });

  it('draining, gRPC not serving or rules not loaded: cannot answer, whatever the store', () => {
    const draining = model({ healthy: true });
    draining.startDraining();
    expect(draining.canAnswer()).toBe(false);
    expect(draining.ready()).toEqual({ ready: false, reason: 'draining' });
    expect(draining.rlsServing()).toBe(false);
    expect(draining.storeHealthy()).toBe(true);

    const stopped = model({ healthy: true });
    stopped.setGrpcServing(false);
    expect(stopped.ready().reason).toBe('gRPC server not serving');
    expect(model({ healthy: true }, false).ready().reason).toBe('rules not loaded');
  });
});
