/**
 * Runs a shipped Envoy config as written, with a few substitutions (docs/envoy.md, "Running the shipped config
 * in tests"): the YAML is parsed and only the addresses are replaced, field by field, at paths that must
 * exist. A shipped config that moves or renames what a substitution targets fails loudly here instead of being
 * silently tested in a shape nobody ships.
 *
 * Paths are dotted field names; `name[key=value]` picks the element of list `name` whose `key` is `value`,
 * `name[2]` picks by index: `static_resources.clusters[name=ratelimit].connect_timeout`.
 */
/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-member-access -- walks parsed YAML of any shape */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

type Obj = Record<string, any>;

/** `host:port` (port 0: Envoy picks one), or a Unix socket path for a `pipe` address. */
export type EnvoyAddress = { address: string; port: number } | { pipe: string };

export interface EnvoyOverrides {
  /** Listener name → address. Every listener not named binds 127.0.0.1:0 (read the port back with listenerPort). */
  listeners?: Record<string, EnvoyAddress>;
  /**
   * Cluster name → the one endpoint it should reach: in envoy.yaml `ratelimit` (the service), `app` (the
   * upstream) and `auth` (the JWKS server of jwt_authn; it speaks TLS and Envoy verifies no certificate there
   * unless a validation_context is added, so a test serves its JWKS over HTTPS with a throw-away certificate).
   */
  clusters?: Record<string, EnvoyAddress>;
  /** Further `path: value` replacements (a path as described above); applied last. */
  set?: Record<string, unknown>;
}

const SEGMENT = /^([^[\]]+)(?:\[(?:(\d+)|([^=\]]+)=([^\]]*))\])?$/;

function step(node: any, segment: string, path: string): { parent: any; key: string | number } {
  const m = SEGMENT.exec(segment);
  if (!m) throw new Error(`envoy config path ${path}: cannot read segment "${segment}"`);
  const [, field, index, matchKey, matchValue] = m as unknown as [string, string, string | undefined, string | undefined, string | undefined];
  if (node === null || typeof node !== 'object' || !(field in node)) throw new Error(`envoy config path ${path}: no field "${field}"`);
  if (index === undefined && matchKey === undefined) return { parent: node, key: field };
  const list: unknown = node[field];
  if (!Array.isArray(list)) throw new Error(`envoy config path ${path}: "${field}" is not a list`);
  const at =
    index !== undefined ? Number(index) : list.findIndex((e: any) => e !== null && typeof e === 'object' && String(e[matchKey as string]) === matchValue);
  if (at < 0 || at >= list.length) throw new Error(`envoy config path ${path}: no element ${segment}`);
  return { parent: list, key: at };
}

/** Splits a path at the dots outside brackets (a selected value may contain dots: `[name=envoy.filters.http.router]`). */
function segmentsOf(path: string): string[] {
  return path.match(/(?:[^.[\]]|\[[^\]]*\])+/g) ?? [];
}

/** The value at `path`; throws naming the first segment that does not exist. */
export function getPath(doc: unknown, path: string): any {
  let node: any = doc;
  for (const segment of segmentsOf(path)) {
    const { parent, key } = step(node, segment, path);
    node = parent[key];
  }
  return node;
}

/** Replaces the value at `path` (its parent must exist; the last field may be new). */
export function setPath(doc: unknown, path: string, value: unknown): void {
  const segments = segmentsOf(path);
  const last = segments.pop() as string;
  const parent = segments.length ? getPath(doc, segments.join('.')) : doc;
  if (parent === null || typeof parent !== 'object') throw new Error(`envoy config path ${path}: parent is not an object`);
  if (SEGMENT.exec(last)?.[2] !== undefined || last.includes('=')) {
    const { parent: list, key } = step(parent, last, path);
    list[key] = value;
  } else {
    (parent as Obj)[last] = value;
  }
}

function addressOf(a: EnvoyAddress): Obj {
  return 'pipe' in a ? { pipe: { path: a.pipe } } : { socket_address: { address: a.address, port_value: a.port } };
}

/** The path of the one endpoint of cluster `name`; throws if it has more than one (a substitution must be unambiguous). */
export function clusterEndpointPath(doc: unknown, name: string): string {
  const cluster = `static_resources.clusters[name=${name}]`;
  const endpoints = getPath(doc, `${cluster}.load_assignment.endpoints`) as Obj[];
  const count = endpoints.reduce((n, e) => n + ((e['lb_endpoints'] as unknown[] | undefined)?.length ?? 0), 0);
  if (count !== 1) throw new Error(`cluster ${name} has ${count} endpoints; a substitution needs exactly one`);
  return `${cluster}.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address`;
}

/** Applies the substitutions to a parsed config (in place) and returns it. Admin always binds 127.0.0.1:0. */
export function applyOverrides(doc: Obj, overrides: EnvoyOverrides = {}): Obj {
  setPath(doc, 'admin.address', addressOf({ address: '127.0.0.1', port: 0 }));
  for (const listener of (getPath(doc, 'static_resources.listeners') as Obj[] | undefined) ?? []) {
    const name = String(listener['name']);
    setPath(doc, `static_resources.listeners[name=${name}].address`, addressOf(overrides.listeners?.[name] ?? { address: '127.0.0.1', port: 0 }));
  }
  for (const [name, address] of Object.entries(overrides.clusters ?? {})) setPath(doc, clusterEndpointPath(doc, name), addressOf(address));
  for (const [path, value] of Object.entries(overrides.set ?? {})) setPath(doc, path, value);
  return doc;
}

/** A shipped config file (e.g. envoy.yaml) as written, with the substitutions applied. */
export function shippedEnvoyConfig(file: string, overrides: EnvoyOverrides = {}): Obj {
  return applyOverrides(parse(readFileSync(file, 'utf8')) as Obj, overrides);
}

/** The typed_config of HTTP filter `filter` in the first filter chain of listener `listener`. */
export function httpFilterConfig(doc: unknown, listener: string, filter: string): Obj {
  const hcm = getPath(
    doc,
    `static_resources.listeners[name=${listener}].filter_chains[0].filters[name=envoy.filters.network.http_connection_manager].typed_config`,
  ) as Obj;
  return getPath(hcm, `http_filters[name=${filter}].typed_config`) as Obj;
}
