/**
 * The peers an Envoy under test talks to besides the service: a small upstream HTTP server that records every
 * request it receives (method, path, headers, body), and an identity provider for jwt_authn: an EC P-256 key
 * made with node:crypto, its JWKS served over HTTPS (envoy.yaml's `auth` cluster speaks TLS), and ES256 tokens
 * signed with it.
 */
import { createSign, generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TestPki } from './tls.js';

export interface UpstreamRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

export interface Upstream {
  readonly port: number;
  /** Every request received, oldest first (bounded: the oldest are dropped past 10,000). */
  readonly requests: UpstreamRequest[];
  close(): Promise<void>;
}

export type UpstreamHandler = (req: UpstreamRequest, res: ServerResponse) => void;

/** Answers 200 with a JSON echo of the path unless `handler` answers itself. */
const ECHO: UpstreamHandler = (req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ upstream: true, url: req.url }));
};

function listen(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
  });
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

function recording(requests: UpstreamRequest[], handler: UpstreamHandler): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const seen = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      requests.push(seen);
      if (requests.length > 10_000) requests.shift();
      handler(seen, res);
    });
  };
}

/** The upstream HTTP/1.1 server on 127.0.0.1 (a free port). */
export async function startUpstream(handler: UpstreamHandler = ECHO): Promise<Upstream> {
  const requests: UpstreamRequest[] = [];
  const server = createHttpServer(recording(requests, handler));
  const port = await listen(server);
  return { port, requests, close: () => closeServer(server) };
}

export interface IdentityProvider {
  /** The HTTPS port serving the JWKS (any path). */
  readonly port: number;
  readonly jwks: { keys: Record<string, unknown>[] };
  /** How many times the JWKS was fetched. */
  fetches(): number;
  /** An ES256 token with these claims plus iss/aud/exp (1 h) unless given. */
  sign(claims: Record<string, unknown>): string;
  close(): Promise<void>;
}

const b64url = (data: Buffer | string): string => Buffer.from(data).toString('base64url');

export function signEs256(key: KeyObject, kid: string, claims: Record<string, unknown>): string {
  const input = `${b64url(JSON.stringify({ alg: 'ES256', typ: 'JWT', kid }))}.${b64url(JSON.stringify(claims))}`;
  const signature = createSign('sha256').update(input).sign({ key, dsaEncoding: 'ieee-p1363' });
  return `${input}.${b64url(signature)}`;
}

/**
 * Issuer and audience default to envoy.yaml's (`https://idp.example.com/`, `web`). The certificate comes from
 * makeTestPki (its name is not idp.example.com; Envoy's `auth` cluster has no validation_context, so it checks none).
 */
export async function startIdentityProvider(pki: TestPki, issuer = 'https://idp.example.com/', audience = 'web'): Promise<IdentityProvider> {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const kid = randomUUID();
  const jwks = { keys: [{ ...publicKey.export({ format: 'jwk' }), kid, alg: 'ES256', use: 'sig' }] };
  let fetches = 0;
  const server = createHttpsServer({ cert: readFileSync(pki.serverCert), key: readFileSync(pki.serverKey) }, (_req, res) => {
    fetches++;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(jwks));
  });
  const port = await listen(server);
  return {
    port,
    jwks,
    fetches: () => fetches,
    sign: (claims) => signEs256(privateKey, kid, { iss: issuer, aud: audience, exp: Math.floor(Date.now() / 1000) + 3600, ...claims }),
    close: () => closeServer(server),
  };
}
