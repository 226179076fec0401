/**
 * The witness of scripts/check-isolation.sh: holds a connection to the machine's Postgres and one to
 * its Redis while the test suite runs, and then says whether either service was disturbed.
 *
 * On start it records the held Postgres session's pid, `pg_postmaster_start_time()` and Redis's
 * `run_id` (INFO server), and prints one JSON line `{"event":"ready",…}` on stdout. It pings both
 * held connections every few seconds, noting any failure. When its stdin closes it checks, and
 * prints one JSON line `{"event":"verdict","ok":…}`: the held session still answers with the same
 * pid, the postmaster start time and Redis's run_id are unchanged, the held Redis connection is
 * still the same client, and no ping failed. Exit status 0 when all hold, 1 otherwise.
 */
import { Redis } from 'ioredis';
import pg from 'pg';

const dsn = process.env.TASKQ_TEST_DSN ?? 'postgres://postgres@127.0.0.1:5432/test';
const redisUrl = process.env.TASKQ_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const PING_EVERY_MS = 2000;

const problems: string[] = [];
const note = (what: string): void => {
  problems.push(`${new Date().toISOString()} ${what}`);
};

/** Reads `run_id` from INFO server. */
async function runId(client: Redis): Promise<string> {
  const info = await client.info('server');
  const match = /^run_id:(\S+)/m.exec(info);
  if (!match) throw new Error('INFO server has no run_id');
  return match[1]!;
}

/** `pg_postmaster_start_time()` read on a connection of its own. */
async function postmasterStart(): Promise<string> {
  const c = new pg.Client({ connectionString: dsn, application_name: 'taskq-isolation-witness-check' });
  await c.connect();
  try {
    return (await c.query<{ t: string }>('SELECT pg_postmaster_start_time()::text AS t')).rows[0]!.t;
  } finally {
    await c.end();
  }
}

const held = new pg.Client({ connectionString: dsn, application_name: 'taskq-isolation-witness' });
held.on('error', (err) => note(`held Postgres connection error: ${err.message}`));
held.on('end', () => note('held Postgres connection ended'));
await held.connect();
const pid = (await held.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
const pgStart = await postmasterStart();

// No reconnection: a dropped connection must stay visible as dropped.
const redis = new Redis(redisUrl, {
  retryStrategy: () => null,
  maxRetriesPerRequest: 0,
  connectionName: 'taskq-isolation-witness',
});
redis.on('error', (err) => note(`held Redis connection error: ${err.message}`));
redis.on('end', () => note('held Redis connection ended'));
const redisRunId = await runId(redis);
const redisClientId = Number(await redis.client('ID'));

process.stdout.write(
  `${JSON.stringify({ event: 'ready', pgPid: pid, pgStart, redisRunId, redisClientId })}\n`,
);

const pinger = setInterval(() => {
  held.query('SELECT 1').catch((err: Error) => note(`held Postgres ping failed: ${err.message}`));
  redis.ping().catch((err: Error) => note(`held Redis ping failed: ${err.message}`));
}, PING_EVERY_MS);

await new Promise<void>((resolve) => {
  process.stdin.on('end', resolve);
  process.stdin.on('close', resolve);
  process.stdin.resume();
});
clearInterval(pinger);

const verdict: Record<string, unknown> = { event: 'verdict' };
try {
  const now = (await held.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  verdict.pgPid = now;
  if (now !== pid) note(`held Postgres session pid changed: ${pid} -> ${now}`);
} catch (err) {
  note(`held Postgres connection does not answer: ${(err as Error).message}`);
}
try {
  const now = await postmasterStart();
  verdict.pgStart = now;
  if (now !== pgStart) note(`Postgres restarted: postmaster start ${pgStart} -> ${now}`);
} catch (err) {
  note(`Postgres does not answer: ${(err as Error).message}`);
}
try {
  const now = await runId(redis);
  verdict.redisRunId = now;
  if (now !== redisRunId) note(`Redis restarted: run_id ${redisRunId} -> ${now}`);
  const id = Number(await redis.client('ID'));
  if (id !== redisClientId) note(`held Redis connection replaced: client id ${redisClientId} -> ${id}`);
} catch (err) {
  note(`held Redis connection does not answer: ${(err as Error).message}`);
}
// Our own closing below ends both connections: the verdict is taken before it.
verdict.problems = [...problems];
verdict.ok = problems.length === 0;
await held.end().catch(() => undefined);
redis.disconnect();
process.stdout.write(`${JSON.stringify(verdict)}\n`);
process.exit(verdict.ok ? 0 : 1);
