/** The LeaseBackend on a RedisStore's own connection (so claims share its pipelines and its round-trip count). */
import type { RedisStore } from '../storage/redis/redis-store.js';
import { LeaseScripts, type ClaimArgs, type ClaimReply, type GiveBackArgs } from '../storage/redis/lease-scripts.js';
import type { LeaseBackend } from './lease-manager.js';

export class RedisLeaseBackend implements LeaseBackend {
  private readonly scripts: LeaseScripts;

  constructor(private readonly redis: RedisStore) {
    this.scripts = new LeaseScripts(redis.connection);
  }

  claim(args: ClaimArgs, nowMs: number): Promise<ClaimReply> {
    return this.scripts.claim(args, nowMs);
  }

  giveBack(args: GiveBackArgs, nowMs: number): Promise<number> {
    return this.scripts.giveBack(args, nowMs);
  }

  connected(): boolean {
    return this.redis.health().connected;
  }
}
