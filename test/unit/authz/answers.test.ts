/**
 * Decisions as CheckResponses, byte for byte against protobufjs' encoding of the expected message: the
 * redirect and custom-status answers the on_limit block produces (httpStatus, location, body), degrade
 * headers on an allowed answer, repeated header names, and the FAILURE_MODE=closed 503.
 */
import { describe, expect, it } from 'vitest';
import { answerFor, storeFailureAnswer } from '../../../src/authz/answer.js';
import type { RateLimitDecision } from '../../../src/vocab/types.js';
import { encodeCheckResponse } from '../../../src/server/ext-authz/ext-authz-encode.js';
import { authzType, encodeExpectedResponse, option } from '../../support/authz-client.js';

const over = (extra: Partial<RateLimitDecision>): RateLimitDecision => ({
  overallCode: 'OVER_LIMIT',
  statuses: [{ code: 'OVER_LIMIT', limitRemaining: 0, durationUntilResetMs: 30_000 }],
  responseHeadersToAdd: [{ key: 'retry-after', value: '30' }],
  requestHeadersToAdd: [],
  ...extra,
});

const bytesOf = (d: RateLimitDecision) => encodeCheckResponse(answerFor(d)).toString('hex');

describe('Check answers on the wire', () => {
  it('a redirect: status 302, location and the on_limit body', () => {
    const decision = over({
      httpStatus: 302,
      responseHeadersToAdd: [
        { key: 'retry-after', value: '30' },
        { key: 'location', value: 'https://example.com/slow-down?retry=30' },
        { key: 'Content-Type', value: 'text/html' },
      ],
      rawBody: Buffer.from('<a href="/slow-down">Slow down</a>'),
    });
    expect(bytesOf(decision)).toBe(
      encodeExpectedResponse({
        status: { code: 8, message: 'over rate limit: redirected (302)' },
        denied_response: {
          status: { code: 302 },
          headers: [option('retry-after', '30'), option('location', 'https://example.com/slow-down?retry=30'), option('content-type', 'text/html')],
          body: '<a href="/slow-down">Slow down</a>',
        },
      }).toString('hex'),
    );
  });

  it('an on_limit status other than 429, a body that is not UTF-8, and repeated header names (the first replaces, later ones add)', () => {
    const decision = over({
      httpStatus: 403,
      responseHeadersToAdd: [
        { key: 'x-limit', value: 'a' },
        { key: 'x-limit', value: 'b' },
      ],
      rawBody: Uint8Array.from([0x6f, 0x6b, 0xff]),
    });
    expect(bytesOf(decision)).toBe(
      encodeExpectedResponse({
        status: { code: 8, message: 'over rate limit' },
        denied_response: { status: { code: 403 }, headers: [option('x-limit', 'a'), option('x-limit', 'b', true)], body: 'ok\ufffd' },
      }).toString('hex'),
    );
  });

  it('OVER_LIMIT without httpStatus is a 429 with no body', () => {
    const decoded = authzType('CheckResponse').toObject(authzType('CheckResponse').decode(encodeCheckResponse(answerFor(over({})))), {
      enums: String,
      defaults: false,
    });
    expect(decoded).toEqual({
      status: { code: 8, message: 'over rate limit' },
      denied_response: {
        status: { code: 'TooManyRequests' },
        headers: [{ header: { key: 'retry-after', value: '30' }, append: {}, append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' }],
      },
    });
  });

  it('allowed: degrade headers for the upstream (replace, so a client cannot pre-set them) and RateLimit headers for the client', () => {
    const decision: RateLimitDecision = {
      overallCode: 'OK',
      statuses: [],
      responseHeadersToAdd: [{ key: 'ratelimit', value: '"a";r=1;t=5' }],
      requestHeadersToAdd: [{ key: 'x-degraded', value: 'true' }],
    };
    expect(bytesOf(decision)).toBe(
      encodeExpectedResponse({
        status: {},
        ok_response: { headers: [option('x-degraded', 'true')], response_headers_to_add: [option('ratelimit', '"a";r=1;t=5')] },
      }).toString('hex'),
    );
  });

  it('FAILURE_MODE=closed: the engine rejected because the store could not answer → 503, status UNAVAILABLE', () => {
    const decision = over({ storeFailure: true });
    expect(bytesOf(decision)).toBe(encodeCheckResponse(storeFailureAnswer()).toString('hex'));
    expect(bytesOf(decision)).toBe(
      encodeExpectedResponse({
        status: { code: 14, message: 'rate limit store unavailable (FAILURE_MODE=closed)' },
        denied_response: {
          status: { code: 503 },
          headers: [option('content-type', 'text/plain; charset=utf-8')],
          body: 'rate limit service unavailable: the counter store cannot answer and FAILURE_MODE=closed rejects requests meanwhile\n',
        },
      }).toString('hex'),
    );
  });

  it('encodes large answers (buffer growth) that decode back', () => {
    const headers = Array.from({ length: 200 }, (_, i) => ({ key: `x-h${i}`, value: 'v'.repeat(300) }));
    const bytes = encodeCheckResponse(answerFor({ overallCode: 'OK', statuses: [], responseHeadersToAdd: headers, requestHeadersToAdd: [] }));
    const decoded = authzType('CheckResponse').decode(bytes) as unknown as { ok_response: { response_headers_to_add: unknown[] } };
    expect(decoded.ok_response.response_headers_to_add).toHaveLength(200);
  });
});
