/**
 * GRPC_TLS_CLIENT_SAN: with mutual TLS, the client certificate (already verified against GRPC_TLS_CLIENT_CA) must
 * carry a given name as a subject alternative name: DNS names (wildcards included) when the name is a host name,
 * IP addresses when it is an address, as a TLS client checks a server's name. A connection whose certificate does
 * not is closed right after the handshake, before HTTP/2 starts on it.
 */
import { checkServerIdentity, type PeerCertificate, type TLSSocket } from 'node:tls';

/** Why `cert` does not carry `san`, or undefined when it does. */
export function clientSanMismatch(san: string, cert: PeerCertificate | undefined): string | undefined {
  if (cert === undefined || Object.keys(cert).length === 0) return 'no client certificate';
  if (!cert.subjectaltname) return `the client certificate (CN ${String(cert.subject?.CN ?? '')}) has no subject alternative name; ${san} expected`;
  return checkServerIdentity(san, cert)?.message;
}

type SecureServer = { prependListener(event: 'secureConnection', listener: (socket: TLSSocket) => void): unknown };

/** Closes every TLS connection of `server` whose client certificate does not carry `san`; `onRefused` says why. */
export function requireClientSan(server: SecureServer, san: string, onRefused: (reason: string) => void): void {
  // Before node:http2's own listener, which starts the session on the socket.
  server.prependListener('secureConnection', (socket) => {
    const reason = clientSanMismatch(san, socket.getPeerCertificate());
    if (reason === undefined) return;
    onRefused(reason);
    socket.destroy();
  });
}
