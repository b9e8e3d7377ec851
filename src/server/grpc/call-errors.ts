/**
 * A failed gRPC call as a person reads it: what is wrong and what to check, instead of grpc-js's text
 * ("UNAVAILABLE No connection established. Last error: … Resolution note: "). Used wherever such an error
 * reaches people: `ratelimit query`, the xDS client's log lines and /rules `lastError`.
 */

/** What grpc-js rejects a call with (a ServiceError, or a stream's error event). */
export interface CallErrorLike {
  readonly code?: number;
  readonly details?: string;
  readonly message?: string;
}

const CODE_NAMES: Readonly<Record<number, string>> = {
  1: 'CANCELLED',
  2: 'UNKNOWN',
  3: 'INVALID_ARGUMENT',
  4: 'DEADLINE_EXCEEDED',
  5: 'NOT_FOUND',
  7: 'PERMISSION_DENIED',
  8: 'RESOURCE_EXHAUSTED',
  12: 'UNIMPLEMENTED',
  13: 'INTERNAL',
  14: 'UNAVAILABLE',
  16: 'UNAUTHENTICATED',
};

/** grpc-js's detail without its boilerplate: the last error alone, no timestamp, no empty resolution note. */
function cause(details: string): string {
  const last = /Last error: (?:Error: )?([\s\S]*?)(?: \(\d{4}-\d\d-\d\dT[^)]*\))?\.?\s*(?:Resolution note: ([\s\S]*))?$/.exec(details);
  if (last === null) return details.trim();
  const note = last[2]?.trim();
  return `${last[1]!.trim()}${note ? ` (${note})` : ''}`;
}

/**
 * `target` is the address dialled (host:port); `service` what was asked there (e.g. "the rate-limit service").
 * Returns one sentence: what went wrong, then what to check.
 */
export function explainCallError(err: CallErrorLike, target: string, service: string): string {
  const details = err.details ?? err.message ?? 'no detail';
  const code = err.code ?? -1;
  const why = cause(details);
  if (code === 14) {
    if (/ECONNREFUSED/.test(why))
      return `cannot reach ${service} at ${target}: connection refused (nothing listens there); check that it runs and the host:port`;
    if (/Name resolution failed|ENOTFOUND|EAI_AGAIN/.test(details))
      return `cannot reach ${service} at ${target}: the host name does not resolve; check the address`;
    if (/SSL|TLS|certificate|wrong version number/i.test(why))
      return `cannot reach ${service} at ${target}: the TLS handshake failed (${why.split('\n')[0]!.replace(/^[0-9A-F]+:error:[0-9A-F]+:/, '')}); check that both sides agree on TLS or plaintext, and the CA`;
    if (/Protocol error/.test(why))
      return `cannot reach ${service} at ${target}: the peer does not speak gRPC (HTTP/2); check that the port is the gRPC port, not an HTTP one`;
    if (/ETIMEDOUT|EHOSTUNREACH|ENETUNREACH/.test(why)) return `cannot reach ${service} at ${target}: ${why}; check the network path (firewall, routes)`;
    return `cannot reach ${service} at ${target}: ${why}; check that it runs and the address`;
  }
  if (code === 4) return `${service} at ${target} did not answer within the deadline; check that it is up and not overloaded, or allow more time`;
  if (code === 12)
    return `${target} does not serve ${service} (${why}); check that the address is its gRPC port (not the admin HTTP port) and that it is the right program`;
  if (code === 16 || code === 7) return `${service} at ${target} refused the call (${CODE_NAMES[code]}: ${why}); check the credentials`;
  return `${service} at ${target} answered ${CODE_NAMES[code] ?? `code ${code}`}: ${why}`;
}
