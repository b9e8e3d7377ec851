/**
 * Key encoding properties on adversarial values: distinct descriptors never share a key, and every key of
 * one descriptor (all algorithms and windows) has one Redis Cluster slot. The slot reference is the
 * `cluster-key-slot` package ioredis routes with; our own keySlot (used to group checks) must agree with it.
 */
import calculateSlot from 'cluster-key-slot';
import { describe, expect, it } from 'vitest';
import { counterKey, counterTag, MAX_TAG_LENGTH } from '../../../src/vocab/keys.js';
import type { DescriptorEntry } from '../../../src/vocab/types.js';
import { ALGORITHM_NAMES } from '../../../src/vocab/algorithm-names.js';
import { hashedPart, keySlot } from '../../../src/storage/redis/slot.js';
import { prng, type Prng } from '../../support/prng.js';
import { freePort, rawCommand, RedisProcess } from '../../support/redis.js';

const NASTY = ['', '|', '=', '{', '}', '{}', '}{', '%', '%7c.', '#', '\n', '\r\n', ':', ' ', '\u0000', 'é', '𝄞', '\ud800', '\udfff', 'a'];

function randomText(random: Prng): string {
  const parts: string[] = [];
  const n = random.int(0, 4);
  for (let i = 0; i < n; i++) {
    const kind = random.int(0, 3);
    if (kind === 0) parts.push(random.pick(NASTY));
    else if (kind === 1) parts.push(String.fromCharCode(random.int(0, 0xffff)));
    else if (kind === 2) parts.push(String.fromCodePoint(random.int(0x10000, 0x10ffff)));
    else parts.push(random.pick(['user', 'path', '/api', 'x']));
  }
  if (random.chance(0.02)) parts.push('z'.repeat(random.int(MAX_TAG_LENGTH - 20, MAX_TAG_LENGTH + 20)));
  return parts.join('');
}

describe('counter keys', () => {
  it('never collide for distinct (domain, entries), and keep one slot per descriptor', () => {
    const random = prng('keys');
    const seen = new Map<string, string>();
    for (let i = 0; i < 4000; i++) {
      const domain = randomText(random);
      const entries: DescriptorEntry[] = Array.from({ length: random.int(0, 3) }, () => ({
        key: randomText(random),
        value: randomText(random),
      }));
      const identity = JSON.stringify([domain, entries.map((e) => [e.key, e.value])]);
      const tag = counterTag(domain, entries);
      const previous = seen.get(tag);
      if (previous !== undefined) expect(previous, `tag ${tag}`).toBe(identity);
      seen.set(tag, identity);

      expect(tag).not.toBe(''); // Redis would ignore an empty hash tag
      const keys = ALGORITHM_NAMES.flatMap((a) => [1000, 60_000, 86_400_000].map((w) => counterKey('rl:', domain, entries, a, w)));
      const slots = new Set(keys.map((k) => calculateSlot(k)));
      expect(slots.size, keys[0]).toBe(1);
      for (const k of keys) {
        expect(hashedPart(k)).toBe(tag);
        expect(keySlot(k)).toBe(calculateSlot(k));
      }
      expect(tag.length).toBeLessThanOrEqual(MAX_TAG_LENGTH + 1);
      expect(tag).not.toMatch(/[{}\n\r]/);
    }
    expect(seen.size).toBeGreaterThan(3000);
    expect(counterTag('', [])).toBe('%.');
    expect(counterTag('%', [])).not.toBe('%.');
  });

  it('keeps the separators of crafted look-alike descriptors apart', () => {
    const pairs: [string, DescriptorEntry[], string, DescriptorEntry[]][] = [
      [
        'a',
        [{ key: 'b', value: 'c|d=e' }],
        'a',
        [
          { key: 'b', value: 'c' },
          { key: 'd', value: 'e' },
        ],
      ],
      ['a|b=c', [], 'a', [{ key: 'b', value: 'c' }]],
      ['a', [{ key: 'b=c', value: 'd' }], 'a', [{ key: 'b', value: 'c=d' }]],
      ['a', [{ key: 'b', value: '%7c.' }], 'a', [{ key: 'b', value: '|' }]],
      ['a', [{ key: 'k', value: '\ud83d' }], 'a', [{ key: 'k', value: '\ud83d\ude00' }]],
    ];
    for (const [d1, e1, d2, e2] of pairs) expect(counterKey('p', d1, e1, 'fixed_window', 1000)).not.toBe(counterKey('p', d2, e2, 'fixed_window', 1000));
  });

  // The reference is Redis itself (CLUSTER KEYSLOT on a cluster-enabled node): cluster-key-slot differs from
  // Redis for keys like `a{}b}c` (Redis hashes the whole key when the first tag is empty), and encodes lone
  // surrogates otherwise than ioredis sends them (U+FFFD, as rawCommand does too).
  it('our slot function agrees with Redis on keys with and without tags', async () => {
    const node = new RedisProcess(await freePort(), ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf']);
    await node.start();
    try {
      const random = prng('slots');
      for (let i = 0; i < 300; i++) {
        const key = randomText(random) + random.pick(['', '{', '}', '{}', '{x}', '{}x}']) + randomText(random);
        const reply = await rawCommand(node.port, ['CLUSTER', 'KEYSLOT', key]);
        expect(keySlot(key), JSON.stringify(key)).toBe(Number(/^:(\d+)/.exec(reply)?.[1]));
      }
    } finally {
      await node.destroy();
    }
  });
});
