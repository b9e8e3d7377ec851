/**
 * The ext_authz half of the composition root: the region database (GEOIP_DB) and the Authorizer on the shared
 * engine and rules, from settings. start-service.ts registers its handlers on the gRPC server (any other transport can
 * serve `authorizer` with server/ext-authz/ext-authz-decode.ts and ext-authz-encode.ts).
 */
import { Authorizer } from '../authz/authorize.js';
import type { CompiledConfig } from '../config/types.js';
import type { RateLimiter } from '../core/rate-limiter.js';
import { openRegionDatabase, type RegionDatabase } from './geoip.js';
import { componentLogger, type Logger } from '../observability/log.js';
import type { Metrics } from '../observability/metrics.js';
import type { Settings } from '../settings/settings.js';
import { StartupError } from '../vocab/startup-error.js';

export interface ExtAuthzSetup {
  readonly authorizer: Authorizer;
  /** For the start log. */
  readonly description: Record<string, unknown>;
  close(): void;
}

export async function setUpExtAuthz(
  settings: Settings,
  deps: { limiter: RateLimiter; config: () => CompiledConfig; metrics: Metrics; log: Logger },
): Promise<ExtAuthzSetup> {
  let geoip: RegionDatabase | undefined;
  if (settings.geoipDb !== '') {
    const log = componentLogger(deps.log, 'geoip');
    geoip = await openRegionDatabase(settings.geoipDb, {
      onReload: (databaseType) => log.info('GEOIP_DB reloaded', { file: settings.geoipDb, databaseType }),
      onError: (message) => log.error(message, { file: settings.geoipDb }),
    }).catch((err: unknown) => {
      throw new StartupError((err as Error).message);
    });
  }
  const authorizer = new Authorizer({
    limiter: deps.limiter,
    config: deps.config,
    defaultDomain: settings.authzDomain,
    descriptors: {
      regionHeaders: settings.authzRegionHeaders.map((h) => h.toLowerCase()),
      clientAddressHeader: settings.authzClientAddressHeader.toLowerCase(),
      ...(geoip ? { region: geoip.lookup } : {}),
    },
    failureMode: settings.failureMode,
    onResult: (result, domain) => deps.metrics.countAuthzCheck(domain, result),
  });
  return {
    authorizer,
    description: { defaultDomain: settings.authzDomain, ...(geoip ? { geoipDb: settings.geoipDb, geoipType: geoip.databaseType } : {}) },
    close: () => geoip?.close(),
  };
}
