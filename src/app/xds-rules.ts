/**
 * CONFIG_TYPE=GRPC_XDS_SOTW in the composition: the rules come from an xDS server (src/xds/) instead of
 * CONFIG_DIR. Each set goes through the same compilation as files and is swapped whole into the RulesHolder;
 * the client module (and @grpc/grpc-js with it) is loaded only in this mode.
 */
import { readFileSync } from 'node:fs';
import { compileConfigFiles } from '../config/compile/compile.js';
import { compileFilesInWorker } from '../config/load/load-in-worker.js';
import type { CompiledConfig } from '../config/types.js';
import type { Logger } from '../observability/log.js';
import type { Metrics } from '../observability/metrics.js';
import type { Settings } from '../settings/settings.js';
import { parseHeaderMap, parseNodeMetadata } from '../settings/xds-settings.js';
import type { XdsClient } from '../xds/ads-client.js';
import type { RulesHolder } from './reloader.js';
import { VERSION } from './version.js';

/** Rules text compiled on the event loop at once (a few ms); a larger set goes to a worker thread. */
const INLINE_MAX_BYTES = 16 * 1024;

export interface XdsRules {
  /** The rules before the first set: none. */
  readonly initial: CompiledConfig;
  /** Connects and feeds `holder`; resolves once the client runs (not when the first set has arrived). */
  start(holder: RulesHolder): Promise<void>;
  /** Whether a first set has been applied (always true with FORCE_START_WITHOUT_INITIAL_CONFIG). */
  loaded(): boolean;
  stop(): void;
}

export function xdsRules(settings: Settings, log: Logger, metrics: Metrics): XdsRules {
  // CONFIG_MAX_FILE_BYTES bounds each resource as received (its protobuf bytes, checked by the client); the JSON
  // text a resource is validated as is several times larger and is bounded by that, not by the setting again.
  const compileOptions = { mergeDomains: settings.mergeDomainConfig, limits: { maxFileBytes: Number.MAX_SAFE_INTEGER } };
  const empty = compileConfigFiles([], compileOptions);
  if (!empty.ok) throw new Error('no rules do not compile');
  let client: XdsClient | undefined;
  let first = false;
  return {
    initial: empty.config,
    loaded: () => settings.forceStartWithoutInitialConfig || first,
    async start(holder) {
      const { XdsClient } = await import('../xds/ads-client.js');
      const tls = settings.xdsServerUseTls
        ? { caFile: settings.xdsServerTlsCaCert, certFile: settings.xdsClientTlsCert, keyFile: settings.xdsClientTlsKey, serverName: settings.xdsServerTlsSan }
        : undefined;
      client = new XdsClient({
        serverUrl: settings.xdsServerUrl,
        node: { id: settings.xdsNodeId, metadata: parseNodeMetadata(settings.xdsNodeMetadata), userAgentName: 'ratelimit-sidecar', userAgentVersion: VERSION },
        headers: parseHeaderMap(settings.xdsClientAdditionalHeaders),
        ...(tls === undefined ? {} : { tls }),
        backoff: {
          initialMs: settings.xdsBackoffInitialInterval,
          maxMs: settings.xdsBackoffMaxInterval,
          randomFactor: settings.xdsBackoffRandomFactor,
          jitter: settings.xdsBackoffJitter,
        },
        maxMessageBytes: settings.xdsMaxMsgSizeInBytes,
        maxResourceBytes: settings.configMaxFileBytes,
        keepaliveMs: settings.xdsKeepaliveTime,
        keepaliveTimeoutMs: settings.xdsKeepaliveTimeout,
        readFile: (path) => readFileSync(path),
        log,
        apply: async (files) => {
          // Small sets compile at once; larger ones in a worker thread, as file reloads do, so that requests keep
          // being answered while a large set is validated (tens of ms per hundred descriptors).
          const bytes = files.reduce((n, f) => n + f.text.length, 0);
          const result =
            bytes <= INLINE_MAX_BYTES
              ? compileConfigFiles(files, compileOptions)
              : await compileFilesInWorker(files, { ...compileOptions, timeoutMs: settings.configLoadTimeoutMs });
          const status = holder.apply(result.ok ? { ok: true, config: result.config, warnings: result.warnings } : { ok: false, errors: result.errors });
          if (!status.ok) return { ok: false, errors: status.errors };
          first = true;
          return { ok: true };
        },
      });
      const c = client;
      holder.source = () => ({ type: 'GRPC_XDS_SOTW', ...c.status() });
      metrics.watchXds(() => c.status());
      await c.start();
    },
    stop: () => client?.stop(),
  };
}
