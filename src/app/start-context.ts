/** What every start phase of the composition is given; each registers on `teardown` how to stop what it starts. */
import type { Clock } from '../vocab/clock.js';
import type { Logger } from '../observability/log.js';
import type { Metrics } from '../observability/metrics.js';
import type { Settings } from '../settings/settings.js';
import type { Teardown } from './teardown.js';

export interface StartContext {
  readonly settings: Settings;
  readonly clock: Clock;
  readonly log: Logger;
  readonly metrics: Metrics;
  readonly teardown: Teardown;
}
