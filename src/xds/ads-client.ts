/**
 * The rules over xDS: a state-of-the-world ADS client (envoy.service.discovery.v3.AggregatedDiscoveryService/
 * StreamAggregatedResources) subscribed to RateLimitConfig resources, as envoyproxy/ratelimit's
 * CONFIG_TYPE=GRPC_XDS_SOTW is. Every response is the whole set: it is handed to `apply` (validate, compile,
 * swap whole) and ACKed with its version and nonce, or NACKed with the errors (error_detail) while the last
 * good set stays in force.
 *
 * - A new stream starts with an empty version_info: whatever the server then sends is applied, so a restarted
 *   server (whose versions start again at "1") is never mistaken for one already seen.
 * - go-control-plane answers a NACK by sending the same version again at once. The same refused content is
 *   NACKed again without being compiled again; every run of refusals, whatever their kind, is paced and its
 *   logging bounded (refusals.ts), so a broken server costs a few messages a second, not a core.
 * - A peer that stops answering HTTP/2 pings (keepaliveMs, then keepaliveTimeoutMs) is taken for dead and the
 *   stream reopened: a proxy that holds a connection open without forwarding would otherwise hold the client
 *   forever. A server that finds the pings too frequent (GOAWAY ENHANCE_YOUR_CALM, gRPC's "too_many_pings")
 *   gets them half as often from the next connection on, as gRPC clients do.
 * - A broken stream is reopened after the backoff (backoff.ts); the rules in force stay in force meanwhile.
 */
import { createHash } from 'node:crypto';
import type * as GrpcJs from '@grpc/grpc-js';
import { Backoff, type BackoffOptions } from './backoff.js';
import {
  ADS_METHOD,
  decodeDiscoveryResponse,
  encodeDiscoveryRequest,
  RATE_LIMIT_CONFIG_TYPE,
  type DiscoveryResponse,
  type NodeInfo,
} from './discovery-messages.js';
import { RefusalRun } from './refusals.js';
import { resourcesToFilesInSlices, type ResourceFile } from './resources.js';
import { explainCallError } from '../server/grpc/call-errors.js';

export type ApplyResult = { ok: true } | { ok: false; errors: readonly string[] };

export interface XdsTls {
  /** PEM files, re-read at every connection attempt (rotated certificates are picked up on reconnect). */
  readonly caFile: string;
  readonly certFile: string;
  readonly keyFile: string;
  /** The name the server's certificate must carry, when not the host of the URL. */
  readonly serverName: string;
}

export interface XdsClientOptions {
  readonly serverUrl: string;
  readonly node: NodeInfo;
  /** gRPC metadata sent on the stream (CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS). */
  readonly headers: ReadonlyMap<string, string>;
  readonly tls?: XdsTls;
  readonly backoff: BackoffOptions;
  /** Largest response accepted, bytes (0: grpc-js's default, 4 MiB). */
  readonly maxMessageBytes: number;
  /** Largest resource accepted, in the bytes received (its protobuf encoding). */
  readonly maxResourceBytes: number;
  /** HTTP/2 ping interval on the connection, and how long an answer may take before the peer is taken for dead. */
  readonly keepaliveMs: number;
  readonly keepaliveTimeoutMs: number;
  /** Validates, compiles and swaps in a set (may take a while: the next response waits for it). */
  readonly apply: (files: readonly ResourceFile[], version: string) => ApplyResult | Promise<ApplyResult>;
  readonly log: {
    info(msg: string, f?: Record<string, unknown>): void;
    warn(msg: string, f?: Record<string, unknown>): void;
    error(msg: string, f?: Record<string, unknown>): void;
  };
  readonly readFile: (path: string) => Buffer;
  readonly random?: () => number;
  readonly now?: () => number;
}

export type XdsState = 'connecting' | 'connected' | 'disconnected' | 'stopped';

export interface XdsStatus {
  readonly server: string;
  readonly nodeId: string;
  readonly state: XdsState;
  /** The version of the set in force ('' before the first one). */
  readonly version: string;
  readonly appliedAt: string;
  readonly accepted: number;
  readonly refused: number;
  /** NACKs of a set already refused (not compiled or logged again). */
  readonly repeatedNacks: number;
  readonly connects: number;
  readonly lastNack?: { readonly at: string; readonly version: string; readonly nonce: string; readonly error: string };
  readonly lastError?: string;
}

/** Event-loop time decoding a set may take before requests are answered again (a large set decodes in slices). */
const DECODE_SLICE_MS = 10;

/** Longest error_detail sent in a NACK. */
const MAX_DETAIL_CHARS = 4096;

export class XdsClient {
  private grpc: typeof GrpcJs | undefined;
  private client: GrpcJs.Client | undefined;
  private call: GrpcJs.ClientDuplexStream<Buffer, Buffer> | undefined;
  private readonly backoff: Backoff;
  private retryTimer: NodeJS.Timeout | undefined;
  private repeatTimer: NodeJS.Timeout | undefined;
  private readonly refusals: RefusalRun;
  /** The ping interval in use: keepaliveMs, doubled after each "too many pings" from the server. */
  private keepaliveMs: number;
  /** A set being applied; a response arriving meanwhile waits in `pending` (only the latest is kept). */
  private applying = false;
  private pending: { call: GrpcJs.ClientDuplexStream<Buffer, Buffer>; bytes: Buffer } | undefined;
  /** Content hashes of the set in force and of the last refused one. */
  private appliedKey: string | undefined;
  private refusedKey: string | undefined;
  /** The version ACKed on the current stream ('' on a new one). */
  private streamVersion = '';
  private s: { -readonly [K in keyof XdsStatus]: XdsStatus[K] };

  constructor(private readonly o: XdsClientOptions) {
    this.backoff = new Backoff(o.backoff, o.random);
    this.refusals = new RefusalRun(o.now ?? Date.now);
    this.keepaliveMs = o.keepaliveMs;
    this.s = {
      server: o.serverUrl,
      nodeId: o.node.id,
      state: 'disconnected',
      version: '',
      appliedAt: '',
      accepted: 0,
      refused: 0,
      repeatedNacks: 0,
      connects: 0,
    };
  }

  status(): XdsStatus {
    return { ...this.s };
  }

  async start(): Promise<void> {
    this.grpc = await import('@grpc/grpc-js');
    this.connect();
  }

  stop(): void {
    this.s.state = 'stopped';
    clearTimeout(this.retryTimer);
    clearTimeout(this.repeatTimer);
    this.closeStream();
  }

  private credentials(grpc: typeof GrpcJs): GrpcJs.ChannelCredentials {
    const t = this.o.tls;
    if (t === undefined) return grpc.credentials.createInsecure();
    const read = (f: string) => (f === '' ? null : this.o.readFile(f));
    return grpc.credentials.createSsl(read(t.caFile), read(t.keyFile), read(t.certFile));
  }

  private connect(): void {
    const grpc = this.grpc!;
    if (this.s.state === 'stopped') return;
    this.s.state = 'connecting';
    this.s.connects++;
    this.streamVersion = '';
    let credentials: GrpcJs.ChannelCredentials;
    try {
      credentials = this.credentials(grpc);
    } catch (err) {
      this.broken(`cannot read the TLS files: ${(err as Error).message}`);
      return;
    }
    const options: GrpcJs.ChannelOptions = {};
    if (this.o.maxMessageBytes > 0) options['grpc.max_receive_message_length'] = this.o.maxMessageBytes;
    if (this.keepaliveMs > 0) {
      options['grpc.keepalive_time_ms'] = this.keepaliveMs;
      options['grpc.keepalive_timeout_ms'] = this.o.keepaliveTimeoutMs;
    }
    if (this.o.tls !== undefined && this.o.tls.serverName !== '') options['grpc.ssl_target_name_override'] = this.o.tls.serverName;
    const client = new grpc.Client(this.o.serverUrl, credentials, options);
    const metadata = new grpc.Metadata();
    for (const [k, v] of this.o.headers) metadata.set(k, v);
    const call = client.makeBidiStreamRequest<Buffer, Buffer>(
      ADS_METHOD,
      (b) => b,
      (b) => b,
      metadata,
    );
    this.client = client;
    this.call = call;
    let ended = false;
    const end = (reason: string) => {
      if (ended || this.call !== call) return;
      ended = true;
      this.broken(reason);
    };
    call.on('metadata', () => {
      if (this.call === call) this.s.state = 'connected';
    });
    call.on('data', (bytes: Buffer) => {
      if (this.call !== call) return;
      this.s.state = 'connected';
      this.backoff.reset();
      this.enqueue(call, bytes);
    });
    call.on('error', (err: Error) => end(explainCallError(err, this.o.serverUrl, 'the xDS server')));
    call.on('end', () => end('the server ended the stream'));
    call.on('status', (st: GrpcJs.StatusObject) => {
      if (st.code === grpc.status.RESOURCE_EXHAUSTED && /bandwidth exhausted|too_many_pings/i.test(st.details)) this.slowPings();
      end(st.code === grpc.status.OK ? 'the server closed the stream' : explainCallError(st, this.o.serverUrl, 'the xDS server'));
    });
    this.send(call, { versionInfo: '', responseNonce: '' });
  }

  /** The server closed the connection for "too many pings" (grpc-js reports ENHANCE_YOUR_CALM so). */
  private slowPings(): void {
    if (this.keepaliveMs <= 0) return;
    this.keepaliveMs = Math.min(this.keepaliveMs * 2, 2 ** 31 - 1);
    this.o.log.info('the xDS server finds the keepalive pings too frequent; pinging less often from now on', {
      server: this.o.serverUrl,
      keepaliveMs: this.keepaliveMs,
    });
  }

  private closeStream(): void {
    const call = this.call;
    const client = this.client;
    this.call = undefined;
    this.client = undefined;
    clearTimeout(this.repeatTimer);
    call?.cancel();
    client?.close();
  }

  private broken(reason: string): void {
    if (this.s.state === 'stopped') return;
    const wasConnected = this.s.state === 'connected';
    this.closeStream();
    this.s.state = 'disconnected';
    this.s.lastError = reason;
    const waitMs = this.backoff.next();
    const fields = { server: this.o.serverUrl, reason, retryInMs: waitMs };
    if (this.s.version === '')
      // Nothing was ever received: there are no rules in force to keep, and no limit applies until the first set.
      this.o.log.warn(
        `xDS server ${wasConnected ? 'stream down' : 'not reached'}; no rules received from it yet, so no limit applies until the first set arrives`,
        fields,
      );
    else if (wasConnected) this.o.log.warn('xDS stream down; the rules in force stay in force', fields);
    else this.o.log.info('xDS server not reached; the rules in force stay in force', fields);
    this.retryTimer = setTimeout(() => this.connect(), waitMs);
    this.retryTimer.unref();
  }

  private enqueue(call: GrpcJs.ClientDuplexStream<Buffer, Buffer>, bytes: Buffer): void {
    if (this.applying) {
      this.pending = { call, bytes };
      return;
    }
    this.applying = true;
    void this.onResponse(call, bytes)
      .catch((err: unknown) => this.o.log.error('xDS response not handled', { error: err }))
      .finally(() => {
        this.applying = false;
        const next = this.pending;
        this.pending = undefined;
        if (next !== undefined && next.call === this.call) this.enqueue(next.call, next.bytes);
      });
  }

  /** Writes on `call` if it is still the stream in use (an answer to a response of a broken stream is dropped). */
  private send(call: GrpcJs.ClientDuplexStream<Buffer, Buffer> | undefined, r: { versionInfo: string; responseNonce: string; errorDetail?: string }): void {
    if (call === undefined || call !== this.call) return;
    call.write(encodeDiscoveryRequest({ ...r, node: this.o.node, typeUrl: RATE_LIMIT_CONFIG_TYPE }));
  }

  private async onResponse(call: GrpcJs.ClientDuplexStream<Buffer, Buffer>, bytes: Buffer): Promise<void> {
    clearTimeout(this.repeatTimer); // a repeat NACK still waiting answers a response the server has moved past
    let resp: DiscoveryResponse;
    try {
      resp = decodeDiscoveryResponse(bytes);
    } catch (err) {
      this.refuse(call, { versionInfo: '', nonce: '', resources: [], typeUrl: '' }, `${(err as Error).message}`, undefined);
      return;
    }
    const key = createHash('sha256').update(resp.typeUrl);
    for (const r of resp.resources) key.update(`\0${r.typeUrl}\0${r.value.length}\0`).update(r.value);
    const digest = key.digest('hex');
    if (digest === this.refusedKey) {
      this.s.repeatedNacks++;
      this.nack(call, resp.nonce, this.s.lastNack?.error ?? '');
      return;
    }
    if (resp.typeUrl !== RATE_LIMIT_CONFIG_TYPE) {
      this.refuse(call, resp, `type ${resp.typeUrl || '(none)'} is not ${RATE_LIMIT_CONFIG_TYPE}`, digest);
      return;
    }
    if (digest !== this.appliedKey) {
      const { files, errors } = await resourcesToFilesInSlices(resp.resources, { maxResourceBytes: this.o.maxResourceBytes }, DECODE_SLICE_MS);
      const result: ApplyResult = errors.length > 0 ? { ok: false, errors } : await this.o.apply(files, resp.versionInfo);
      if (!result.ok) {
        this.refuse(call, resp, result.errors.join('\n'), digest);
        return;
      }
      this.appliedKey = digest;
      this.o.log.info('xDS rules applied', { version: resp.versionInfo, resources: resp.resources.length });
    }
    this.refusedKey = undefined;
    this.refusals.reset();
    this.streamVersion = resp.versionInfo;
    this.s.version = resp.versionInfo;
    this.s.appliedAt = new Date().toISOString();
    this.s.accepted++;
    this.send(call, { versionInfo: resp.versionInfo, responseNonce: resp.nonce });
  }

  private refuse(call: GrpcJs.ClientDuplexStream<Buffer, Buffer>, resp: DiscoveryResponse, error: string, digest: string | undefined): void {
    const detail = error.length > MAX_DETAIL_CHARS ? `${error.slice(0, MAX_DETAIL_CHARS)}…` : error;
    this.refusedKey = digest;
    this.s.refused++;
    this.s.lastNack = { at: new Date().toISOString(), version: resp.versionInfo, nonce: resp.nonce, error: detail };
    const verdict = this.refusals.shouldLog(detail);
    if (verdict.log) {
      const fields = { version: resp.versionInfo, inForce: this.s.version, errors: detail.split('\n') };
      this.o.log.error(
        'xDS rules refused (NACK); keeping the rules in force',
        verdict.unlogged > 0 ? { ...fields, refusalsNotLogged: verdict.unlogged } : fields,
      );
    }
    this.nack(call, resp.nonce, detail);
  }

  /** Sends a NACK, at once or after the wait of the run of refusals it belongs to (refusals.ts). */
  private nack(call: GrpcJs.ClientDuplexStream<Buffer, Buffer>, nonce: string, detail: string): void {
    const wait = this.refusals.nextWait();
    const request = { versionInfo: this.streamVersion, responseNonce: nonce, errorDetail: detail };
    clearTimeout(this.repeatTimer);
    if (wait === 0) {
      this.send(call, request);
      return;
    }
    this.repeatTimer = setTimeout(() => this.send(call, request), wait);
    this.repeatTimer.unref();
  }
}
