/**
 * `grpc-timeout` per the gRPC spec (1 to 8 digits and one unit of H M S m u n).
 * Malformed values are INTERNAL with one message; well-formed ones of 2^31 ms or more are clamped instead of
 * overflowing a timer (they used to expire at once: grpc-js keeps the timeout in an int32, and Node fires a timer past 2^31 − 1 ms after 1 ms).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { malformedTimeoutMessage } from '../../src/server/grpc/lean/grpc-wire.js';
import { eventually } from '../support/eventually.js';
import { grpcFrame, RawH2Client } from '../support/raw-h2.js';
import { encodeRequest, RLS_PATH } from '../support/raw-rls.js';
import { startTestService, type TestService } from '../support/service.js';

const RULES = {
  'app.yaml': 'domain: app\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 1000}\n',
  'shape.yaml':
    'domain: shape\ndescriptors:\n  - key: leaky\n    rate_limit: {unit: minute, requests_per_unit: 60, algorithm: leaky_bucket, on_limit: {action: delay, max_delay: 5s}}\n',
};
const OK = 0;
const INTERNAL = 13;

let t: TestService;
let client: RawH2Client;
beforeAll(async () => {
  t = await startTestService(RULES);
  client = new RawH2Client(t.grpcAddress);
});
afterAll(async () => {
  client.close();
  await t.close();
});

const request = grpcFrame(encodeRequest('app', [{ entries: [['user', 'u']] }]));

/** [header, expected status]: OK ones are well formed (huge ones clamped), the rest malformed. */
const TABLE: readonly (readonly [string, number])[] = [
  ['10S', OK],
  ['99999999S', OK], // 3.2 years: clamped to 2147483 s
  ['2147484S', OK], // just over 2^31 ms
  ['99999999H', OK],
  ['3000000000n', INTERNAL], // 10 digits
  ['-1S', INTERNAL],
  ['1.5S', INTERNAL],
  ['100000000S', INTERNAL], // 9 digits
  ['2147483648m', INTERNAL],
  ['1 S', INTERNAL],
  ['1SS', INTERNAL],
  ['1s', INTERNAL],
  ['S', INTERNAL],
  ['1', INTERNAL],
  ['', INTERNAL],
];

describe('grpc-timeout on the gRPC port', () => {
  it.each(TABLE)('%j answers status %i', async (header, status) => {
    const outcome = await client.call(RLS_PATH, request, 3000, header);
    expect(outcome.grpcStatus, outcome.message).toBe(status);
    if (status === INTERNAL) expect(outcome.message).toBe(malformedTimeoutMessage(header));
  });

  it('a delayed call with a deadline past 2^31 ms waits for its slot (the timer does not overflow)', async () => {
    const delayed = grpcFrame(encodeRequest('shape', [{ entries: [['leaky', 'x']] }]));
    expect((await client.call(RLS_PATH, delayed, 3000, '2147484S')).grpcStatus).toBe(OK); // takes the free slot
    const waiting = client.call(RLS_PATH, delayed, 3000, '2147484S'); // reserved the next slot, 1 s on
    await eventually(() => t.timer.pending === 1);
    await new Promise((resolve) => setTimeout(resolve, 100)); // an overflowed timer fires after 1 ms
    t.timer.advance(1000);
    const outcome = await waiting;
    expect(outcome.grpcStatus, outcome.message).toBe(OK);
  });
});
