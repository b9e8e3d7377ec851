/**
 * Our capacity service (`ratelimit serve` with CAPACITY_CONFIG, memory backend) as a peer for the capacity
 * client's tests, with the same face as DoormanProcess (capacity-client-doorman.ts): fixed ports so that it can be
 * killed with SIGKILL and started again at the same address, and its own view of a resource (GET /capacity).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DoormanProcess, doormanBinary } from './capacity-client-doorman.js';
import { freePort } from './redis.js';
import { spawnService, type ServiceProcess } from './service-process.js';

/** What the client tests need of a capacity server: ours or the real Doorman. */
export interface CapacityPeer {
  readonly address: string;
  /** Set when the server exited without being killed, with why. */
  readonly crashed?: string | undefined;
  start(): Promise<void>;
  /** SIGKILL: no goodbye to clients. */
  kill(): Promise<void>;
  destroy(): Promise<void>;
  resourceStatus(id: string): Promise<{ capacity: number; sumHas: number; sumWants: number; clients: number } | undefined>;
}

export class OurCapacityServer implements CapacityPeer {
  private service: ServiceProcess | undefined;
  private readonly dir: string;

  private constructor(
    readonly grpcPort: number,
    private readonly httpPort: number,
    config: string,
    private readonly env: Record<string, string>,
  ) {
    this.dir = mkdtempSync(join(tmpdir(), 'rl-capclient-ours-'));
    writeFileSync(join(this.dir, 'resources.yml'), config);
    mkdirSync(join(this.dir, 'rules'));
  }

  static async start(config: string, env: Record<string, string> = {}): Promise<OurCapacityServer> {
    const server = new OurCapacityServer(await freePort(), await freePort(), config, env);
    await server.start();
    return server;
  }

  get address(): string {
    return `127.0.0.1:${this.grpcPort}`;
  }

  async start(): Promise<void> {
    if (this.service) return;
    this.service = await spawnService(
      {
        CONFIG_DIR: join(this.dir, 'rules'), // no rules files: only the capacity service
        CAPACITY_CONFIG: join(this.dir, 'resources.yml'),
        BACKEND: 'memory',
        GRPC_PORT: String(this.grpcPort),
        HTTP_PORT: String(this.httpPort),
        ...this.env,
      },
      60_000,
    ); // a loaded machine can take tens of seconds to start a service from source
  }

  async kill(): Promise<void> {
    const service = this.service;
    if (!service) return;
    this.service = undefined;
    service.child.kill('SIGKILL');
    await service.stop();
  }

  async destroy(): Promise<void> {
    const service = this.service;
    this.service = undefined;
    await service?.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }

  async resourceStatus(id: string): Promise<{ capacity: number; sumHas: number; sumWants: number; clients: number } | undefined> {
    const body = (await (await fetch(`http://127.0.0.1:${this.httpPort}/capacity`)).json()) as {
      resources: { resource_id: string; capacity: number; sum_has: number; sum_wants: number; count: number }[];
    };
    const r = body.resources.find((x) => x.resource_id === id);
    return r === undefined ? undefined : { capacity: r.capacity, sumHas: r.sum_has, sumWants: r.sum_wants, clients: r.count };
  }
}

/**
 * The capacity servers every client test runs against: the real Doorman server (when present; required under
 * CI=true) and ours. Each entry: a name for the test title, and how to start it with a Doorman resource file.
 */
export function capacityPeers(): [string, (config: string) => Promise<CapacityPeer>][] {
  const binary = doormanBinary();
  const peers: [string, (config: string) => Promise<CapacityPeer>][] = [];
  if (binary !== undefined) peers.push(['the real Doorman server', (config) => DoormanProcess.start(binary, config)]);
  peers.push(['our capacity service', (config) => OurCapacityServer.start(config)]);
  return peers;
}
