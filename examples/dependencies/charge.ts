// Injected dependencies: a process-wide pg pool and one pooled connection per attempt, released
// after it. Run it with `TASKQ_PG_DSN=postgres://… npx tsx examples/dependencies/charge.ts` (schema
// $TASKQ_SCHEMA_NAME, else taskq_examples; migrated first). Examples run from the repository, so they
// import the package source; in your code, import from 'taskq' and 'taskq/worker' instead.
import pg from 'pg';
import { z } from 'zod';

import { actor, Migrator, PgDriver, Providers, TaskQ, token } from '../../src/index.js';
import { Worker } from '../../src/worker/index.js';

const dsn = process.env.TASKQ_PG_DSN;
if (!dsn) throw new Error('set TASKQ_PG_DSN to a Postgres connection string');
const schema = process.env.TASKQ_SCHEMA_NAME ?? 'taskq_examples';

const driver = new PgDriver({ connection: dsn });
await new Migrator(driver, { schema }).up();
const tq = await TaskQ.open({ driver, schema });

/** The application's pool: one per process. */
const Db = token<pg.Pool>('Db');
/** A connection of it for one attempt, released after it. */
const Conn = token<pg.PoolClient>('Conn');

let released = 0;
const providers = new Providers()
  .factory(
    Db,
    { scope: 'process', dispose: (pool) => pool.end() },
    () => new pg.Pool({ connectionString: dsn, max: 2 }),
  )
  .factory(
    Conn,
    {
      scope: 'job',
      inject: { db: Db },
      dispose: (conn) => {
        conn.release();
        released++;
      },
    },
    ({ db }) => db.connect(),
  );

const charge = actor(
  {
    name: 'charge',
    queue: 'payments',
    payload: z.object({ cents: z.number().int() }),
    inject: { conn: Conn },
  },
  // `conn` is typed pg.PoolClient, from the token.
  async ({ cents }, _ctx, { conn }) => {
    const { rows } = await conn.query<{ total: number }>('SELECT $1::int * 2 AS total', [cents]);
    return rows[0]!.total;
  },
);

const worker = new Worker({
  actors: [charge],
  providers,
  driver,
  // The example prints its own lines; a real worker logs at 'info'.
  settings: { schema, queues: ['payments'], maxConcurrency: 2, logLevel: 'silent' },
});
await worker.start();
try {
  const handles = await Promise.all([250, 1000, 40].map((cents) => tq.enqueue(charge, { cents })));
  const totals = await Promise.all(handles.map((h) => h.wait({ timeout: '30s' })));
  console.log(`totals: ${totals.join(', ')}`);
} finally {
  await worker.stop();
  await tq.close();
}
console.log(`connections released: ${released}`);
