/**
 * Issue 62, acceptance of point 1: 200 concurrent enqueues × 10 rounds, from four OS processes of
 * 50 callers each (test/fixtures/enqueue-caller.ts), counted from the database: `maxPending` is
 * never exceeded; `uniqueFor` makes exactly one job per key per window; a batch holding a key twice
 * makes one job. Callers mix single enqueues, batches and enqueues inside their own transactions.
 * Each round prints its figures. Then: an actor without gates takes no lock.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { TaskQ } from '../../src/client/taskq.js';
import { SchemaNotMigratedError } from '../../src/errors/index.js';
import { Migrator } from '../../src/migrations/migrator.js';
import { MIGRATIONS } from '../../src/migrations/migrations.generated.js';
import { migratedSchema, TEST_DSN, uniqueSchemaName, type TestSchema } from '../helpers/db.js';

const PROCESSES = 4;
const CALLERS = 50;
const ROUNDS = 10;
const LIMIT = 10;
const KEYS = 5;

interface Told {
  event: string;
  round: number;
  created: number;
  existing: number;
  refused: Record<string, number>;
  repeatSplit: number;
}

/** A running enqueue-caller process: send it a command, read its next result line. */
interface Caller {
  proc: ChildProcess;
  next(): Promise<Told>;
  send(command: object): void;
}

function startCaller(schema: string): Caller {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/enqueue-caller.ts'], {
    cwd: process.cwd(),
    env: { ...process.env, TASKQ_PG_DSN: TEST_DSN, TASKQ_SCHEMA_NAME: schema },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const stderr: string[] = [];
  proc.stderr!.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
  const lines = createInterface({ input: proc.stdout! })[Symbol.asyncIterator]();
  return {
    proc,
    async next() {
      const line = await lines.next();
      if (line.done) throw new Error(`enqueue caller exited: ${stderr.join('').slice(-2000)}`);
      return JSON.parse(line.value) as Told;
    },
    send(command) {
      proc.stdin!.write(`${JSON.stringify(command)}\n`);
    },
  };
}

describe('exact gates: 200 concurrent callers from 4 processes × 10 rounds', () => {
  let db: TestSchema;
  let callers: Caller[] = [];

  beforeAll(async () => {
    db = await migratedSchema('gates');
    callers = Array.from({ length: PROCESSES }, () => startCaller(db.schema));
    for (const c of callers) expect((await c.next()).event).toBe('ready');
  }, 120_000);

  afterAll(async () => {
    for (const c of callers) c.proc.stdin!.end();
    await Promise.all(
      callers.map((c) =>
        c.proc.exitCode !== null ? undefined : new Promise((resolve) => c.proc.once('exit', resolve)),
      ),
    );
    await db.drop();
  });

  /** Sends one round's command to every process (50 callers each) and collects their results. */
  async function round(scenario: string, r: number): Promise<Told[]> {
    callers.forEach((c, p) => c.send({ round: r, scenario, callers: CALLERS, first: p * CALLERS }));
    return Promise.all(callers.map((c) => c.next()));
  }

  const sum = (told: Told[], f: (t: Told) => number): number => told.reduce((n, t) => n + f(t), 0);
  const refusedTotal = (told: Told[]): Record<string, number> => {
    const out: Record<string, number> = {};
    for (const t of told) for (const [k, v] of Object.entries(t.refused)) out[k] = (out[k] ?? 0) + v;
    return out;
  };

  it('maxPending = 10 is never exceeded (single, batch and in-transaction enqueues)', async () => {
    for (let r = 0; r < ROUNDS; r++) {
      await db.pool.query(`DELETE FROM "${db.schema}".jobs`);
      const told = await round('maxPending', r);
      const { rows } = await db.pool.query<{ limited: number; free: number }>(
        `SELECT count(*) FILTER (WHERE actor = 'gate_limited')::int AS limited,
                count(*) FILTER (WHERE actor = 'gate_free')::int AS free
         FROM "${db.schema}".jobs WHERE status IN ('pending', 'scheduled')`,
      );
      const { limited, free } = rows[0]!;
      const created = sum(told, (t) => t.created);
      const refused = refusedTotal(told);
      console.log(
        `maxPending round ${r + 1}: ${limited} gate_limited jobs in the database (limit ${LIMIT}), ` +
          `${created} admitted to callers, ${free} batches admitted, refused ${JSON.stringify(refused)}`,
      );
      expect(limited).toBeLessThanOrEqual(LIMIT);
      expect(limited).toBe(created);
      // Every refusal is the gate's; a refused batch wrote nothing (its gate_free item neither).
      expect(Object.keys(refused)).toEqual(['TASKQ_MAX_PENDING_EXCEEDED']);
      expect(created + 2 * free).toBeGreaterThan(0);
    }
  }, 120_000);

  it('uniqueFor makes exactly one job per key; a batch holding the key twice makes one job', async () => {
    for (let r = 0; r < ROUNDS; r++) {
      const told = await round('uniqueFor', r);
      const { rows } = await db.pool.query<{ identity_key: string; n: number }>(
        `SELECT identity_key, count(*)::int AS n FROM "${db.schema}".jobs
         WHERE actor = 'gate_unique' AND identity_key LIKE $1 GROUP BY identity_key ORDER BY 1`,
        [`r${r}-%`],
      );
      const created = sum(told, (t) => t.created);
      const split = sum(told, (t) => t.repeatSplit);
      console.log(
        `uniqueFor round ${r + 1}: jobs per key ${JSON.stringify(Object.fromEntries(rows.map((x) => [x.identity_key, x.n])))}, ` +
          `${created} created and ${sum(told, (t) => t.existing)} existing handles, ` +
          `${split} batches split over two jobs, refused ${JSON.stringify(refusedTotal(told))}`,
      );
      expect(rows).toHaveLength(KEYS);
      for (const row of rows) expect(row.n).toBe(1);
      expect(created).toBe(KEYS);
      expect(split).toBe(0);
      expect(refusedTotal(told)).toEqual({});
    }
  }, 120_000);

  it('an actor without gates takes no gate lock; a gated one takes one per gate, until its transaction ends', async () => {
    const free = actor({ name: 'gate_free' }, async () => undefined);
    const limited = actor({ name: 'gate_limited', maxPending: 1000 }, async () => undefined);
    const unique = actor({ name: 'gate_unique', uniqueFor: '10m', maxPending: 1000 }, async () => undefined);
    const tq = new TaskQ(new PostgresBackend(db.driver, { schema: db.schema }));
    const conn = await db.pool.connect();
    try {
      // Gate locks are exclusive; every insert also holds its actor's enqueue lock, shared (the
      // one a deregistration of the actor takes exclusively), counted apart.
      const advisoryLocks = async (mode = 'ExclusiveLock'): Promise<number> => {
        const { rows } = await db.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_locks l
           WHERE l.locktype = 'advisory' AND l.pid = $1 AND l.mode = $2`,
          [(conn as unknown as { processID: number }).processID, mode],
        );
        return rows[0]!.n;
      };
      await conn.query('BEGIN');
      await tq.enqueue(free, {}, { connection: conn });
      await tq.enqueueBatch([{ actor: free, payload: {} }], { connection: conn });
      expect(await advisoryLocks()).toBe(0);
      expect(await advisoryLocks('ShareLock')).toBe(1);
      await tq.enqueue(limited, {}, { connection: conn });
      expect(await advisoryLocks()).toBe(1);
      expect(await advisoryLocks('ShareLock')).toBe(2);
      // maxPending and uniqueFor: one lock each; taking them again in the transaction adds none.
      await tq.enqueueBatch(
        [
          { actor: unique, payload: {}, options: { identityKey: 'lock-1' } },
          { actor: limited, payload: {} },
        ],
        { connection: conn },
      );
      expect(await advisoryLocks()).toBe(3);
      expect(await advisoryLocks('ShareLock')).toBe(3);
      await conn.query('COMMIT');
      expect(await advisoryLocks()).toBe(0);
      expect(await advisoryLocks('ShareLock')).toBe(0);
    } finally {
      conn.release();
    }
  });

  it('a schema migrated without 0002 refuses a gated enqueue with SchemaNotMigratedError', async () => {
    const schema = uniqueSchemaName('gates_old');
    await new Migrator(db.driver, {
      schema,
      migrations: MIGRATIONS.filter((m) => m.id === '0001_pre_initial'),
    }).up();
    try {
      const tq = new TaskQ(new PostgresBackend(db.driver, { schema }));
      const limited = actor({ name: 'gate_limited', maxPending: 10 }, async () => undefined);
      await expect(tq.enqueue(limited, {})).rejects.toBeInstanceOf(SchemaNotMigratedError);
      expect((await db.pool.query(`SELECT count(*)::int AS n FROM "${schema}".jobs`)).rows[0].n).toBe(0);
    } finally {
      await db.pool.query(`DROP SCHEMA "${schema}" CASCADE`);
    }
  });
});
