/** gRPC clients for tests, built from the project's .proto files (see raw-rls.ts for an independent one). */
import * as grpc from '@grpc/grpc-js';
import { clientFor, loadProtos } from '../../src/server/grpc/protos.js';

export type { WireResponse, WireStatus } from '../../src/server/rls/proto-objects.js';
import type { WireResponse } from '../../src/server/rls/proto-objects.js';

type Unary = (req: unknown, options: grpc.CallOptions, cb: (e: grpc.ServiceError | null, r: unknown) => void) => void;

export class RlsTestClient {
  private readonly rls: grpc.Client & Record<string, Unary>;
  private readonly health: grpc.Client & Record<string, Unary> & { Watch(req: unknown): grpc.ClientReadableStream<{ status: string }> };

  /** `address`: host:port or unix:/path; plaintext unless given credentials (TLS tests). */
  constructor(address: string, credentials: grpc.ChannelCredentials = grpc.credentials.createInsecure(), options: grpc.ChannelOptions = {}) {
    const protos = loadProtos();
    this.rls = new (clientFor(protos.rls, 'RateLimitService'))(address, credentials, options) as never;
    this.health = new (clientFor(protos.health, 'Health'))(address, credentials, options) as never;
  }

  private call<T>(client: Record<string, Unary>, method: string, req: unknown, timeoutMs: number): Promise<T> {
    return new Promise((resolve, reject) => {
      client[method]!.call(client, req, { deadline: Date.now() + timeoutMs }, (e, r) => (e ? reject(e) : resolve(r as T)));
    });
  }

  shouldRateLimit(req: unknown, timeoutMs = 5000): Promise<WireResponse> {
    return this.call(this.rls, 'ShouldRateLimit', req, timeoutMs);
  }

  /** Descriptors given as [['k','v'], ...] lists. */
  ask(domain: string, descriptors: string[][][], hits = 0): Promise<WireResponse> {
    return this.shouldRateLimit({ domain, descriptors: descriptors.map((d) => ({ entries: d.map(([key, value]) => ({ key, value })) })), hits_addend: hits });
  }

  healthCheck(service: string): Promise<{ status: string }> {
    return this.call(this.health, 'Check', { service }, 5000);
  }

  healthWatch(service: string): grpc.ClientReadableStream<{ status: string }> {
    return this.health.Watch({ service });
  }

  close(): void {
    this.rls.close();
    this.health.close();
  }
}
