import { CHECK_PATH } from '../ext-authz/ext-authz-service.js';

/** A call's name in metrics: the method, except ext_authz's Check, which would share `Check` with gRPC health: `ext_authz.Check`. */
export function metricMethodName(path: string): string {
  return path === CHECK_PATH ? 'ext_authz.Check' : path.slice(path.lastIndexOf('/') + 1);
}
