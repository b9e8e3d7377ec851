/**
 * The rules the traffic test's feature traffic hits (domain `features`): one rule per feature that landed after
 * the traffic test was written, each on a key of its own so a descriptor names the feature it exercises, with
 * limits low enough for the open-loop traffic (about 20 calls/s on this domain) to cross them all the time:
 * soft and elastic throttling, a ban, criticality shares, on_limit (JSON body naming hostile descriptor values,
 * exponential backoff, a token bucket with delay whose max_delay fits the 20–50 ms deadlines, degrade), a lease,
 * and an `authz:` block turning Envoy-shaped CheckRequests into those descriptors.
 */
export const FEATURE_DOMAIN = 'features';

/** HTTP statuses a denied Check may carry (429 by default, the JSON rule's 403); FAILURE_MODE=closed's 503 is a store failure answer. */
export const FEATURE_DENIED_STATUSES: ReadonlySet<number> = new Set([429, 403]);

export const FEATURE_RULES = `# Rules the traffic test's feature traffic hits (RLS and ext_authz Check).
domain: ${FEATURE_DOMAIN}
authz:
  rate_limits:
    - actions: [{remote_address: {}}]
    - actions:
        - request_headers: {header_name: x-user, descriptor_key: user}
    - actions:
        - request_headers: {header_name: x-tier, descriptor_key: tier}
        - request_headers: {header_name: x-criticality, descriptor_key: criticality, skip_if_absent: true}
    - actions: [{request_headers: {header_name: x-tenant, descriptor_key: tenant}}]
    - actions: [{cookie: {name: session}}]
    - actions: [{path: {strip_query: true}}]
    - actions: [{method: {}}]
    - actions: [{request_headers: {header_name: x-plan, descriptor_key: plan}}]
    - actions: [{host: {}}]
descriptors:
  - key: remote_address
    rate_limit: {name: ban_ip, unit: second, requests_per_unit: 1, ban: 2s}
  - key: user
    rate_limit: {name: soft_user, unit: minute, requests_per_unit: 20, throttling: {soft: 25%}}
  - key: tenant
    rate_limit: {name: elastic_tenant, unit: minute, requests_per_unit: 10, throttling: {elastic: {capacity: 50, max: 20}}}
  - key: tier
    rate_limit: {name: shares_tier, unit: minute, requests_per_unit: 30, shares: {critical: 100%, default: 70%, sheddable: 30%}}
  - key: session
    rate_limit:
      name: json_session
      unit: minute
      requests_per_unit: 2
      on_limit:
        status: 403
        content_type: application/json
        body: '{"error":"slow down","who":"{{descriptor}}","limit":{{limit}},"retry_after":{{retry_after}}}'
        headers: {x-limit-reason: "session {{descriptor}}"}
  - key: path
    rate_limit:
      name: backoff_path
      unit: minute
      requests_per_unit: 60
      algorithm: token_bucket
      burst: 2
      on_limit: {retry: exponential_backoff, retry_base: 1s, retry_cap: 10s}
  - key: method
    rate_limit:
      name: delay_method
      unit: second
      requests_per_unit: 40
      algorithm: token_bucket
      burst: 1
      on_limit: {action: delay, max_delay: 15ms}
  - key: plan
    rate_limit:
      name: degrade_plan
      unit: second
      requests_per_unit: 1
      on_limit: {action: degrade, request_headers: {x-degraded: "true"}, degrade_max: 2}
  - key: host
    rate_limit: {name: lease_host, unit: second, requests_per_unit: 30, lease: {size: 10%, ttl: 1s}}
`;
