/**
 * The capacity client library (package entry point `ratelimit-sidecar/client`): hold a share of a resource's global
 * capacity from a Doorman-compatible server (ours or Doorman's), keep to it with a rate limiter, and fall back in
 * the chosen mode when the server cannot be reached. Imports nothing from the server side of this package.
 *
 *   const client = new CapacityClient({ servers: 'capacity:8081' });
 *   const backend = client.resource('api-backend', 500, { fallback: 'safe' });
 *   const limiter = client.limiter(backend);
 *   await limiter.wait();   // at most backend.capacity per second
 */
export { CapacityClient, type BackoffOptions, type CapacityClientOptions } from './client.js';
export { CapacityError, type CapacityErrorCode } from './capacity-error.js';
export { RateLimiter, type CapacitySource, type LimiterOptions, type WaitOptions } from './limiter.js';
export { Resource, type ClientLease, type FallbackMode, type ResourceEvents, type ResourceOptions } from './resource.js';
export { FakeTime, systemTime, type ClientTime } from './time.js';
export { SidecarShares, type ShareSpec, type SidecarSharesOptions } from './sidecar-shares.js';
