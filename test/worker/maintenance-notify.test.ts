/**
 * The NOTIFYs the leader's sweeps send (Postgres only; the maintenance contract covers what they
 * write). A plain pg client LISTENs on the schema's wake and done channels.
 *
 * Counting "exactly one" without timing: Postgres delivers notifications in commit order, so after
 * a statement commits, a barrier NOTIFY sent from any session arrives after everything that
 * statement sent. `drain()` sends one, waits for it, and returns what came before it.
 */
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { TaskQ } from '../../src/client/taskq.js';
import { doneChannel, wakeChannel } from '../../src/core/schema-name.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { waitFor } from '../helpers/wait.js';

const W = '018f0000-0000-7000-8000-00000000e001';
const retried = actor({ name: 'mn_retried', queue: 'mn', retry: { maxAttempts: 3 } }, async () => undefined);
const once = actor({ name: 'mn_once', queue: 'mn', retry: { kind: 'nonRetryable' } }, async () => undefined);

let db: TestSchema;
let backend: PostgresBackend;
let client: TaskQ;
let listener: pg.Client;
let wake: string;
let done: string;
const received: { channel: string; payload: string }[] = [];

beforeAll(async () => {
  db = await migratedSchema('mnotify');
  backend = new PostgresBackend(db.driver, { schema: db.schema });
  client = new TaskQ(backend, { capacityCacheTtl: 0 });
  wake = wakeChannel(db.schema);
  done = doneChannel(db.schema);
  listener = new pg.Client({ connectionString: TEST_DSN });
  await listener.connect();
  listener.on('notification', (m) => received.push({ channel: m.channel, payload: m.payload ?? '' }));
  await listener.query(`LISTEN "${wake}"`);
  await listener.query(`LISTEN "${done}"`);
});
afterAll(async () => {
  await listener.end();
  await db.drop();
});

const q = (sql: string, v: unknown[] = []) => db.pool.query(sql.replaceAll('$S', `"${db.schema}"`), v);

let barriers = 0;
/** Everything NOTIFYed on the two channels up to now (see the file comment), removed from `received`. */
async function drain(): Promise<{ channel: string; payload: string }[]> {
  const token = `barrier-${++barriers}`;
  await db.pool.query('SELECT pg_notify($1, $2)', [wake, token]);
  await waitFor(() => received.some((r) => r.payload === token), 10_000, 'the barrier NOTIFY');
  const at = received.findIndex((r) => r.payload === token);
  return received.splice(0, at + 1).slice(0, at);
}

beforeEach(async () => {
  await q(`TRUNCATE $S.jobs CASCADE`);
  // Whatever earlier setup sent (enqueue also wakes) is not this test's business.
  await drain();
});

describe('maintenance NOTIFYs (Postgres)', () => {
  it('reclaimExpiredLocks sends one wake per sweep that reclaimed jobs, and announces the ended ones', async () => {
    const back = await Promise.all([1, 2, 3].map(() => client.enqueue(retried, {})));
    const ended = await Promise.all([1, 2].map(() => client.enqueue(once, {})));
    const claimed = await backend.dispatchBatch({
      workerId: W,
      queues: ['mn'],
      actors: [
        { name: 'mn_retried', maxConcurrent: null },
        { name: 'mn_once', maxConcurrent: null },
      ],
      limit: 10,
      leaseMs: 60_000,
      oversample: 2,
    });
    expect(claimed).toHaveLength(5);

    // Nothing expired yet: the sweep stays silent.
    await drain();
    expect(await backend.reclaimExpiredLocks(0, 0)).toEqual({ reclaimed: 0, retried: 0 });
    expect(await drain()).toEqual([]);

    await q(
      `UPDATE $S.jobs SET lock_expires_at = clock_timestamp() - interval '1 second' WHERE status = 'running'`,
    );
    await drain();
    expect(await backend.reclaimExpiredLocks(0, 0)).toEqual({ reclaimed: 5, retried: 3 });
    const sent = await drain();
    // One wake for five reclaimed jobs (three of them are pending again) ...
    expect(sent.filter((n) => n.channel === wake)).toEqual([{ channel: wake, payload: '' }]);
    // ... and one done announcement naming only the jobs that ended (crashed), not the retried ones.
    const announced = sent.filter((n) => n.channel === done);
    expect(announced).toHaveLength(1);
    expect(announced[0]!.payload.split(',').sort()).toEqual(ended.map((h) => h.jobId).sort());
    expect(sent).toHaveLength(2);
    expect(back.every((h) => !announced[0]!.payload.includes(h.jobId))).toBe(true);
  });

  it('scheduledToPending sends one wake when it promotes jobs, none when nothing is due', async () => {
    await Promise.all([1, 2, 3].map(() => client.enqueue(retried, {}, { delay: '1h' })));
    await drain();
    expect((await backend.scheduledToPending()).promoted).toBe(0);
    expect(await drain()).toEqual([]);

    await q(
      `UPDATE $S.jobs SET scheduled_at = clock_timestamp() - interval '1 second' WHERE status = 'scheduled'`,
    );
    await drain();
    expect((await backend.scheduledToPending()).promoted).toBe(3);
    expect(await drain()).toEqual([{ channel: wake, payload: '' }]);
  });
});
