/** Starts the real service in-process on free ports with rules written to a temp dir. */
import { rulesFolder } from './rules-folder.js';
import { FakeClock } from '../../src/vocab/clock.js';
import { FakeTimer } from '../../src/vocab/timer.js';
import { createLogger } from '../../src/observability/log.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { startService, type RunningService } from '../../src/app/start-service.js';
import { loadSettings, type Settings } from '../../src/settings/settings.js';

export interface TestService {
  readonly service: RunningService;
  readonly clock: FakeClock;
  /** Advances `clock` and ends the engine's waits (on_limit delay) that are then due. */
  readonly timer: FakeTimer;
  readonly dir: string;
  readonly grpcAddress: string;
  readonly httpBase: string;
  close(): Promise<void>;
}

export function testSettings(overrides: Partial<Settings> = {}): Settings {
  const { settings } = loadSettings({}, []);
  return {
    ...settings,
    grpcHost: '127.0.0.1',
    grpcPort: 0,
    httpHost: '127.0.0.1',
    httpPort: 0,
    configWatch: false,
    logLevel: 'error',
    shutdownDrainMs: 0,
    ...overrides,
  };
}

export async function startTestService(
  rules: Record<string, string>,
  overrides: Partial<Settings> = {},
  clock = new FakeClock(1_700_000_000_000),
): Promise<TestService> {
  const folder = rulesFolder();
  const dir = folder.write(rules);
  const timer = new FakeTimer(clock);
  const service = await startService(testSettings({ configDir: dir, ...overrides }), {
    clock,
    timer,
    log: createLogger({ level: 'error', format: 'text', write: () => {} }),
    metrics: createMetrics({ defaultMetrics: false }),
  });
  return {
    service,
    clock,
    timer,
    dir,
    grpcAddress: `127.0.0.1:${service.grpcPort}`,
    httpBase: `http://127.0.0.1:${service.httpPort}`,
    close: async () => {
      await service.close();
      folder.remove();
    },
  };
}
