/**
 * An ext_authz v3 client for tests: CheckRequests built as Envoy builds them,
 * encoded by protobufjs from proto/envoy/service/auth/v3/*.proto (written from Envoy's field numbers), so
 * the server's hand-written decoder and encoder are checked against an independent codec. `checkRaw`
 * sends arbitrary bytes (malformed requests) and returns the raw reply.
 */
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';
import { PROTO_ROOT } from '../../src/server/grpc/protos.js';

const definition = protoLoader.loadSync(['envoy/service/auth/v3/external_auth.proto'], {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [PROTO_ROOT],
});
const pkg = grpc.loadPackageDefinition(definition) as unknown as {
  envoy: { service: { auth: { v3: { Authorization: grpc.ServiceClientConstructor } } } };
};
const Authorization = pkg.envoy.service.auth.v3.Authorization;

export interface HttpRequestSpec {
  /** Client IP as Envoy's trusted downstream address (source.address.socket_address.address). */
  ip?: string;
  /** A Unix socket peer instead of an IP (source.address.pipe). */
  pipe?: string;
  method?: string;
  path?: string;
  host?: string;
  headers?: Record<string, string>;
  /** header_map (encode_raw_headers: true): repeated, raw_value only. */
  rawHeaders?: [string, string][];
  contextExtensions?: Record<string, string>;
}

/** A CheckRequest as Envoy's ext_authz HTTP filter fills it (fields we do not read included, as Envoy sends them). */
export function envoyCheckRequest(spec: HttpRequestSpec): Record<string, unknown> {
  const source =
    spec.pipe !== undefined
      ? { address: { pipe: { path: spec.pipe } } }
      : { address: { socket_address: { address: spec.ip ?? '10.0.0.1', port_value: 53_124 } } };
  const headers = {
    ':authority': spec.host ?? 'app.example.com',
    ':method': spec.method ?? 'GET',
    ':path': spec.path ?? '/',
    'x-request-id': 'b7c5a3a0-1',
    ...(spec.headers ?? {}),
  };
  return {
    attributes: {
      source,
      destination: { address: { socket_address: { address: '10.9.9.9', port_value: 8080 } } },
      request: {
        time: { seconds: '1700000000', nanos: 0 },
        http: {
          id: 'b7c5a3a0-1',
          method: spec.method ?? 'GET',
          ...(spec.rawHeaders === undefined
            ? { headers }
            : { header_map: { headers: spec.rawHeaders.map(([key, v]) => ({ key, raw_value: Buffer.from(v) })) } }),
          path: spec.path ?? '/',
          host: spec.host ?? 'app.example.com',
          scheme: 'http',
          size: '-1',
          protocol: 'HTTP/1.1',
        },
      },
      context_extensions: spec.contextExtensions ?? {},
    },
  };
}

export interface WireHeaderOption {
  header: { key: string; value: string };
  append: { value: boolean } | null;
  append_action: string;
}

export interface WireCheckResponse {
  status: { code: number; message: string } | null;
  http_response?: 'denied_response' | 'ok_response' | 'error_response';
  denied_response?: { status: { code: string | number } | null; headers: WireHeaderOption[]; body: string };
  ok_response?: { headers: WireHeaderOption[]; response_headers_to_add: WireHeaderOption[] };
}

export class AuthzTestClient {
  private readonly client: grpc.Client & {
    Check: (req: unknown, md: grpc.Metadata, opts: grpc.CallOptions, cb: (e: grpc.ServiceError | null, r: WireCheckResponse) => void) => void;
  };

  constructor(address: string) {
    this.client = new Authorization(address, grpc.credentials.createInsecure()) as never;
  }

  check(spec: HttpRequestSpec, timeoutMs = 5000): Promise<WireCheckResponse> {
    return this.send(envoyCheckRequest(spec), timeoutMs);
  }

  /** `headers`: request metadata sent with the call (e.g. a `traceparent`). */
  send(request: unknown, timeoutMs = 5000, headers: Record<string, string> = {}): Promise<WireCheckResponse> {
    const metadata = new grpc.Metadata();
    for (const [k, v] of Object.entries(headers)) metadata.set(k, v);
    return new Promise((resolve, reject) => {
      this.client.Check(request, metadata, { deadline: Date.now() + timeoutMs }, (e, r) => (e ? reject(e) : resolve(r)));
    });
  }

  /** Sends `bytes` as the request message and returns the reply's bytes. */
  checkRaw(bytes: Uint8Array, timeoutMs = 5000): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest(
        '/envoy.service.auth.v3.Authorization/Check',
        (b: Buffer) => b,
        (b: Buffer) => b,
        Buffer.from(bytes),
        new grpc.Metadata(),
        { deadline: Date.now() + timeoutMs },
        (e, r) => (e ? reject(e) : resolve(r!)),
      );
    });
  }

  close(): void {
    this.client.close();
  }
}

/** The headers of an answer as [key, value, append] triples (append: the BoolValue, which must be present). */
export function headerTriples(options: readonly WireHeaderOption[]): [string, string, boolean][] {
  return options.map((o) => {
    if (o.append === null) throw new Error(`header ${o.header.key} has no explicit append`);
    return [o.header.key, o.header.value, o.append.value];
  });
}

let codecRoot: protobuf.Root | undefined;

/** protobufjs types of the ext_authz messages (keepCase), to encode expected answers byte for byte. */
export function authzType(name: 'CheckRequest' | 'CheckResponse'): protobuf.Type {
  if (codecRoot === undefined) {
    const root = new protobuf.Root();
    root.resolvePath = (_origin, target) => (target.startsWith('google/protobuf/') ? target : join(PROTO_ROOT, target));
    root.loadSync('envoy/service/auth/v3/external_auth.proto', { keepCase: true });
    codecRoot = root;
  }
  return codecRoot.lookupType(`envoy.service.auth.v3.${name}`);
}

/** The canonical encoding (fields in number order, defaults left out) of a CheckResponse given as a plain object. */
export function encodeExpectedResponse(obj: Record<string, unknown>): Buffer {
  const type = authzType('CheckResponse');
  return Buffer.from(type.encode(type.fromObject(obj)).finish());
}

/** A HeaderValueOption as our answers write it: append explicit (false = replace), append_action to match. */
export function option(key: string, value: string, append = false): Record<string, unknown> {
  return { header: { key, value }, append: append ? { value: true } : {}, ...(append ? {} : { append_action: 2 }) };
}
