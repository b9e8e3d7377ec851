/**
 * The ext_authz Check flow, protocol-free: domain → descriptors from the request → the same engine, rules
 * and counters as ShouldRateLimit → a Check answer. The servers decode and encode around it.
 *
 * - Domain: the route's context_extensions `ratelimit_domain`, else AUTHZ_DOMAIN. An unknown domain, or
 *   a domain whose `authz:` block yields no descriptor for this request, is allowed untouched.
 * - Store failure: FAILURE_MODE=closed answers a 503 (the engine's closed-mode rejections, or a store error);
 *   with open or local a store error is thrown (gRPC UNAVAILABLE), and Envoy's failure_mode_allow decides.
 * - Bad input is thrown (InvalidRequestError, RequestTooLargeError): the server turns it into a gRPC error.
 */
import type { CompiledConfig } from '../config/types.js';
import { StoreError } from '../vocab/errors.js';
import type { RateLimiter } from '../core/rate-limiter.js';
import type { CallTrace } from '../core/decision-trace.js';
import { ALLOW_EMPTY, GRPC_OK, GRPC_UNAVAILABLE, answerFor, storeFailureAnswer } from './answer.js';
import { buildDescriptors, type DescriptorOptions } from './descriptors.js';
import type { CheckAnswer, CheckAttributes } from './types.js';

/** The context_extensions key naming the domain of a route. */
export const DOMAIN_EXTENSION = 'ratelimit_domain';

/** How a Check ended, for the metric ratelimit_authz_checks_total{result}. */
export type AuthzResult = 'allowed' | 'over_limit' | 'unknown_domain' | 'no_descriptors' | 'store_failure';

export interface AuthorizerOptions {
  readonly limiter: RateLimiter;
  readonly config: () => CompiledConfig;
  /** AUTHZ_DOMAIN: the domain when the route sets no `ratelimit_domain` ('' = none). */
  readonly defaultDomain: string;
  readonly descriptors: DescriptorOptions;
  readonly failureMode: 'open' | 'closed' | 'local';
  readonly onResult?: (result: AuthzResult, domain: string) => void;
}

export class Authorizer {
  constructor(private readonly options: AuthorizerOptions) {}

  /** `call.signal` aborts when the call ends (read only while a delayed request waits; rate-limiter.ts DecideOptions). */
  async check(attrs: CheckAttributes, deadlineMs?: number, call?: { readonly signal: AbortSignal }, trace?: CallTrace): Promise<CheckAnswer> {
    const domain = attrs.contextExtensions.get(DOMAIN_EXTENSION) ?? this.options.defaultDomain;
    const config = this.options.config();
    if (domain === '' || !config.domains.has(domain)) return this.done('unknown_domain', domain, ALLOW_EMPTY, trace);
    const authz = config.authz?.get(domain);
    const descriptors = authz === undefined ? [] : buildDescriptors(authz, attrs, this.options.descriptors);
    if (descriptors.length === 0) return this.done('no_descriptors', domain, ALLOW_EMPTY, trace);
    let answer: CheckAnswer;
    try {
      const decision = await this.options.limiter.decide(
        { domain, descriptors, hitsAddend: 0 },
        { ...(deadlineMs === undefined ? {} : { deadlineMs }), ...(call === undefined ? {} : { call }), ...(trace === undefined ? {} : { trace }) },
      );
      answer = answerFor(decision);
    } catch (err) {
      if (!(err instanceof StoreError) || this.options.failureMode !== 'closed') throw err;
      answer = storeFailureAnswer();
    }
    const result: AuthzResult = answer.code === GRPC_OK ? 'allowed' : answer.code === GRPC_UNAVAILABLE ? 'store_failure' : 'over_limit';
    return this.done(result, domain, answer, trace);
  }

  private done(result: AuthzResult, domain: string, answer: CheckAnswer, trace: CallTrace | undefined): CheckAnswer {
    this.options.onResult?.(result, domain);
    trace?.result(result);
    return answer;
  }
}
