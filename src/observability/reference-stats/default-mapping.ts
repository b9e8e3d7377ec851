/**
 * The mapping used when USE_PROMETHEUS is on and PROMETHEUS_MAPPER_YAML is not set: the reference's Prometheus
 * names for its stats. Per-rule stats one key deep get labels domain and key1; deeper ones domain, key1 and
 * key2 (the first three parts of the stats key); then the call, config and per-method stats. Response times
 * are milliseconds scaled to seconds, unless PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS keeps milliseconds.
 */
const RULE_STATS = ['near_limit', 'over_limit', 'total_hits', 'within_limit', 'shadow_mode'];

export function defaultMappingYaml(responseTimeAsMilliseconds: boolean): string {
  const lines = ['mappings:'];
  const push = (...l: string[]) => lines.push(...l.map((x) => `  ${x}`));
  for (const stat of RULE_STATS) {
    push(`- match: "ratelimit.service.rate_limit.*.*.${stat}"`, `  name: "ratelimit_service_rate_limit_${stat}"`, '  observer_type: histogram');
    push('  labels: { domain: "$1", key1: "$2" }');
  }
  for (const stat of RULE_STATS) {
    push(`- match: 'ratelimit\\.service\\.rate_limit\\.([^\\.]*)\\.([^\\.]*)\\.([^\\.]*)(\\..*)?\\.${stat}'`, '  match_type: regex');
    push(`  name: "ratelimit_service_rate_limit_${stat}"`, '  observer_type: histogram', '  labels: { domain: "$1", key1: "$2", key2: "$3" }');
  }
  push('- match: "ratelimit.service.call.should_rate_limit.*"', '  name: "ratelimit_service_should_rate_limit_error"', '  match_metric_type: counter');
  push('  labels: { err_type: "$1" }');
  push('- match: "ratelimit_server.*.total_requests"', '  name: "ratelimit_service_total_requests"', '  match_metric_type: counter');
  push('  labels: { grpc_method: "$1" }');
  push('- match: "ratelimit_server.*.response_time"', '  name: "ratelimit_service_response_time_seconds"', '  observer_type: histogram');
  if (!responseTimeAsMilliseconds) push('  scale: 0.001');
  push('  labels: { grpc_method: "$1" }');
  for (const stat of ['config_load_success', 'config_load_error']) {
    push(`- match: "ratelimit.service.${stat}"`, `  name: "ratelimit_service_${stat}"`, '  match_metric_type: counter');
  }
  return `${lines.join('\n')}\n`;
}
