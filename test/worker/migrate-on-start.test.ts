/**
 * TASKQ_MIGRATE_ON_START is for `taskq ui serve` only: a worker given it starts normally, migrates
 * nothing, and says so in a warning (replicas racing to migrate is the hazard migrations avoid).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import type { Logger } from '../../src/obs/logger.js';
import { migratedSchema, type TestSchema } from '../helpers/db.js';
import { startTestWorker } from '../helpers/in-process-worker.js';

let db: TestSchema;
const idle = actor({ name: 'mos_idle', queue: 'mos_q' }, async () => undefined);

beforeAll(async () => {
  db = await migratedSchema('migrate_on_start');
});
afterAll(async () => {
  await db.drop();
});

describe('migrateOnStart on a worker', () => {
  it('is ignored with a migrate-on-start-ignored warning', async () => {
    const warnings: { obj: object; msg?: string }[] = [];
    const logger: Logger = {
      debug: () => undefined,
      info: () => undefined,
      warn: (obj, msg) => void warnings.push({ obj, msg }),
      error: () => undefined,
      child: () => logger,
    };
    const worker = await startTestWorker(
      [idle],
      db.schema,
      { queues: ['mos_q'], migrateOnStart: true },
      { logger },
    );
    try {
      const ignored = warnings.filter((w) => w.msg === 'migrate-on-start-ignored');
      expect(ignored).toHaveLength(1);
      expect(ignored[0]?.obj).toMatchObject({ setting: 'TASKQ_MIGRATE_ON_START' });
    } finally {
      await worker.stop();
    }
  });
});
