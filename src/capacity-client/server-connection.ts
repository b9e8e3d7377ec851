/**
 * The client's link to the capacity servers: one gRPC channel per address, the current address (the master as
 * far as we know), and the mastership protocol. A Doorman server that is not the master answers any call with
 * only `mastership` (no gRPC error): the client moves to the `master_address` it names and asks again, a bounded
 * number of times. After a failed call the next address of the configured list is tried (several replicas of
 * our service on one Redis are all masters, so any of them will do); a fresh address is asked `Discovery` first.
 */
import * as grpc from '@grpc/grpc-js';
import { CapacityError } from './capacity-error.js';
import type { WireDiscoveryResponse, WireGetCapacityRequest, WireGetCapacityResponse, WireMastership, WireReleaseCapacityResponse } from './doorman-wire.js';
import { capacityClientConstructor } from './doorman-wire.js';

export interface ConnectionOptions {
  /** host:port of the capacity servers; the first is tried first. */
  readonly servers: readonly string[];
  readonly credentials?: grpc.ChannelCredentials;
  /** Deadline of each call, in ms. */
  readonly rpcTimeoutMs: number;
  /** Mastership redirects followed within one call before giving up. */
  readonly maxRedirects: number;
}

type Unary<Req, Res> = (request: Req, options: grpc.CallOptions, callback: (error: grpc.ServiceError | null, response?: Res) => void) => void;

export class Connection {
  private readonly channels = new Map<string, grpc.Client>();
  private next = 0;
  private currentAddress: string;
  /** Whether the current address has answered since we moved to it (else ask Discovery first). */
  private confirmed = false;

  constructor(private readonly options: ConnectionOptions) {
    if (options.servers.length === 0) throw new TypeError('capacity client: at least one server address is needed');
    this.currentAddress = options.servers[0]!;
  }

  /** The server the next call goes to. */
  get address(): string {
    return this.currentAddress;
  }

  async getCapacity(request: WireGetCapacityRequest): Promise<WireGetCapacityResponse> {
    return this.withMaster<WireGetCapacityRequest, WireGetCapacityResponse>('GetCapacity', request, (r) =>
      (r.response?.length ?? 0) === 0 ? r.mastership : undefined,
    );
  }

  async releaseCapacity(clientId: string, resourceIds: string[]): Promise<WireReleaseCapacityResponse> {
    return this.withMaster('ReleaseCapacity', { client_id: clientId, resource_id: resourceIds }, (r: WireReleaseCapacityResponse) => r.mastership);
  }

  /** Moves on to the next configured address (after a failed call). */
  failOver(): void {
    this.next = (this.next + 1) % this.options.servers.length;
    this.moveTo(this.options.servers[this.next]!);
  }

  close(): void {
    for (const channel of this.channels.values()) channel.close();
    this.channels.clear();
  }

  private moveTo(address: string): void {
    if (address !== this.currentAddress) this.confirmed = false;
    this.currentAddress = address;
  }

  /**
   * Calls `method` on the master: a mastership answer naming another address moves there and asks again; one
   * naming none (or ourselves again, endlessly) is an error the refresh loop backs off from.
   */
  private async withMaster<Req, Res>(method: string, request: Req, redirectOf: (response: Res) => WireMastership | null | undefined): Promise<Res> {
    for (let hop = 0; hop <= this.options.maxRedirects; hop++) {
      if (!this.confirmed) await this.discover();
      const response = await this.call<Req, Res>(method, request);
      const mastership = redirectOf(response);
      if (mastership === undefined || mastership === null) {
        this.confirmed = true;
        return response;
      }
      const master = mastership.master_address ?? '';
      if (master === '') throw new CapacityError('CAPACITY_NO_MASTER', `${this.currentAddress} is not the master and knows none`);
      this.moveTo(master);
      this.confirmed = true; // the master was named by a server: ask it directly, Discovery would add a round trip
    }
    throw new CapacityError('CAPACITY_REDIRECT_LOOP', `more than ${this.options.maxRedirects} mastership redirects (last: ${this.currentAddress})`);
  }

  /** Discovery on a fresh address: follow it to the master it names (bounded by maxRedirects). */
  private async discover(): Promise<void> {
    for (let hop = 0; hop <= this.options.maxRedirects; hop++) {
      const answer = await this.call<object, WireDiscoveryResponse>('Discovery', {});
      const master = answer.mastership?.master_address ?? '';
      if (answer.is_master === true || master === '' || master === this.currentAddress) break;
      this.moveTo(master);
    }
    this.confirmed = true;
  }

  private call<Req, Res>(method: string, request: Req): Promise<Res> {
    const client = this.channel(this.currentAddress) as unknown as Record<string, Unary<Req, Res>>;
    const deadline = Date.now() + this.options.rpcTimeoutMs;
    const address = this.currentAddress;
    return new Promise((resolve, reject) => {
      client[method]!.call(client, request, { deadline }, (error, response) => {
        if (error !== null || response === undefined) {
          reject(new CapacityError('CAPACITY_UNAVAILABLE', `${method} on ${address}: ${error?.message ?? 'no response'}`, { cause: error }));
        } else resolve(response);
      });
    });
  }

  private channel(address: string): grpc.Client {
    let channel = this.channels.get(address);
    if (channel === undefined) {
      const Ctor = capacityClientConstructor();
      channel = new Ctor(address, this.options.credentials ?? grpc.credentials.createInsecure());
      this.channels.set(address, channel);
    }
    return channel;
  }
}
