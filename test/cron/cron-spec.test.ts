/** checkCronSpec: each field's rules, the normalised spec, and the typed error naming field, value and rule. */
import { describe, expect, it } from 'vitest';

import { checkCronSpec } from '../../src/cron/cron-spec.js';
import { DST_STRATEGIES } from '../../src/cron/dst-strategy.js';
import { InvalidArgumentError } from '../../src/errors/invalid-argument-error.js';

function rejection(spec: {
  expression: unknown;
  timezone?: unknown;
  dstStrategy?: unknown;
}): InvalidArgumentError {
  try {
    checkCronSpec(spec, 'schedule');
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidArgumentError);
    return err as InvalidArgumentError;
  }
  throw new Error(`accepted ${JSON.stringify(spec)}`);
}

describe('checkCronSpec', () => {
  it('normalises: expression trimmed, zone canonical, defaults UTC and skip', () => {
    expect(checkCronSpec({ expression: '  0 9 * * MON-FRI \n', timezone: 'america/new_york' }, 's')).toEqual({
      expression: '0 9 * * MON-FRI',
      timezone: 'America/New_York',
      dstStrategy: 'skip',
    });
    expect(checkCronSpec({ expression: '*/5 * * * * *' }, 's')).toEqual({
      expression: '*/5 * * * * *',
      timezone: 'UTC',
      dstStrategy: 'skip',
    });
    expect(checkCronSpec({ expression: '@daily', timezone: null, dstStrategy: null }, 's')).toEqual({
      expression: '@daily',
      timezone: 'UTC',
      dstStrategy: 'skip',
    });
    for (const s of DST_STRATEGIES) {
      expect(
        checkCronSpec({ expression: '0 0 * * *', timezone: 'Europe/Berlin', dstStrategy: s }, 's')
          .dstStrategy,
      ).toBe(s);
    }
    // Rare but real: 29 February fires every four years.
    expect(checkCronSpec({ expression: '0 0 29 2 *' }, 's').expression).toBe('0 0 29 2 *');
  });

  it.each([
    ['bad syntax', 'every day at noon'],
    ['7 fields', '0 0 0 * * * 2026'],
    ['4 fields', '0 0 * *'],
    ['out of range', '60 * * * *'],
    ['empty', '   '],
  ])('rejects an expression croner refuses (%s), saying which forms are accepted', (_, expression) => {
    const err = rejection({ expression });
    expect(err.field).toBe('schedule.expression');
    expect(err.value).toBe(expression);
    expect(err.rule).toMatch(/5 fields .*6 fields \(second first\)/);
    expect(err.message).toContain('schedule.expression');
    expect(err.message).toContain(JSON.stringify(expression));
  });

  it.each([[42], [null], [undefined], [['0', '0', '*', '*', '*']]])(
    'rejects a non-string expression (%j)',
    (expression) => {
      const err = rejection({ expression });
      expect(err.field).toBe('schedule.expression');
      expect(err.value).toEqual(expression);
      expect(err.rule).toMatch(/^must be a cron expression of 5 fields/);
    },
  );

  it.each(['0 0 30 2 *', '0 0 31 4 *', '0 0 0 31 11 *'])(
    'rejects an expression that never fires (%s)',
    (expression) => {
      const err = rejection({ expression });
      expect(err.field).toBe('schedule.expression');
      expect(err.value).toBe(expression);
      expect(err.rule).toMatch(/never fires/);
    },
  );

  it.each([['Mars/Olympus_Mons'], ['New York'], ['+05:30'], ['-08:00'], [''], [5], [{ zone: 'UTC' }]])(
    'rejects an unknown or non-IANA zone (%j)',
    (timezone) => {
      const err = rejection({ expression: '0 0 * * *', timezone });
      expect(err.field).toBe('schedule.timezone');
      expect(err.value).toEqual(timezone);
      expect(err.rule).toMatch(/IANA time zone/);
      expect(err.message).toContain('schedule.timezone');
    },
  );

  it.each([['SKIP'], ['first'], ['all'], [''], [1], [true]])(
    'rejects an unknown strategy (%j)',
    (dstStrategy) => {
      const err = rejection({ expression: '0 0 * * *', dstStrategy });
      expect(err.field).toBe('schedule.dstStrategy');
      expect(err.value).toBe(dstStrategy);
      expect(err.rule).toBe("must be one of 'skip', 'firstof', 'allof' ('skip' when omitted)");
    },
  );

  it('checks the expression first, then the zone, then the strategy', () => {
    expect(rejection({ expression: 'x', timezone: 'Nowhere', dstStrategy: 'x' }).field).toBe(
      'schedule.expression',
    );
    expect(rejection({ expression: '* * * * *', timezone: 'Nowhere', dstStrategy: 'x' }).field).toBe(
      'schedule.timezone',
    );
  });
});
