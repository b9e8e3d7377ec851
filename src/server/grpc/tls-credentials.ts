/**
 * gRPC server TLS from PEM files, reloaded without a restart when the files change.
 *
 * - Start: the certificate chain, key and (for mutual TLS) client CA are read and checked together; any
 *   problem (missing, unreadable, not PEM, key not matching the certificate) throws an error naming the
 *   setting (the caller's label) and the path. No key material ever appears in a message.
 * - Reload: like the rules watcher (config/load/watcher.ts) we watch the DIRECTORIES holding the files, because a
 *   Kubernetes Secret volume swaps a `..data` symlink and never writes `tls.crt` itself; events are
 *   debounced and a poll covers missed ones. The files are re-read by path and, when their bytes changed,
 *   checked as at start. A good set replaces the served one (new handshakes use it; open connections keep
 *   theirs); a bad or half-written set is reported and the last good one stays served, so a rotation caught
 *   between the cert and the key never takes the listener down (grpc-js's FileWatcherCertificateProvider
 *   would drop every connection until the next good read).
 * - Mutual TLS: with a client CA, the handshake requires a client certificate chaining to it.
 */
import { createHash, createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync, watch, type FSWatcher } from 'node:fs';
import { dirname } from 'node:path';
import { createSecureContext, type SecureContextOptions } from 'node:tls';
import * as grpc from '@grpc/grpc-js';

export interface TlsFiles {
  /** PEM certificate chain of the server (leaf first). */
  readonly certFile: string;
  /** PEM private key matching the leaf certificate. */
  readonly keyFile: string;
  /** PEM CA bundle that client certificates must chain to; set = mutual TLS, clients without a certificate refused. */
  readonly clientCaFile?: string;
}

/** How errors name each file, e.g. the setting it came from (`GRPC_TLS_CERT`). */
export interface TlsLabels {
  readonly cert: string;
  readonly key: string;
  readonly clientCa: string;
}

export interface ReloadOptions {
  readonly labels?: TlsLabels;
  /** Quiet time after the last file event before re-reading (default 200 ms). */
  readonly debounceMs?: number;
  /** Re-read this often in case an event was missed (default 30 000 ms; 0 disables). */
  readonly pollIntervalMs?: number;
  /** A changed, valid set of files is now served. */
  readonly onReload?: (info: { notAfter: string }) => void;
  /** A change could not be used (the last good files stay served), or a watcher failed. */
  readonly onError?: (err: Error) => void;
}

const DEFAULT_LABELS: TlsLabels = { cert: 'TLS certificate', key: 'TLS key', clientCa: 'TLS client CA' };

interface Material {
  readonly context: SecureContextOptions;
  readonly fingerprint: string;
  readonly notAfter: string;
}

function readPem(label: string, path: string): Buffer {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (err) {
    throw new Error(`${label} ${path}: cannot read: ${(err as Error).message}`);
  }
  if (!bytes.includes('-----BEGIN ')) throw new Error(`${label} ${path}: not a PEM file (no -----BEGIN line)`);
  return bytes;
}

/** Reads and cross-checks the files; throws an Error naming the label and path of the bad one. */
export function loadTlsMaterial(files: TlsFiles, labels: TlsLabels = DEFAULT_LABELS): Material {
  const cert = readPem(labels.cert, files.certFile);
  const key = readPem(labels.key, files.keyFile);
  const ca = files.clientCaFile === undefined ? undefined : readPem(labels.clientCa, files.clientCaFile);
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(cert);
  } catch (err) {
    throw new Error(`${labels.cert} ${files.certFile}: not a PEM certificate: ${(err as Error).message}`);
  }
  let privateKey;
  try {
    privateKey = createPrivateKey(key);
  } catch (err) {
    throw new Error(`${labels.key} ${files.keyFile}: not a PEM private key: ${(err as Error).message}`);
  }
  if (!leaf.checkPrivateKey(privateKey)) {
    throw new Error(`${labels.key} ${files.keyFile} does not match the certificate in ${labels.cert} ${files.certFile}`);
  }
  if (ca !== undefined) {
    try {
      new X509Certificate(ca);
    } catch (err) {
      throw new Error(`${labels.clientCa} ${files.clientCaFile}: not a PEM certificate: ${(err as Error).message}`);
    }
  }
  const context: SecureContextOptions = { cert, key, ...(ca === undefined ? {} : { ca }) };
  try {
    createSecureContext(context); // what the server will do with them: catches what the checks above miss
  } catch (err) {
    throw new Error(`${labels.cert} ${files.certFile} / ${labels.key} ${files.keyFile}: unusable: ${(err as Error).message}`);
  }
  const fingerprint = createHash('sha256')
    .update(cert)
    .update('\0')
    .update(key)
    .update('\0')
    .update(ca ?? '')
    .digest('hex');
  return { context, fingerprint, notAfter: leaf.validTo };
}

/** grpc-js server credentials over TlsFiles that follow file changes; close() stops watching. */
export class ReloadingServerCredentials extends grpc.ServerCredentials {
  private fingerprint: string;
  private readonly dirWatchers: FSWatcher[] = [];
  private readonly poll: NodeJS.Timeout | undefined;
  private debounce: NodeJS.Timeout | undefined;
  private closed = false;

  /** Throws (see loadTlsMaterial) when the files are not usable now. */
  static create(files: TlsFiles, options: ReloadOptions = {}): ReloadingServerCredentials {
    return new ReloadingServerCredentials(files, options, loadTlsMaterial(files, options.labels));
  }

  private constructor(
    private readonly files: TlsFiles,
    private readonly options: ReloadOptions,
    initial: Material,
  ) {
    const mutual = files.clientCaFile !== undefined;
    super({ requestCert: mutual, rejectUnauthorized: mutual }, initial.context);
    this.fingerprint = initial.fingerprint;
    const dirs = new Set([files.certFile, files.keyFile, ...(mutual ? [files.clientCaFile] : [])].map((f) => dirname(f)));
    for (const dir of dirs) {
      try {
        const w = watch(dir, () => this.schedule());
        w.unref(); // never the reason the process stays up
        w.on('error', (err) => options.onError?.(new Error(`TLS file watcher on ${dir} failed: ${err.message}; polling continues`)));
        this.dirWatchers.push(w);
      } catch (err) {
        options.onError?.(new Error(`cannot watch ${dir} for TLS file changes: ${(err as Error).message}; polling only`));
      }
    }
    const pollMs = options.pollIntervalMs ?? 30_000;
    this.poll = pollMs > 0 ? setInterval(() => this.reload(), pollMs) : undefined;
    this.poll?.unref();
  }

  private schedule(): void {
    if (this.closed) return;
    clearTimeout(this.debounce);
    this.debounce = setTimeout(() => this.reload(), this.options.debounceMs ?? 200);
    this.debounce.unref();
  }

  /** Re-reads the files; serves them if they changed and are valid. Returns whether they were swapped in. */
  reload(): boolean {
    if (this.closed) return false;
    let next: Material;
    try {
      next = loadTlsMaterial(this.files, this.options.labels);
    } catch (err) {
      this.options.onError?.(new Error(`${(err as Error).message}; still serving the previous certificate`));
      return false;
    }
    if (next.fingerprint === this.fingerprint) return false;
    this.fingerprint = next.fingerprint;
    this.updateSecureContextOptions(next.context);
    this.options.onReload?.({ notAfter: next.notAfter });
    return true;
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.debounce);
    clearInterval(this.poll);
    for (const w of this.dirWatchers) w.close();
  }

  _equals(other: grpc.ServerCredentials): boolean {
    return (other as unknown) === this;
  }
}
