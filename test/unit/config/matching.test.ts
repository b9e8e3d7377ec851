/** Lookup semantics beyond the reference examples: glob positions, precedence, order, depth, odd values. */
import { describe, expect, it } from 'vitest';
import { compileGlob } from '../../../src/config/load/glob.js';
import { compile, domainOf, entries, fixtureText, lookup } from './support.js';

const domain = domainOf(compile({ 'matching.yaml': fixtureText('valid/matching.yaml') }), 'match');

describe('matching', () => {
  it.each([
    // exact beats every wildcard and the key-only node
    [['path=/health'], 'match.path_/health → 1000/second'],
    // trailing *
    [['path=/api/v1/users'], 'match.path_/api/* → 100/second'],
    [['path=/api/'], 'match.path_/api/* → 100/second'],
    // leading *
    [['path=/static/logo.jpg'], 'match.path_*.jpg → 50/second'],
    [['path=.jpg'], 'match.path_*.jpg → 50/second'],
    // * in the middle
    [['path=/img/123/large'], 'match.path_/img/*/large → 20/second'],
    [['path=/img//large'], 'match.path_/img/*/large → 20/second'],
    [['path=/img/123/small'], 'match.path → 1/second'],
    // several *
    [['path=/abc'], 'match.path_/a*b*c → 7/second'],
    [['path=/a-b-c'], 'match.path_/a*b*c → 7/second'],
    [['path=/axxbyyczz'], 'match.path → 1/second'],
    // wildcard beats key-only; key-only catches the rest
    [['path=/other'], 'match.path → 1/second'],
    [['path='], 'match.path → 1/second'],
    // first matching wildcard in config order
    [['user=user-admin-1'], 'match.user_user-admin-* → 2/minute'],
    [['user=user-42'], 'match.user_user-* → 3/minute'],
    [['user=admin'], 'none'],
  ])('%j → %s', (request, expected) => {
    expect(lookup(domain, ...request)).toBe(expected);
  });

  it('compares key and value separately, so a_b=c is not a=b_c', () => {
    expect(lookup(domain, 'a=b_c')).toBe('match.a_b_c → 11/hour');
    expect(lookup(domain, 'a_b=c')).toBe('none');
  });

  it('matches values with newlines, non-ASCII and separators exactly', () => {
    expect(lookup(domain, 'odd=line1\nline2 ✓ {x}|y=z')).toBe('match.odd_line1\nline2 ✓ {x}|y=z → 12/hour');
    expect(lookup(domain, 'odd=line1\nline2 ✓ {x}|y=')).toBe('none');
  });

  it.each([
    [['tenant=acme'], 'match.tenant → 1000/minute'],
    // the tenant limit is in the middle: a deeper request does not get it
    [['tenant=acme', 'plan=free'], 'none'],
    [['tenant=acme', 'plan=free', 'route=/x'], 'match.tenant.plan_free.route → 10/minute'],
    [['tenant=acme', 'plan=professional', 'route=/x'], 'match.tenant.plan_pro*.route → 100/minute'],
    [['tenant=acme', 'plan=enterprise', 'route=/x'], 'none'],
    // deeper than the config
    [['tenant=acme', 'plan=free', 'route=/x', 'extra=1'], 'none'],
    // entries are matched in order
    [['plan=free', 'tenant=acme'], 'none'],
    [[], 'none'],
  ])('depth %j → %s', (request, expected) => {
    expect(lookup(domain, ...request)).toBe(expected);
  });

  it('returns the request entries themselves as the counter identity', () => {
    const request = entries('path=/api/v1');
    expect(domain.lookup(request)?.counterEntries).toBe(request);
  });
});

describe('glob', () => {
  it.each([
    ['foo*', 'foo', true],
    ['foo*', 'fo', false],
    ['*', '', true],
    ['*foo', 'xfoo', true],
    ['*foo', 'foox', false],
    ['a*a', 'a', false],
    ['a*a', 'aa', true],
    ['a*b*a', 'aba', true],
    ['a*b*a', 'ab', false],
    ['**', 'anything', true],
    ['x*y*z', 'xzyz', true],
    ['x*y*z', 'xzzy', false],
    ['a*aa*a', 'aaaa', true],
    ['a*aa*a', 'aaa', false],
  ])('%s matches %j: %s', (pattern, text, expected) => {
    expect(compileGlob(pattern).matches(text)).toBe(expected);
  });

  it('stays linear on hostile input', () => {
    const glob = compileGlob('*a*a*a*a*a*a*a*a*b');
    const started = performance.now();
    expect(glob.matches('a'.repeat(100_000))).toBe(false);
    expect(performance.now() - started).toBeLessThan(200);
  });
});
