/**
 * The fail-open audit (bench/failopen-audit.ts) in the suite, each row with its quick durations and both servers'
 * stacks at once: through a real Envoy at failure_mode_deny: false, this service lets no more requests through
 * without a decision, and admits no more above the limit, than envoyproxy/ratelimit under the same event (0
 * where the reference's is 0). Needs Envoy, redis-server and the reference (../shared/tools/envoy-ratelimit, or
 * REFERENCE_START); under CI=true a missing reference fails the test.
 */
import { expect, it } from 'vitest';
import { runAudit } from '../../bench/failopen-audit.js';
import { auditNotes, auditTable } from '../../bench/lib/failopen/report.js';
import { ROWS } from '../../bench/lib/failopen/rows.js';
import { haveReference, REFERENCE_START } from '../../bench/lib/reference.js';
import { describeEnvoy } from '../support/envoy.js';

const missing = haveReference() ? undefined : `no envoyproxy/ratelimit at ${REFERENCE_START} (set REFERENCE_START)`;
if (missing !== undefined && process.env['CI'] === 'true') throw new Error(`CI=true and ${missing}`);

describeEnvoy('fail-open audit: this service against envoyproxy/ratelimit behind the same Envoy', () => {
  it.for(ROWS.map((r) => [r.id, r] as const))(
    '%s: no more requests without a decision, nor above the limit per probe, than the reference',
    { timeout: 45_000 },
    async ([id, row], ctx) => {
      if (missing !== undefined) {
        process.stderr.write(`fail-open audit: ${missing}, not run\n`);
        ctx.skip();
      }
      const [line] = await runAudit({ quick: true, parallel: true, rows: [id] });
      const { ours, reference } = line!;
      const report = `${row.event}\n${auditTable([line!])}\n${auditNotes([line!]).join('\n')}`;
      expect(ours.noDecision, `no decision, ${report}`).toBeLessThanOrEqual(reference.noDecision);
      // Admissions above the limit, per probe: each side probes as fast as it answers, so a side that answers faster
      // makes more probes across an event (a Redis restart loses every count, whatever the server), and a count
      // alone would hold that speed against it. None where the reference admits none; where it admits some (an
      // event that loses counts on both sides), the rate within one admission, a count's own granularity.
      const slack = reference.overLimit > 0 ? 1 : 0;
      expect((ours.overLimit - slack) / ours.probes, `over limit per probe, ${report}`).toBeLessThanOrEqual(reference.overLimit / reference.probes);
      // the probe ran through the event: a row that probed nothing would prove nothing
      expect(ours.probes, report).toBeGreaterThan(4);
      expect(reference.probes, report).toBeGreaterThan(4);
    },
  );
});
