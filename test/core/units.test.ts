import { describe, expect, it } from 'vitest';

import { decodeCursor, encodeCursor } from '../../src/backend/cursor.js';
import { usToTimestampText } from '../../src/backend/postgres/filter-sql.js';
import {
  assertValidTransition,
  ACTIVE_STATUSES,
  TERMINAL_STATUSES,
} from '../../src/backend/state-machine.js';
import { formatMs, toMs } from '../../src/core/duration.js';
import { IllegalStateTransition, InvalidArgumentError } from '../../src/errors/index.js';
import { isUuid, newJobId } from '../../src/core/ids.js';
import {
  eventsChannel,
  renderSql,
  validateSchemaName,
  wakeChannel,
  workerChannel,
} from '../../src/core/schema-name.js';

describe('durations', () => {
  it('parses numbers and unit strings', () => {
    expect(toMs(250, 'x')).toBe(250);
    expect(toMs('250ms', 'x')).toBe(250);
    expect(toMs('1.5s', 'x')).toBe(1500);
    expect(toMs('5m', 'x')).toBe(300_000);
    expect(toMs('2h', 'x')).toBe(7_200_000);
    expect(toMs('1d', 'x')).toBe(86_400_000);
    expect(toMs(0, 'x', 'nonNegative')).toBe(0);
    expect(formatMs(1500)).toBe('1.5s');
  });
  it.each([['10 weeks'], ['-1s'], [''], [Number.NaN], [Infinity], [{}]])('rejects %s', (v) => {
    expect(() => toMs(v as never, 'field.name')).toThrow(InvalidArgumentError);
  });
  it('rejects zero where a positive duration is required', () => {
    expect(() => toMs(0, 'f')).toThrow(/greater than zero/);
  });
});

describe('job ids', () => {
  it('are UUIDv7 strings, strictly increasing within a process', () => {
    const ids = Array.from({ length: 5000 }, () => newJobId());
    expect(ids.every((id) => isUuid(id) && id[14] === '7')).toBe(true);
    for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!).toBe(true);
  });
});

describe('state machine', () => {
  it('splits statuses into terminal and active sets', () => {
    expect([...ACTIVE_STATUSES].sort()).toEqual(['pending', 'running', 'scheduled']);
    expect([...TERMINAL_STATUSES].sort()).toEqual([
      'abandoned',
      'cancelled',
      'crashed',
      'failed',
      'succeeded',
    ]);
  });
  it('refuses moves out of terminal states', () => {
    expect(() => assertValidTransition('succeeded', 'pending', 'j')).toThrow(IllegalStateTransition);
    expect(() => assertValidTransition('pending', 'running', 'j')).not.toThrow();
  });
});

describe('schema names and channels', () => {
  it('validates identifiers', () => {
    expect(validateSchemaName('tenant_a')).toBe('tenant_a');
    expect(() => validateSchemaName('a-b')).toThrow(InvalidArgumentError);
  });
  it('keeps channel names within 63 bytes for any schema', () => {
    const long = 'x'.repeat(63);
    expect(wakeChannel(long).length).toBeLessThanOrEqual(63);
    expect(eventsChannel(long).length).toBeLessThanOrEqual(63);
    expect(wakeChannel(long)).not.toBe(eventsChannel(long));
    expect(workerChannel(long, newJobId()).length).toBeLessThanOrEqual(63);
    expect(wakeChannel('taskq')).toBe('taskq_wake_taskq');
  });
  it("renders {schema} as the quoted identifier and {wake_channel} as the schema's wake channel literal", () => {
    const long = 'x'.repeat(63);
    expect(renderSql("SELECT pg_notify({wake_channel}, '') FROM {schema}.jobs", long)).toBe(
      `SELECT pg_notify('${wakeChannel(long)}', '') FROM "${long}".jobs`,
    );
    expect(wakeChannel(long)).toMatch(/^taskq_wake_x+_[0-9a-f]{16}$/);
  });
});

describe('cursors', () => {
  it('round-trip and keep microseconds', () => {
    const key = { order: 'created_at_desc' as const, createdAtUs: 1767225600123456n, id: newJobId() };
    expect(decodeCursor(encodeCursor(key), 'created_at_desc')).toEqual(key);
    expect(usToTimestampText(1767225600123456n)).toBe('2026-01-01T00:00:00.123456Z');
    // Before 1970 the microseconds stay positive; after 2255 they exceed a safe integer.
    expect(usToTimestampText(-1n)).toBe('1969-12-31T23:59:59.999999Z');
    expect(usToTimestampText(253402300799999999n)).toBe('9999-12-31T23:59:59.999999Z');
    expect(usToTimestampText(-62135596800000000n)).toBe('0001-01-01T00:00:00.000000Z');
  });
});
