/** The pieces of a request the authz actions read: IPs as Envoy prints them, masks, cookies, query parameters. */
import { describe, expect, it } from 'vitest';
import { formatIp, maskIp, parseIp } from '../../../src/authz/ip.js';
import { cookieValue, pathWithoutQuery, queryParameter } from '../../../src/authz/request-values.js';

const canon = (s: string) => formatIp(parseIp(s)!);

describe('IP addresses', () => {
  it.each([
    ['10.1.2.3', '10.1.2.3'],
    ['2001:DB8:0:0:0:0:0:1', '2001:db8::1'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'], // the first of two equal zero runs
    ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1'], // one zero group stays
    ['::', '::'],
    ['::1', '::1'],
    ['fe80::1%eth0', 'fe80::1'],
    // IPv4-mapped: the IPv4 address, as Envoy gives a dual-stack listener's client
    ['::ffff:10.1.2.3', '10.1.2.3'],
    ['::ffff:cb00:7105', '203.0.113.5'],
    ['0:0:0:0:0:FFFF:203.0.113.5', '203.0.113.5'],
    ['::fffe:10.1.2.3', '::fffe:a01:203'], // not mapped
    ['::10.1.2.3', '::a01:203'], // IPv4-compatible (deprecated): stays IPv6, as IN6_IS_ADDR_V4MAPPED says
    ['64:ff9b::10.1.2.3', '64:ff9b::a01:203'], // NAT64: stays IPv6
  ])('%s prints as %s', (input, expected) => {
    expect(canon(input)).toBe(expected);
  });

  it.each([
    ['10.1.2.3', 24, '10.1.2.0/24'],
    ['10.1.2.3', 32, '10.1.2.3/32'],
    ['10.1.2.3', 0, '0.0.0.0/0'],
    ['192.168.255.255', 17, '192.168.128.0/17'],
    ['2001:db8:abcd:1234:5678::1', 64, '2001:db8:abcd:1234::/64'],
    ['2001:db8:abcd:1234:5678::1', 128, '2001:db8:abcd:1234:5678::1/128'],
    ['::ffff:10.1.2.3', 24, '10.1.2.0/24'], // the IPv4 prefix length applies
  ])('%s masked to /%i is %s', (ip, len, expected) => {
    expect(maskIp(parseIp(ip)!, len)).toBe(expected);
  });

  it('rejects what is not an IP', () => {
    for (const s of ['', 'a.b.c.d', '1.2.3', '1.2.3.4.5', '256.1.1.1', '1.2.3.4:80', '[::1]', 'gggg::1']) expect(parseIp(s), s).toBeUndefined();
  });
});

describe('cookies and query parameters', () => {
  it('reads a cookie by name (the first, quotes removed)', () => {
    expect(cookieValue('a=1; sid=abc; sid=def', 'sid')).toBe('abc');
    expect(cookieValue('sid="q v"', 'sid')).toBe('q v');
    expect(cookieValue('xsid=1; sid2=2', 'sid')).toBeUndefined();
    expect(cookieValue('sid=', 'sid')).toBe('');
    expect(cookieValue(undefined, 'sid')).toBeUndefined();
  });

  it('reads a query parameter (decoded; a malformed escape kept as written)', () => {
    expect(queryParameter('/p?a=1&b=%2Fx&a=2', 'a')).toBe('1');
    expect(queryParameter('/p?a=1&b=%2Fx', 'b')).toBe('/x');
    expect(queryParameter('/p?flag&x=1', 'flag')).toBe('');
    expect(queryParameter('/p?x=%E0%A4%A', 'x')).toBe('%E0%A4%A');
    expect(queryParameter('/p?x=1#a=2', 'a')).toBeUndefined();
    expect(queryParameter('/p', 'x')).toBeUndefined();
  });

  it('strips the query and fragment from a path', () => {
    expect(pathWithoutQuery('/a/b?x=1')).toBe('/a/b');
    expect(pathWithoutQuery('/a#f')).toBe('/a');
    expect(pathWithoutQuery('/a')).toBe('/a');
  });
});
