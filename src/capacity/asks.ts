/**
 * The requests of GetCapacity and GetServerCapacity as the decisions take them: one Ask per resource, with the
 * values a decision can work with (docs/capacity.md, "What a client can rely on"):
 * - wants: any finite number ≥ 0 (negative or not finite: INVALID_ARGUMENT); above MAX_AMOUNT it counts as
 *   MAX_AMOUNT, so that no sum over the leases of a resource can leave the finite numbers;
 * - the reported `has` (learning mode echoes it): not finite or negative counts as 0, as if none were reported;
 *   above MAX_AMOUNT as MAX_AMOUNT;
 * - GetServerCapacity: a band with num_clients < 1 is INVALID_ARGUMENT "subclients should be > 0", as Doorman;
 * - ids of any length, the empty one included (Doorman's rule; the request size is the only bound); an id is
 *   kept under its key (ids.ts idKey: itself, or its SHA-256 when longer than 1,024 bytes);
 * - a resource named twice or more: the last entry is decided, and every entry of it gets that answer.
 */
import { InvalidRequestError } from '../vocab/errors.js';
import { idKey, idText } from './ids.js';
import type * as M from './doorman-messages.js';

/** Largest wants and has taken as they are: 10^250 × any number of leases stays far below Number.MAX_VALUE. */
export const MAX_AMOUNT = 1e250;

/** One client's request for one resource, as both GetCapacity and GetServerCapacity come down to it. */
export interface Ask {
  readonly client: string;
  readonly wants: number;
  readonly subclients: number;
  readonly reportedHas: number | undefined;
  readonly priority: number;
}

/** One resource to decide: its key, the id as sent (echoed, and matched to the templates) and the ask. */
export interface ResourceAsk {
  readonly id: string;
  readonly sent: string;
  readonly ask: Ask;
}

/** The asks of a request: `decide` holds each resource once (its last entry), `entry` maps each entry to it. */
export interface Asks {
  readonly decide: ResourceAsk[];
  /** For entry i of the request, the index in `decide` of its resource. */
  readonly entry: number[];
}

/** A resource as an error names it: its id as text, cut short. */
function named(id: string): string {
  const text = idText(id);
  return `resource ${JSON.stringify(text.length > 64 ? `${text.slice(0, 64)}…` : text)}`;
}

function wantsOf(wants: number, what: string): number {
  if (!(wants >= 0) || wants === Infinity) throw new InvalidRequestError(`${what}: wants must be a finite number ≥ 0, not ${wants}`);
  return Math.min(wants, MAX_AMOUNT);
}

function hasOf(has: number | undefined): number | undefined {
  if (has === undefined) return undefined;
  return has >= 0 && has !== Infinity ? Math.min(has, MAX_AMOUNT) : 0;
}

const ONE: number[] = [0];

/** Each resource once, its last entry deciding (asks in the order of their last entries). */
function unique(items: ResourceAsk[]): Asks {
  if (items.length === 1) return { decide: items, entry: ONE };
  const last = new Map<string, number>();
  for (let i = 0; i < items.length; i++) last.set(items[i]!.id, i);
  if (last.size === items.length) return { decide: items, entry: items.map((_, i) => i) };
  const decide: ResourceAsk[] = [];
  const slot = new Map<string, number>();
  for (let i = 0; i < items.length; i++) {
    const id = items[i]!.id;
    if (last.get(id) === i) {
      slot.set(id, decide.length);
      decide.push(items[i]!);
    }
  }
  return { decide, entry: items.map((it) => slot.get(it.id)!) };
}

export function capacityAsks(req: M.GetCapacityRequest): Asks {
  const client = idKey(req.client_id);
  return unique(
    req.resource.map((r) => ({
      id: idKey(r.resource_id),
      sent: r.resource_id,
      ask: { client, wants: wantsOf(r.wants, named(r.resource_id)), subclients: 1, reportedHas: hasOf(r.has?.capacity), priority: r.priority },
    })),
  );
}

/** Each resource's wants and num_clients summed over its bands (its priority: the highest band's). */
export function serverCapacityAsks(req: M.GetServerCapacityRequest): Asks {
  const client = idKey(req.server_id);
  return unique(
    req.resource.map((r) => {
      let wants = 0;
      let subclients = 0;
      let priority = 0;
      for (const band of r.wants) {
        wants += wantsOf(band.wants, named(r.resource_id));
        if (!(band.num_clients >= 1)) throw new InvalidRequestError(`${named(r.resource_id)}: subclients should be > 0, not ${band.num_clients}`);
        subclients += Math.trunc(band.num_clients);
        priority = Math.max(priority, band.priority);
      }
      // A resource asked with no band at all still holds a lease; it counts as one subclient so shares stay finite.
      return {
        id: idKey(r.resource_id),
        sent: r.resource_id,
        ask: { client, wants: Math.min(wants, MAX_AMOUNT), subclients: Math.max(1, subclients), reportedHas: hasOf(r.has?.capacity), priority },
      };
    }),
  );
}
