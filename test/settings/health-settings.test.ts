import { describe, expect, it } from 'vitest';

import { loadTaskQSettings } from '../../src/settings/taskq-settings.js';
import { loadWorkerSettings, SettingsError } from '../../src/settings/load-worker-settings.js';

function problemsOf(fn: () => unknown): SettingsError {
  try {
    fn();
  } catch (err) {
    if (err instanceof SettingsError) return err;
    throw err;
  }
  throw new Error('expected a SettingsError');
}

describe('health settings', () => {
  it('reads every TASKQ_HEALTH_* variable, without an "unimplemented" warning', () => {
    const { settings, warnings } = loadWorkerSettings({
      env: {
        TASKQ_HEALTH_ENABLED: 'false',
        TASKQ_HEALTH_SOCKET_PATH: '/run/taskq/health.sock',
        TASKQ_HEALTH_PG_PING_TIMEOUT: '0.5',
        TASKQ_HEALTH_TASKS_ENABLED: 'yes',
        TASKQ_HEALTH_HOST: '127.0.0.1',
        TASKQ_HEALTH_PORT: '8081',
        TASKQ_HEALTH_REQUEST_TIMEOUT: '1.5',
        TASKQ_HEALTH_MAX_HEADER_BYTES: '8192',
        TASKQ_HEALTH_READINESS_CHECK_TIMEOUT: '3s',
        TASKQ_HEALTH_TOKEN: 'k8s-probe-token',
      },
    });
    expect(warnings).toEqual([]);
    expect(settings).toMatchObject({
      healthEnabled: false,
      healthSocketPath: '/run/taskq/health.sock',
      healthPgPingTimeoutMs: 500,
      healthTasksEnabled: true,
      healthHost: '127.0.0.1',
      healthPort: 8081,
      healthRequestTimeoutMs: 1500,
      healthMaxHeaderBytes: 8192,
      healthReadinessCheckTimeoutMs: 3000,
      healthToken: 'k8s-probe-token',
    });
  });

  it.each([
    ['healthPort', 65_536, /between 0 and 65535/],
    ['healthPort', -1, /between 0 and 65535/],
    ['healthPort', 80.5, /integer/],
    ['healthSocketPath', '', /1-107 UTF-8 bytes/],
    ['healthSocketPath', `/tmp/${'s'.repeat(103)}`, /1-107 UTF-8 bytes/],
    ['healthSocketPath', '/tmp/a\u0000b', /without NUL/],
    ['healthHost', 'not a host', /IPv4 or IPv6 address or a host name/],
    ['healthHost', 'bad_host!', /host name/],
    ['healthMaxHeaderBytes', 100, /between 512 and 65536/],
    ['healthMaxHeaderBytes', 1_000_000, /between 512 and 65536/],
    ['healthRequestTimeout', 0, /> 0/],
    ['healthPgPingTimeout', 0, /> 0/],
    ['healthReadinessCheckTimeout', '0s', /> 0/],
  ])('rejects %s = %j', (setting, value, rule) => {
    const err = problemsOf(() => loadWorkerSettings({ overrides: { [setting]: value } }));
    expect(err.problems).toEqual([expect.objectContaining({ setting, rule: expect.stringMatching(rule) })]);
  });

  it.each(['::', '::1', '0.0.0.0', 'localhost', 'health.internal.example'])('accepts host %s', (host) => {
    expect(loadWorkerSettings({ overrides: { healthHost: host } }).settings.healthHost).toBe(host);
  });

  it('accepts a socket path of exactly 107 bytes and port 0 (ephemeral)', () => {
    const path = `/tmp/${'s'.repeat(102)}`;
    expect(Buffer.byteLength(path)).toBe(107);
    const { settings } = loadWorkerSettings({ overrides: { healthSocketPath: path, healthPort: 0 } });
    expect(settings).toMatchObject({ healthSocketPath: path, healthPort: 0 });
  });

  it('never echoes a malformed health token in the error', () => {
    const err = problemsOf(() => loadWorkerSettings({ env: { TASKQ_HEALTH_TOKEN: 'has a space-s3cret' } }));
    expect(err.problems).toEqual([
      expect.objectContaining({ setting: 'healthToken', source: 'TASKQ_HEALTH_TOKEN', value: '<redacted>' }),
    ]);
    expect(err.message).not.toContain('s3cret');
    const viaClient = problemsOf(() =>
      loadTaskQSettings({ overrides: { healthToken: 'tab\tinside-s3cret' } }),
    );
    expect(viaClient.message).not.toContain('s3cret');
    expect(viaClient.message).toMatch(/visible ASCII characters/);
  });

  it('is a client setting too (the reference puts it in TaskQSettings)', () => {
    expect(loadTaskQSettings({ env: { TASKQ_HEALTH_TOKEN: 'abc' } }).healthToken).toBe('abc');
  });
});
