/**
 * What a handler throws or reports reaches Postgres text and jsonb columns: a NUL character or a
 * lone surrogate in an error message, or a non-finite number in progress data, must not make the
 * outcome write fail. The job ends with its error stored in a form Postgres accepts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { TaskQ } from '../../src/client/taskq.js';
import type { Worker } from '../../src/worker/worker.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { startTestWorker } from '../helpers/in-process-worker.js';

const QUEUE = 'unstorable';

const nulMessage = actor({ name: 'unstorable.nul', queue: QUEUE, retry: { maxAttempts: 1 } }, async () => {
  throw new Error('bad byte \u0000 here and a lone \ud800 surrogate');
});

const nulClass = actor({ name: 'unstorable.class', queue: QUEUE, retry: { maxAttempts: 1 } }, async () => {
  const e = new Error('plain');
  e.name = 'Odd\u0000Name';
  throw e;
});

const progressProbe = actor({ name: 'unstorable.progress', queue: QUEUE }, async (_p: unknown, ctx) => {
  const outcomes: string[] = [];
  for (const data of [{ ratio: Number.NaN }, { label: 'half \ud800' }, { fine: 1 }]) {
    try {
      await ctx.progress({ data });
      outcomes.push('ok');
    } catch (err) {
      outcomes.push(`${(err as Error).name}: ${(err as Error).message}`);
    }
  }
  try {
    ctx.heartbeat({ at: Number.POSITIVE_INFINITY });
    outcomes.push('ok');
  } catch (err) {
    outcomes.push(`${(err as Error).name}: ${(err as Error).message}`);
  }
  return { outcomes };
});

describe('errors and progress Postgres cannot store as given', () => {
  let db: TestSchema;
  let tq: TaskQ;
  let worker: Worker;

  beforeAll(async () => {
    db = await migratedSchema('unstorable');
    tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
    worker = await startTestWorker([nulMessage, nulClass, progressProbe], db.schema, { queues: [QUEUE] });
  });
  afterAll(async () => {
    await worker?.stop();
    await tq?.close();
    await db?.drop();
  });

  it('a message with NUL and a lone surrogate is stored with replacement characters', async () => {
    const h = await tq.enqueue(nulMessage, {});
    await h.wait({ timeout: '20s' }).catch(() => undefined);
    const row = await tq.getRow(h.jobId);
    expect(row?.status).toBe('failed');
    expect(row?.errorMessage).toBe('bad byte \ufffd here and a lone \ufffd surrogate');
  });

  it('an error class name with NUL is stored with a replacement character', async () => {
    const h = await tq.enqueue(nulClass, {});
    await h.wait({ timeout: '20s' }).catch(() => undefined);
    const row = await tq.getRow(h.jobId);
    expect(row?.status).toBe('failed');
    expect(row?.errorClass).toBe('Odd\ufffdName');
  });

  it('progress data and heartbeat details Postgres cannot store are refused in the handler', async () => {
    const h = await tq.enqueue(progressProbe, {});
    const { outcomes } = (await h.wait({ timeout: '20s' })) as { outcomes: string[] };
    expect(outcomes).toHaveLength(4);
    expect(outcomes[0]).toMatch(
      /^InvalidArgumentError: .*ctx\.progress\.data.*NaN or Infinity.*ctx\.progress\.data\.ratio/,
    );
    expect(outcomes[1]).toMatch(
      /^InvalidArgumentError: .*ctx\.progress\.data.*Unicode.*ctx\.progress\.data\.label/,
    );
    expect(outcomes[2]).toBe('ok');
    expect(outcomes[3]).toMatch(/^InvalidArgumentError: .*ctx\.heartbeat\.details/);
  });
});
