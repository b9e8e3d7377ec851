/**
 * Part of the composition root (with start-service.ts and store-factory.ts): the listeners that settings switch on
 * beside the gRPC and admin servers, and the gRPC server's TLS credentials. Errors are StartupErrors naming
 * the setting.
 */
import type { ConfigDescription } from '../config/compile/describe-rules.js';
import type { Logger } from '../observability/log.js';
import type { Metrics } from '../observability/metrics.js';
import type { RulesHolder } from './reloader.js';
import { parseListenAddr, startDebugServer, startMetricsServer, type Listener } from '../server/http/debug-http.js';
import type { ReloadingServerCredentials } from '../server/grpc/tls-credentials.js';
import type { Settings } from '../settings/settings.js';
import { StartupError } from '../vocab/startup-error.js';

/**
 * GRPC_TLS_*: undefined for plaintext; throws a StartupError naming the setting and file when unusable. The
 * credentials (a grpc-js class) are loaded only when TLS is asked for: plaintext starts without grpc-js.
 */
export async function grpcCredentials(settings: Settings, log: Logger): Promise<ReloadingServerCredentials | undefined> {
  const { grpcTlsCert: certFile, grpcTlsKey: keyFile, grpcTlsClientCa: clientCaFile } = settings;
  if (!certFile && !keyFile && !clientCaFile) {
    if (settings.grpcTlsClientSan) throw new StartupError('GRPC_TLS_CLIENT_SAN needs mutual TLS: set GRPC_TLS_CERT, GRPC_TLS_KEY and GRPC_TLS_CLIENT_CA too');
    return undefined;
  }
  if (!certFile || !keyFile) throw new StartupError('gRPC TLS needs both GRPC_TLS_CERT and GRPC_TLS_KEY (GRPC_TLS_CLIENT_CA adds mutual TLS)');
  if (settings.grpcTlsClientSan && !clientCaFile) throw new StartupError('GRPC_TLS_CLIENT_SAN needs mutual TLS: set GRPC_TLS_CLIENT_CA too');
  const { ReloadingServerCredentials } = await import('../server/grpc/tls-credentials.js');
  try {
    return ReloadingServerCredentials.create(
      { certFile, keyFile, ...(clientCaFile ? { clientCaFile } : {}) },
      {
        labels: { cert: 'GRPC_TLS_CERT', key: 'GRPC_TLS_KEY', clientCa: 'GRPC_TLS_CLIENT_CA' },
        onReload: (info) => log.info('gRPC TLS certificate reloaded', { cert: certFile, notAfter: info.notAfter }),
        onError: (err) => log.warn('gRPC TLS files not reloaded', { error: err.message }),
      },
    );
  } catch (err) {
    throw new StartupError(`gRPC TLS files are unusable: ${(err as Error).message}`);
  }
}

/** DEBUG_PORT (/rlconfig, /stats, /rules) and USE_PROMETHEUS (metrics on PROMETHEUS_ADDR), when asked for. */
export async function startExtraListeners(settings: Settings, metrics: Metrics, holder: RulesHolder, onError: (err: unknown) => void): Promise<Listener[]> {
  const out: Listener[] = [];
  try {
    if (settings.debugPort !== undefined) {
      const { debugHost: host, debugPort: port } = settings;
      out.push(
        await startDebugServer({
          host,
          port,
          registry: metrics.registry,
          domains: () => holder.config.describe() as ConfigDescription,
          rules: () => holder.describe(),
          onError,
        }).catch((err: unknown) => {
          throw new StartupError(`cannot listen for DEBUG_PORT on ${host}:${port}: ${(err as Error).message}`);
        }),
      );
    }
    if (settings.usePrometheus && !settings.disableStats) {
      const { host, port } = parseListenAddr(settings.prometheusAddr);
      out.push(
        await startMetricsServer({ host, port, path: settings.prometheusPath, registry: metrics.registry, onError }).catch((err: unknown) => {
          throw new StartupError(`cannot listen for PROMETHEUS_ADDR on ${settings.prometheusAddr}: ${(err as Error).message}`);
        }),
      );
    }
  } catch (err) {
    await Promise.all(out.map((l) => l.close()));
    throw err;
  }
  return out;
}
