/** The top limited keys: Space-Saving's bounds, the sliding window on a fake clock, the bound on rules, and the value modes. */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../../src/vocab/clock.js';
import { SpaceSaving } from '../../../src/top/space-saving.js';
import { TopKeys, type TopValues } from '../../../src/top/top-keys.js';
import { prng } from '../../support/prng.js';

const RULE = { statsKey: 'edge.user', source: 'edge.yaml:3' };

function limited(user: string, over = true, rule = RULE, domain = 'edge') {
  return { domain, rule, entries: [{ key: 'user', value: user }], overLimit: over, nearLimit: !over, shadowMode: false };
}

function top(clock: FakeClock, values: TopValues = 'plain', keysPerRule = 3, maxRules = 10): TopKeys {
  return new TopKeys({ clock, keysPerRule, maxRules, values });
}

describe('SpaceSaving', () => {
  it('keeps every item heavier than total/capacity, with true counts in [count - error, count], in fixed memory', () => {
    const rng = prng('space-saving');
    const sketch = new SpaceSaving<null>(20);
    const truth = new Map<string, number>();
    // 5 heavy hitters among 5,000 light keys, shuffled together.
    const stream: string[] = [];
    for (let h = 0; h < 5; h++) for (let i = 0; i < 1000 + 200 * h; i++) stream.push(`heavy${h}`);
    for (let i = 0; i < 5000; i++) stream.push(`light${i}`);
    for (let i = stream.length - 1; i > 0; i--) {
      const j = rng.int(0, i);
      [stream[i], stream[j]] = [stream[j]!, stream[i]!];
    }
    for (const id of stream) {
      sketch.add(id, 1, null);
      truth.set(id, (truth.get(id) ?? 0) + 1);
    }
    expect(sketch.size).toBe(20);
    const kept = new Map([...sketch.values()].map((i) => [i.id, i]));
    for (let h = 0; h < 5; h++) {
      const item = kept.get(`heavy${h}`)!;
      const real = truth.get(`heavy${h}`)!;
      expect(real).toBeGreaterThan(stream.length / 20);
      expect(item.count).toBeGreaterThanOrEqual(real);
      expect(item.count - item.error).toBeLessThanOrEqual(real);
    }
  });
});

describe('TopKeys', () => {
  it('ranks rejected and near-limit keys per rule, with the deciding rule and its source', () => {
    const clock = new FakeClock(0);
    const t = top(clock);
    for (let i = 0; i < 5; i++) t.record(limited('alice'));
    for (let i = 0; i < 2; i++) t.record(limited('bob'));
    t.record(limited('carol', false));
    t.record({ ...limited('dave'), overLimit: false, nearLimit: false }); // admitted below the limit: not counted
    const snap = t.snapshot();
    expect(snap.window_seconds).toBe(300);
    expect(snap.rules).toEqual([
      {
        domain: 'edge',
        rule: 'edge.user',
        source: 'edge.yaml:3',
        shadow_mode: false,
        rejected: [
          { entries: [{ key: 'user', value: 'alice' }], count: 5, error: 0 },
          { entries: [{ key: 'user', value: 'bob' }], count: 2, error: 0 },
        ],
        near_limit: [{ entries: [{ key: 'user', value: 'carol' }], count: 1, error: 0 }],
      },
    ]);
  });

  it('forgets what is older than the window, slice by slice, without a timer', () => {
    const clock = new FakeClock(0);
    const t = top(clock);
    t.record(limited('early'));
    clock.advance(60_000);
    t.record(limited('later'));
    clock.advance(4 * 60_000 - 1); // 'early' is 4m59.999s old, in the fifth slice back
    expect(t.snapshot().rules[0]!.rejected.map((k) => k.entries[0]!.value)).toEqual(['early', 'later']);
    clock.advance(1);
    expect(t.snapshot().rules[0]!.rejected.map((k) => k.entries[0]!.value)).toEqual(['later']);
    clock.advance(60_000);
    expect(t.snapshot().rules).toEqual([]);
    // The slot of an old slice is reused: a new record there does not add the old counts.
    t.record(limited('again'));
    expect(t.snapshot().rules[0]!.rejected).toEqual([{ entries: [{ key: 'user', value: 'again' }], count: 1, error: 0 }]);
  });

  it('tracks at most maxRules rules, evicting the least recently limited, and at most 2 x keysPerRule keys a slice', () => {
    const clock = new FakeClock(0);
    const t = top(clock, 'plain', 2, 3);
    const at = (ms: number, rule: string) => {
      clock.set(ms);
      t.record(limited('x', true, { statsKey: `edge.${rule}`, source: `f:${rule}` }));
    };
    at(1, 'r0');
    at(2, 'r1');
    at(3, 'r2'); // full
    at(4, 'r3'); // evicts r0
    at(5, 'r1'); // r1 is now more recent than r2
    at(6, 'r4'); // evicts r2
    at(7, 'r5'); // evicts r3
    const snap = t.snapshot();
    expect(snap.rules_tracked).toBe(3);
    expect(snap.rules_evicted).toBe(3);
    expect(snap.rules.map((r) => r.rule).sort()).toEqual(['edge.r1', 'edge.r4', 'edge.r5']);
    for (let i = 0; i < 1000; i++) t.record(limited(`random-${i}`));
    const rule = t.snapshot().rules.find((r) => r.rule === 'edge.user')!;
    expect(rule.rejected).toHaveLength(2);
    expect(rule.rejected[0]!.error).toBeGreaterThan(0); // replaced items say how much of their count is borrowed
  });

  it('narrows to one domain', () => {
    const t = top(new FakeClock(0));
    t.record(limited('a', true, RULE, 'edge'));
    t.record(limited('b', true, { statsKey: 'api.key', source: 'api.yaml:2' }, 'api'));
    expect(t.snapshot('api').rules.map((r) => r.domain)).toEqual(['api']);
  });

  it('shows values as sent, as a SHA-256 prefix, or hidden (TOP_VALUES)', () => {
    const value = (mode: TopValues) => {
      const t = top(new FakeClock(0), mode);
      t.record(limited('<script>alert(1)</script>'));
      t.record(limited('someone-else'));
      return t.snapshot().rules[0]!.rejected.map((k) => k.entries[0]!.value);
    };
    expect(value('plain')).toContain('<script>alert(1)</script>');
    const hash = createHash('sha256').update('<script>alert(1)</script>').digest('hex').slice(0, 16);
    expect(value('hash')).toContain(`sha256:${hash}`);
    expect(value('hide')).toEqual(['***']);
  });
});
