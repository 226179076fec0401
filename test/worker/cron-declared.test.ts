/**
 * Schedules declared in code (`cron()` in a worker's `schedules`): created at start when
 * `(actor, name)` has none, never overwritten; a changed declaration is reported as
 * `cron-declaration-drift` naming each field, and the stored schedule stays as it was.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { actor } from '../../src/core/actor.js';
import { cron } from '../../src/cron/cron-declaration.js';
import { InvalidArgumentError } from '../../src/errors/invalid-argument-error.js';
import { PayloadValidationError } from '../../src/errors/payload-validation-error.js';
import type { Logger } from '../../src/obs/logger.js';
import { Worker } from '../../src/worker/worker.js';
import { migratedSchema, type TestSchema } from '../helpers/db.js';
import { testWorkerSettings } from '../helpers/in-process-worker.js';

let db: TestSchema;
let backend: PostgresBackend;

beforeAll(async () => {
  db = await migratedSchema('crondecl');
  backend = new PostgresBackend(db.driver, { schema: db.schema });
});
afterAll(async () => {
  await db.drop();
});

const report = actor(
  { name: 'cd_report', queue: 'cd', payload: z.object({ kind: z.enum(['daily', 'weekly']) }) },
  () => undefined,
);
const other = actor({ name: 'cd_other', queue: 'cd' }, () => undefined);

function recordingLogger(lines: { msg: string; fields: Record<string, unknown> }[]): Logger {
  const keep = (obj: object, msg?: string): void => {
    lines.push({ msg: msg ?? '', fields: obj as Record<string, unknown> });
  };
  const logger: Logger = { debug() {}, info: keep, warn: keep, error: keep, child: () => logger };
  return logger;
}

describe('declared schedules', () => {
  it('are created once at start; a changed declaration is reported, never applied', async () => {
    const first = cron('30 2 * * *', report, {
      name: 'nightly',
      timezone: 'Europe/Berlin',
      payload: { kind: 'daily' },
    });
    const lines: { msg: string; fields: Record<string, unknown> }[] = [];
    const w2 = new Worker({
      actors: [report],
      schedules: [first],
      settings: testWorkerSettings(db.schema, { queues: ['cd'] }),
      logger: recordingLogger(lines),
    });
    await w2.start();
    await w2.stop();
    const created = await backend.listSchedules({ actor: 'cd_report' });
    expect(created).toHaveLength(1);
    expect(created[0]).toMatchObject({
      name: 'nightly',
      cronExpr: '30 2 * * *',
      timezone: 'Europe/Berlin',
      dstStrategy: 'skip',
      staticPayload: { kind: 'daily' },
      enabled: true,
    });
    expect(lines.some((l) => l.msg === 'cron-schedule-created')).toBe(true);

    // The same (actor, name) declared differently: the stored row stays, the drift is named.
    const changed = cron('0 3 * * 1', report, {
      name: 'nightly',
      timezone: 'Europe/Berlin',
      payload: { kind: 'weekly' },
    });
    lines.length = 0;
    const w3 = new Worker({
      actors: [report],
      schedules: [changed],
      settings: testWorkerSettings(db.schema, { queues: ['cd'] }),
      logger: recordingLogger(lines),
    });
    await w3.start();
    await w3.stop();
    const after = await backend.listSchedules({ actor: 'cd_report' });
    expect(after).toEqual(created.map((c) => ({ ...c, updatedAt: after[0]!.updatedAt })));
    const drift = lines.find((l) => l.msg === 'cron-declaration-drift');
    expect(drift?.fields).toMatchObject({ actor: 'cd_report', schedule: 'nightly' });
    expect(drift?.fields.drift).toEqual([
      'expression: "30 2 * * *" → "0 3 * * 1"',
      'payload: {"kind":"daily"} → {"kind":"weekly"}',
    ]);

    // The same declaration again: nothing to report.
    lines.length = 0;
    const w4 = new Worker({
      actors: [report],
      schedules: [first],
      settings: testWorkerSettings(db.schema, { queues: ['cd'] }),
      logger: recordingLogger(lines),
    });
    await w4.start();
    await w4.stop();
    expect(lines.filter((l) => l.msg.startsWith('cron-'))).toEqual([]);
  });

  it('refuses declarations of actors the worker does not run, duplicates, and invalid payloads', async () => {
    expect(
      () =>
        new Worker({
          actors: [report],
          schedules: [cron('* * * * *', other)],
          settings: testWorkerSettings(db.schema),
        }),
    ).toThrow(InvalidArgumentError);
    expect(
      () =>
        new Worker({
          actors: [report],
          schedules: [
            cron('* * * * *', report, { name: 'a', payload: { kind: 'daily' } }),
            cron('0 * * * *', report, { name: 'a', payload: { kind: 'daily' } }),
          ],
          settings: testWorkerSettings(db.schema),
        }),
    ).toThrow(/worker\.schedules\[1\]\.name/);
    const bad = new Worker({
      actors: [report],
      // Valid for cron() (it does not know the schema's rules); refused when the worker creates it.
      schedules: [cron('* * * * *', report, { name: 'bad', payload: { kind: 'hourly' } as never })],
      settings: testWorkerSettings(db.schema, { queues: ['cd'] }),
    });
    await expect(bad.start()).rejects.toBeInstanceOf(PayloadValidationError);
    expect(
      await backend.listSchedules({ actor: 'cd_report' }).then((l) => l.map((s) => s.name)),
    ).not.toContain('bad');
  });
});
