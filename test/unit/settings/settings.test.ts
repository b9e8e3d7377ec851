import { describe, expect, it } from 'vitest';
import { SETTINGS, SettingsError, flagName, loadSettings } from '../../../src/settings/settings.js';
import { checkCombination, exposureNotices, isLoopback } from '../../../src/settings/settings-checks.js';

describe('settings', () => {
  it('uses the documented defaults (docs/settings.md)', () => {
    const { settings } = loadSettings({}, []);
    expect(settings).toMatchObject({
      grpcHost: '0.0.0.0',
      grpcPort: 8081,
      httpHost: '0.0.0.0',
      httpPort: 8080,
      configDir: './config',
      backend: 'memory',
      redisUrl: 'redis://127.0.0.1:6379',
      redisType: 'single',
      failureMode: 'open',
    });
  });

  it('reads env vars, and flags win over them', () => {
    const { settings, rest } = loadSettings({ GRPC_PORT: '9000', BACKEND: 'REDIS', REDIS_SENTINEL_ADDRS: 'a:1, b:2' }, [
      '--grpc-port',
      '9100',
      '--merge-domain-config',
      'extra',
      '--http-port=9200',
    ]);
    expect(settings.grpcPort).toBe(9100);
    expect(settings.httpPort).toBe(9200);
    expect(settings.backend).toBe('redis');
    expect(settings.mergeDomainConfig).toBe(true);
    expect(settings.redisSentinelAddrs).toEqual(['a:1', 'b:2']);
    expect(rest).toEqual(['extra']);
  });

  it('reports every bad value at once, naming the variable or flag', () => {
    let error: unknown;
    try {
      loadSettings({ GRPC_PORT: '70000', BACKEND: 'mysql', CONFIG_WATCH: 'maybe' }, ['--http-port', 'x']);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(SettingsError);
    expect((error as SettingsError).problems).toEqual([
      'GRPC_PORT: 70000 is out of range 0..65535',
      "--http-port: 'x' is not a whole number",
      "CONFIG_WATCH: 'maybe' is not a boolean (true or false)",
      "BACKEND: 'mysql' is not one of memory, redis, memcached",
    ]);
  });

  it('gives every setting an env var, a flag and a description', () => {
    for (const s of Object.values(SETTINGS)) {
      expect(s.env).toMatch(/^[A-Z][A-Z0-9_]+$/);
      expect(flagName(s.env)).toMatch(/^--[a-z0-9-]+$/);
      expect(s.description.length).toBeGreaterThan(10);
    }
  });
});

describe('settings that are wrong together (settings-checks.ts)', () => {
  const combination = (env: Record<string, string>) => {
    const { settings, given } = loadSettings(env);
    return checkCombination(settings, given);
  };
  it('says what DISABLE_STATS=true turns off', () => {
    expect(combination({ DISABLE_STATS: 'true', USE_STATSD: 'true', USE_PROMETHEUS: 'true' }).notices).toEqual([
      { level: 'warn', setting: 'DISABLE_STATS', message: 'DISABLE_STATS=true turns off USE_STATSD, USE_PROMETHEUS, as in envoyproxy/ratelimit' },
    ]);
    expect(combination({ DISABLE_STATS: 'true' }).notices).toEqual([]);
  });
  it('refuses Redis settings without BACKEND, warns when BACKEND=memory is chosen on purpose, accepts the rest', () => {
    expect(combination({ REDIS_URL: 'redis://r:6379' }).errors).toEqual([
      "REDIS_URL set, but BACKEND is not: counters would stay in this process's memory and Redis would never be used; set BACKEND=redis (or BACKEND=memory to keep counters in memory on purpose)",
    ]);
    expect(combination({ REDIS_TYPE: 'cluster', REDIS_CLUSTER_NODES: 'a:1' }).errors[0]).toMatch(/^REDIS_TYPE, REDIS_CLUSTER_NODES set, but BACKEND is not/);
    expect(combination({ BACKEND: 'memory', REDIS_URL: 'redis://r:6379' })).toEqual({
      errors: [],
      notices: [
        { level: 'warn', setting: 'REDIS_URL', message: "REDIS_URL set, but BACKEND=memory: counters are kept in this process's memory and Redis is not used" },
      ],
    });
    expect(combination({ BACKEND: 'redis', REDIS_URL: 'redis://r:6379' })).toEqual({ errors: [], notices: [] });
    expect(combination({ BACKEND_TYPE: 'redis', REDIS_URL: 'redis://r:6379' })).toEqual({ errors: [], notices: [] });
    // The reference's host:port form with BACKEND_TYPE unset means Redis (its default), as before.
    expect(combination({ REDIS_SOCKET_TYPE: 'tcp', REDIS_URL: 'r:6379' })).toEqual({ errors: [], notices: [] });
    expect(combination({ REDIS_COMMAND_TIMEOUT_MS: '50' })).toEqual({ errors: [], notices: [] });
  });

  it('starts a configuration that names GRPC_TRANSPORT=grpc-js, on lean, and says so in one warning', () => {
    expect(combination({ GRPC_TRANSPORT: 'grpc-js' })).toEqual({
      errors: [],
      notices: [
        {
          level: 'warn',
          setting: 'GRPC_TRANSPORT',
          message:
            'GRPC_TRANSPORT=grpc-js: the gRPC port is served by lean, its only transport (the same methods, statuses, deadlines, bounds, TLS and Unix sockets); remove the setting (docs/settings.md)',
        },
      ],
    });
    expect(combination({ GRPC_TRANSPORT: 'lean' })).toEqual({ errors: [], notices: [] });
    expect(() => loadSettings({ GRPC_TRANSPORT: 'grpc' })).toThrow(SettingsError);
  });
});

describe('the admin port beyond loopback (exposureNotices)', () => {
  it('names what is exposed and how to close it; nothing on loopback', () => {
    const notices = (env: Record<string, string>) => exposureNotices(loadSettings(env).settings);
    expect(notices({})).toEqual([
      {
        level: 'warn',
        setting: 'HTTP_HOST',
        message:
          'the admin port listens on 0.0.0.0:8080, beyond loopback: anyone who reaches it reads GET /rules, the clients being limited (GET /top and the status page at /, TOP_VALUES=plain) and POST /json (JSON_API=check); set HTTP_HOST=127.0.0.1 to keep it inside this host (docs/security.md, "Closing the admin port")',
      },
    ]);
    expect(notices({ HTTP_HOST: '10.0.0.5', JSON_API: 'on' })[0]!.message).toContain('TOP_VALUES=plain) and POST /json (JSON_API=on, spends quota)');
    expect(notices({ HTTP_HOST: '::', JSON_API: 'off', TOP_KEYS: '0' })[0]!.message).toContain('reads GET /rules; set HTTP_HOST');
    expect(notices({ TOP_VALUES: 'hash' })[0]!.message).toContain('(GET /top and the status page at /, TOP_VALUES=hash)');
    for (const host of ['127.0.0.1', '127.1.2.3', '::1', '[::1]', 'localhost', '::ffff:127.0.0.1']) expect(notices({ HTTP_HOST: host })).toEqual([]);
    expect(isLoopback('127.0.0.1.example.com')).toBe(false);
  });
});
