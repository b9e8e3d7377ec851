/** Rules exercising every on_limit message, shared by the on_limit end-to-end tests. */
export const MESSAGE_RULES = `domain: msg
descriptors:
  - key: text
    rate_limit:
      unit: minute
      requests_per_unit: 1
      name: per-user
      on_limit:
        body: "slow down {{descriptor}} ({{name}}, {{limit}} per {{window}}s): retry in {{retry_after}}s\\n"
        headers: {x-limit-reason: "user {{descriptor}}"}
  - key: json
    rate_limit:
      unit: day
      requests_per_unit: 1
      on_limit:
        retry: none
        status: 403
        content_type: application/json
        body: '{"error":"daily limit reached","who":"{{descriptor}}","domain":"{{domain}}","retry_after":{{retry_after}},"reset_at":"{{reset_at}}"}'
  - key: degrade
    rate_limit:
      unit: minute
      requests_per_unit: 2
      on_limit: {action: degrade, request_headers: {x-degraded: "true"}, degrade_max: 2}
  - key: backoff
    rate_limit:
      unit: minute
      requests_per_unit: 60
      algorithm: token_bucket
      burst: 1
      on_limit: {retry: exponential_backoff, retry_base: 1s, retry_cap: 10s}
  - key: shaped
    rate_limit:
      unit: minute
      requests_per_unit: 60
      algorithm: leaky_bucket
      on_limit: {action: delay, max_delay: 5s}
  - key: redirect
    rate_limit:
      unit: minute
      requests_per_unit: 1
      on_limit: {action: redirect, location: "https://example.com/busy?who={{descriptor}}", status: 303}
`;
