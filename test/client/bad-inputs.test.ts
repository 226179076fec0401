/**
 * Every invalid input is a typed TaskQError naming the field and the rule, and nothing is written.
 *
 * One table of bad inputs to enqueue, batches, list, cancelWhere, retryWhere and cursors runs against the
 * Postgres backend (counting the rows of jobs and job_events before and after each case) and the
 * in-memory backend (the same counts through the Backend). Settings and connection strings follow,
 * on Postgres only. Each case checks the error's class and code (and, for InvalidArgumentError, its
 * field and rule), that no message prints `[object Object]`, and that no payload value reaches an
 * error.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import type { Backend } from '../../src/backend/backend.js';
import { InMemoryBackend } from '../../src/backend/memory/in-memory-backend.js';
import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { TaskQ } from '../../src/client/taskq.js';
import { actor } from '../../src/core/actor.js';
import {
  ConnectionError,
  EmptyFilterError,
  InvalidArgumentError,
  PayloadTooLarge,
  PayloadValidationError,
  TaskQError,
} from '../../src/errors/index.js';
import { SettingsError } from '../../src/settings/settings-error.js';
import { loadTaskQSettings } from '../../src/settings/taskq-settings.js';
import { loadWorkerSettings } from '../../src/settings/load-worker-settings.js';
import { migratedSchema, TEST_DSN, uniqueSchemaName, type TestSchema } from '../helpers/db.js';
import { freePort } from '../helpers/free-port.js';
import { startPgCluster, type PgCluster } from '../helpers/pg-cluster.js';

/** Text that a payload carries and that no error may repeat. */
const SECRET = 'TOP-SECRET-4242';
const LONE = '\ud800';
const ID = '01900000-0000-7000-8000-00000000beef';

const free = actor({ name: 'bad_free', queue: 'bad_q' }, async () => undefined);
const typed = actor(
  { name: 'bad_typed', queue: 'bad_q', payload: z.object({ note: z.string(), n: z.number() }) },
  async () => undefined,
);

type ErrorClass = abstract new (...args: never[]) => TaskQError;

/** What a case must raise. */
interface Expected {
  cls: ErrorClass;
  code: string;
  /** `InvalidArgumentError.field` (or `PayloadTooLarge.field`). */
  field?: string;
  /** Part of the rule / message. */
  rule?: RegExp;
}

interface BadInput extends Expected {
  name: string;
  run: (tq: TaskQ) => Promise<unknown>;
}

const arg = (field: string, rule: RegExp): Expected => ({
  cls: InvalidArgumentError,
  code: 'TASKQ_INVALID_ARGUMENT',
  field,
  rule,
});

/** A cursor built by hand from its raw text (a forged one, unless list() would write the same). */
const forge = (raw: string): string => Buffer.from(raw, 'utf8').toString('base64url');

const bigString = (bytes: number): string => 'x'.repeat(bytes);

/** The table shared by both backends: enqueue, batches, list, cancelWhere, retryWhere, cursors. */
const CASES: BadInput[] = [
  // --- enqueue: payloads -------------------------------------------------------------------------
  {
    name: 'payload: a lone surrogate in a string',
    run: (tq) => tq.enqueue(free, { secret: SECRET, note: `a${LONE}b` }),
    ...arg('payload', /valid Unicode.*found in the string at payload\.note/),
  },
  {
    name: 'payload: a lone surrogate in a key',
    run: (tq) => tq.enqueue(free, { secret: SECRET, nested: { [`k${LONE}`]: 1 } }),
    ...arg('payload', /valid Unicode.*found in the key at payload\.nested\["k\\ud800"\]/),
  },
  {
    name: 'payload: a lone surrogate through a schema',
    run: (tq) => tq.enqueue(typed, { note: `${SECRET}${LONE}`, n: 1 }),
    ...arg('payload', /valid Unicode.*payload\.note/),
  },
  {
    name: 'payload: a NUL character',
    run: (tq) => tq.enqueue(free, { secret: SECRET, note: 'a\u0000b' }),
    ...arg('payload', /NUL.*found in the string at payload\.note/),
  },
  {
    name: 'payload: NaN',
    run: (tq) => tq.enqueue(free, { secret: SECRET, score: NaN }),
    ...arg('payload', /NaN or Infinity.*found at payload\.score/),
  },
  {
    name: 'payload: Infinity in an array',
    run: (tq) => tq.enqueue(free, { secret: SECRET, values: [1, Infinity] }),
    ...arg('payload', /NaN or Infinity.*found at payload\.values\[1\]/),
  },
  {
    name: 'payload: -Infinity deep inside',
    run: (tq) => tq.enqueue(free, { secret: SECRET, deep: { list: [{ x: 1 }, { x: -Infinity }] } }),
    ...arg('payload', /NaN or Infinity.*found at payload\.deep\.list\[1\]\.x/),
  },
  {
    name: 'payload: over payloadMaxBytes (2 MiB)',
    run: (tq) => tq.enqueue(free, { secret: SECRET, blob: bigString(2 * 1024 * 1024) }),
    cls: PayloadTooLarge,
    code: 'TASKQ_PAYLOAD_TOO_LARGE',
    field: 'payload',
    rule: /above payloadMaxBytes \(1048576\)/,
  },
  {
    name: 'payload: a BigInt',
    run: (tq) => tq.enqueue(free, { secret: SECRET, n: 10n } as never),
    cls: PayloadValidationError,
    code: 'TASKQ_PAYLOAD_INVALID',
    rule: /not JSON-serialisable/,
  },
  {
    name: 'payload: a cycle',
    run: (tq) => {
      const p: Record<string, unknown> = { secret: SECRET };
      p.self = p;
      return tq.enqueue(free, p);
    },
    cls: PayloadValidationError,
    code: 'TASKQ_PAYLOAD_INVALID',
    rule: /not JSON-serialisable/,
  },
  {
    name: 'payload: fails its schema',
    run: (tq) => tq.enqueue(typed, { note: 42, n: SECRET } as never),
    cls: PayloadValidationError,
    code: 'TASKQ_PAYLOAD_INVALID',
    rule: /is invalid: note: /,
  },
  // --- enqueue: times ------------------------------------------------------------------------------
  {
    name: 'delay: 1e300 ms',
    run: (tq) => tq.enqueue(free, {}, { delay: 1e300 }),
    ...arg('enqueue.delay', /must be at most 100 years/),
  },
  {
    name: "delay: '40000d'",
    run: (tq) => tq.enqueue(free, {}, { delay: '40000d' }),
    ...arg('enqueue.delay', /must be at most 100 years/),
  },
  {
    name: 'delay: NaN',
    run: (tq) => tq.enqueue(free, {}, { delay: NaN }),
    ...arg('enqueue.delay', /must be finite/),
  },
  {
    name: 'delay: negative',
    run: (tq) => tq.enqueue(free, {}, { delay: -1 }),
    ...arg('enqueue.delay', /must not be negative/),
  },
  {
    name: 'scheduledAt: new Date(-8.64e15)',
    run: (tq) => tq.enqueue(free, {}, { scheduledAt: new Date(-8.64e15) }),
    ...arg('enqueue.scheduledAt', /between 0001-01-01T00:00:00\.000Z and 9999-12-31/),
  },
  {
    name: 'scheduledAt: new Date(8.64e15)',
    run: (tq) => tq.enqueue(free, {}, { scheduledAt: new Date(8.64e15) }),
    ...arg('enqueue.scheduledAt', /between 0001-01-01/),
  },
  {
    name: 'scheduledAt: an invalid Date',
    run: (tq) => tq.enqueue(free, {}, { scheduledAt: new Date('not a date') }),
    ...arg('enqueue.scheduledAt', /must be a valid Date/),
  },
  {
    name: 'scheduleToClose: new Date(-8.64e15)',
    run: (tq) => tq.enqueue(free, {}, { scheduleToClose: new Date(-8.64e15) }),
    ...arg('enqueue.scheduleToClose', /between 0001-01-01/),
  },
  {
    name: 'startToClose: 1e300 ms',
    run: (tq) => tq.enqueue(free, {}, { startToClose: 1e300 }),
    ...arg('enqueue.startToClose', /at most 2147483647 ms .*longest timer/),
  },
  {
    name: "startToClose: '30d' (past the longest timer)",
    run: (tq) => tq.enqueue(free, {}, { startToClose: '30d' }),
    ...arg('enqueue.startToClose', /at most 2147483647 ms/),
  },
  {
    name: 'heartbeatTimeout: 1e300 ms',
    run: (tq) => tq.enqueue(free, {}, { heartbeatTimeout: 1e300 }),
    ...arg('enqueue.heartbeatTimeout', /at most 2147483647 ms/),
  },
  // --- enqueue: text and other options -------------------------------------------------------------
  {
    name: 'tags: whitespace only',
    run: (tq) => tq.enqueue(free, {}, { tags: ['ok', ' \t '] }),
    ...arg('enqueue.tags[1]', /must not be empty or whitespace only/),
  },
  {
    name: 'tags: a lone surrogate',
    run: (tq) => tq.enqueue(free, {}, { tags: [`t${LONE}`] }),
    ...arg('enqueue.tags[0]', /valid Unicode/),
  },
  {
    name: 'idempotencyKey: a lone surrogate',
    run: (tq) => tq.enqueue(free, {}, { idempotencyKey: `k${LONE}` }),
    ...arg('enqueue.idempotencyKey', /valid Unicode/),
  },
  {
    name: 'identityKey: a lone low surrogate',
    run: (tq) => tq.enqueue(free, {}, { identityKey: '\udc00k' }),
    ...arg('enqueue.identityKey', /valid Unicode/),
  },
  {
    name: 'metadata: a lone surrogate',
    run: (tq) => tq.enqueue(free, {}, { metadata: { source: { name: `m${LONE}` } } }),
    ...arg('enqueue.metadata', /valid Unicode.*enqueue\.metadata\.source\.name/),
  },
  {
    name: 'metadata: NaN',
    run: (tq) => tq.enqueue(free, {}, { metadata: { ratio: NaN } }),
    ...arg('enqueue.metadata', /NaN or Infinity.*enqueue\.metadata\.ratio/),
  },
  {
    name: 'metadata: a BigInt',
    run: (tq) => tq.enqueue(free, {}, { metadata: { n: 1n } }),
    ...arg('enqueue.metadata', /must be JSON-serialisable/),
  },
  {
    name: 'an unknown option (tag for tags)',
    run: (tq) => tq.enqueue(free, {}, { tag: ['a'] } as never),
    ...arg('enqueue.tag', /is not an enqueue option \(did you mean tags\?\)/),
  },
  {
    name: 'an unknown option (idempotency_key)',
    run: (tq) => tq.enqueue(free, {}, { idempotency_key: 'k' } as never),
    ...arg('enqueue.idempotency_key', /did you mean idempotencyKey\?/),
  },
  {
    name: 'connection: {}',
    run: (tq) => tq.enqueue(free, {}, { connection: {} as never }),
    ...arg('enqueue.connection', /pg\.Client or pg\.PoolClient/),
  },
  {
    name: 'priority: beyond 32 bits',
    run: (tq) => tq.enqueue(free, {}, { priority: 2 ** 31 }),
    ...arg('enqueue.priority', /between -2147483648 and 2147483647/),
  },
  {
    name: 'options: not an object',
    run: (tq) => tq.enqueue(free, {}, 'fast' as never),
    ...arg('enqueue.options', /must be an object/),
  },
  // --- batches ------------------------------------------------------------------------------------
  {
    name: 'batch: NaN in the second payload',
    run: (tq) =>
      tq.enqueueBatch([
        { actor: free, payload: { n: 1 } },
        { actor: free, payload: { secret: SECRET, n: NaN } },
      ]),
    ...arg('items[1].payload', /NaN or Infinity.*items\[1\]\.payload\.n/),
  },
  {
    name: 'batch: an item with option for options',
    run: (tq) => tq.enqueueBatch([{ actor: free, payload: {}, option: { tags: ['a'] } } as never]),
    ...arg('items[0].option', /did you mean options\?/),
  },
  {
    name: 'batch: batchID for batchId',
    run: (tq) => tq.enqueueBatch([{ actor: free, payload: {} }], { batchID: ID } as never),
    ...arg('enqueueBatch.options.batchID', /did you mean batchId\?/),
  },
  {
    name: 'batch: a connection on one item',
    run: (tq) => tq.enqueueBatch([{ actor: free, payload: {}, options: { connection: {} } as never }]),
    ...arg('items[0].options.connection', /option of the whole batch/),
  },
  {
    name: 'batch: connection {}',
    run: (tq) => tq.enqueueBatch([{ actor: free, payload: {} }], { connection: {} as never }),
    ...arg('enqueueBatch.connection', /pg\.Client/),
  },
  {
    name: 'batch: a whitespace tag on the third item',
    run: (tq) =>
      tq.enqueueBatch(
        [0, 1, 2].map((n) => ({ actor: free, payload: { n }, options: { tags: [n === 2 ? ' ' : 'ok'] } })),
      ),
    ...arg('items[2].options.tags[0]', /whitespace only/),
  },
  {
    name: 'batch: the second payload over payloadMaxBytes',
    run: (tq) =>
      tq.enqueueBatch([
        { actor: free, payload: { n: 1 } },
        { actor: free, payload: { secret: SECRET, blob: bigString(1_100_000) } },
      ]),
    cls: PayloadTooLarge,
    code: 'TASKQ_PAYLOAD_TOO_LARGE',
    field: 'items[1].payload',
  },
  {
    name: 'fast batch: a lone surrogate in a scope',
    run: (tq) =>
      tq.enqueueBatchFast([
        { actor: free, payload: {}, options: { idempotencyKey: 'k', idempotencyScope: LONE } },
      ]),
    ...arg('items[0].options.idempotencyScope', /valid Unicode/),
  },
  {
    name: 'fast batch: a lone surrogate in a payload',
    run: (tq) => tq.enqueueBatchFast([{ actor: typed, payload: { note: `${SECRET}${LONE}`, n: 1 } }]),
    ...arg('items[0].payload', /valid Unicode/),
  },
  // --- list ---------------------------------------------------------------------------------------
  {
    name: 'list: tag for tags',
    run: (tq) => tq.list({ queue: 'bad_q', tag: ['t1'] } as never),
    ...arg('filter.tag', /is not a filter field \(did you mean tags\?\)/),
  },
  {
    name: 'list: limit 1e9',
    run: (tq) => tq.list({ limit: 1e9 }),
    ...arg('filter.limit', /between 0 and 1000/),
  },
  {
    name: 'list: limit 1001',
    run: (tq) => tq.list({ limit: 1001 }),
    ...arg('filter.limit', /between 0 and 1000/),
  },
  {
    name: 'list: a lone surrogate in queue',
    run: (tq) => tq.list({ queue: LONE }),
    ...arg('filter.queue', /valid Unicode/),
  },
  {
    name: 'list: an unknown orderBy',
    run: (tq) => tq.list({ orderBy: 'newest' as never }),
    ...arg('filter.orderBy', /must be one of scheduled_at_asc/),
  },
  {
    name: 'list: not an object',
    run: (tq) => tq.list([] as never),
    ...arg('filter', /must be an object/),
  },
  // --- cancelWhere --------------------------------------------------------------------------------
  {
    name: 'cancelWhere: tag for tags (would have cancelled the whole queue)',
    run: (tq) => tq.cancelWhere({ queue: 'bad_q', tag: ['t2'] } as never, 'cleanup'),
    ...arg('filter.tag', /did you mean tags\?/),
  },
  {
    name: 'cancelWhere: a limit',
    run: (tq) => tq.cancelWhere({ queue: 'bad_q', limit: 1 }),
    ...arg('filter.limit', /not accepted by cancelWhere.*not paginated/),
  },
  {
    name: 'cancelWhere: a cursor',
    run: (tq) => tq.cancelWhere({ queue: 'bad_q', cursor: 'x' }),
    ...arg('filter.cursor', /not accepted by cancelWhere/),
  },
  {
    name: 'cancelWhere: dryrun for dryRun (would have cancelled)',
    run: (tq) => tq.cancelWhere({ queue: 'bad_q' }, null, { dryrun: true } as never),
    ...arg('cancelWhere.options.dryrun', /did you mean dryRun\?/),
  },
  {
    name: 'cancelWhere: dryRun not a boolean',
    run: (tq) => tq.cancelWhere({ queue: 'bad_q' }, null, { dryRun: 'yes' } as never),
    ...arg('cancelWhere.options.dryRun', /must be a boolean/),
  },
  {
    name: 'cancelWhere: a lone surrogate in the reason',
    run: (tq) => tq.cancelWhere({ queue: 'bad_q' }, `r${LONE}`),
    ...arg('cancelWhere.reason', /valid Unicode/),
  },
  {
    name: 'cancelWhere: a lone surrogate in a tag',
    run: (tq) => tq.cancelWhere({ tags: [LONE] }),
    ...arg('filter.tags[0]', /valid Unicode/),
  },
  {
    name: 'cancelWhere: no predicate',
    run: (tq) => tq.cancelWhere({}),
    cls: EmptyFilterError,
    code: 'TASKQ_EMPTY_FILTER',
  },
  // --- retryWhere ---------------------------------------------------------------------------------
  {
    name: 'retryWhere: tag for tags (would have retried the whole queue)',
    run: (tq) => tq.retryWhere({ queue: 'bad_q', tag: ['t2'] } as never),
    ...arg('filter.tag', /did you mean tags\?/),
  },
  {
    name: 'retryWhere: a limit',
    run: (tq) => tq.retryWhere({ queue: 'bad_q', limit: 1 }),
    ...arg('filter.limit', /not accepted by retryWhere.*not paginated/),
  },
  {
    name: 'retryWhere: dryrun for dryRun (would have retried)',
    run: (tq) => tq.retryWhere({ queue: 'bad_q' }, { dryrun: true } as never),
    ...arg('retryWhere.options.dryrun', /did you mean dryRun\?/),
  },
  {
    name: 'retryWhere: a status it cannot retry',
    run: (tq) => tq.retryWhere({ queue: 'bad_q', status: ['failed', 'running'] }),
    ...arg('filter.status', /cannot be retried/),
  },
  {
    name: 'retryWhere: active jobs',
    run: (tq) => tq.retryWhere({ queue: 'bad_q', active: true }),
    ...arg('filter.active', /matches no job retryWhere can retry/),
  },
  {
    name: 'retryWhere: no predicate',
    run: (tq) => tq.retryWhere({}),
    cls: EmptyFilterError,
    code: 'TASKQ_EMPTY_FILTER',
  },
  {
    name: 'retryWhere: no filter at all',
    run: (tq) => tq.retryWhere(undefined as never),
    cls: EmptyFilterError,
    code: 'TASKQ_EMPTY_FILTER',
  },
  {
    name: 'cancel: a lone surrogate in the reason',
    run: async (tq) => tq.cancel((await tq.list({ limit: 1 })).jobs[0]!.id, LONE),
    ...arg('cancel.reason', /valid Unicode/),
  },
  // --- cursors ------------------------------------------------------------------------------------
  {
    name: 'cursor: a priority beyond 32 bits',
    run: (tq) => tq.list({ cursor: forge(`scheduled_at_asc|99999999999999|0|${ID}`) }),
    ...arg('filter.cursor', /priority is outside the 32-bit range/),
  },
  {
    name: 'cursor: a fractional priority',
    run: (tq) => tq.list({ cursor: forge(`scheduled_at_asc|1.5|0|${ID}`) }),
    ...arg('filter.cursor', /priority is not an integer/),
  },
  {
    name: 'cursor: a timestamp after the year 9999',
    run: (tq) => tq.list({ cursor: forge(`scheduled_at_asc|0|900000000000000000|${ID}`) }),
    ...arg('filter.cursor', /timestamp is outside the years 1 to 9999/),
  },
  {
    name: 'cursor: a timestamp before the year 1',
    run: (tq) =>
      tq.list({ orderBy: 'created_at_desc', cursor: forge(`created_at_desc|-8640000000000000000|${ID}`) }),
    ...arg('filter.cursor', /timestamp is outside the years 1 to 9999/),
  },
  {
    name: 'cursor: a timestamp of 30 digits',
    run: (tq) =>
      tq.list({ orderBy: 'finished_at_desc', cursor: forge(`finished_at_desc|${'9'.repeat(30)}|${ID}`) }),
    ...arg('filter.cursor', /timestamp is not an integer/),
  },
  {
    name: 'cursor: not base64url',
    run: (tq) => tq.list({ cursor: 'abc+/=' }),
    ...arg('filter.cursor', /not base64url/),
  },
  {
    name: 'cursor: longer than any list() writes',
    run: (tq) => tq.list({ cursor: 'A'.repeat(300) }),
    ...arg('filter.cursor', /longer than 256 characters/),
  },
  {
    name: 'cursor: from another ordering',
    run: (tq) => tq.list({ cursor: forge(`created_at_desc|0|${ID}`) }),
    ...arg('filter.cursor', /produced under orderBy created_at_desc/),
  },
  {
    name: 'cursor: a priority with a leading zero',
    run: (tq) => tq.list({ cursor: forge(`scheduled_at_asc|007|0|${ID}`) }),
    ...arg('filter.cursor', /not in the form list\(\) writes/),
  },
  {
    name: 'cursor: an upper-case job id',
    run: (tq) => tq.list({ cursor: forge(`scheduled_at_asc|0|0|${ID.toUpperCase()}`) }),
    ...arg('filter.cursor', /not in the form list\(\) writes/),
  },
  {
    name: 'cursor: a job id that is not a UUID',
    run: (tq) => tq.list({ cursor: forge('scheduled_at_asc|0|0|not-a-uuid') }),
    ...arg('filter.cursor', /job id is not a UUID/),
  },
  {
    name: 'cursor: an extra field',
    run: (tq) => tq.list({ cursor: forge(`scheduled_at_asc|0|0|0|${ID}`) }),
    ...arg('filter.cursor', /does not have 4 fields/),
  },
  {
    name: 'cursor: a number',
    run: (tq) => tq.list({ cursor: 42 as never }),
    ...arg('filter.cursor', /must be a string/),
  },
];

/** The state that must not change: row counts of jobs and job_events, and each job's status. */
interface Snapshot {
  jobs: number;
  events: number;
  statuses: string;
}

/** Checks `err` against the case and the rules every error keeps. */
function expectRaised(err: unknown, c: Expected): void {
  expect(err).toBeInstanceOf(c.cls);
  expect(err).toBeInstanceOf(TaskQError);
  const e = err as TaskQError & { field?: string; rule?: string; value?: unknown };
  expect(e.code).toBe(c.code);
  if (c.field !== undefined) expect(e.field).toBe(c.field);
  if (c.rule !== undefined) expect(e.message).toMatch(c.rule);
  if (c.field !== undefined) expect(e.message).toContain(c.field);
  expect(e.message).not.toContain('[object Object]');
  // No payload value in the message or in any field a logger would print.
  expect(e.message).not.toContain(SECRET);
  const fields = JSON.stringify({ ...e, message: e.message }, (_k, v: unknown) =>
    typeof v === 'bigint' ? String(v) : v,
  );
  expect(fields).not.toContain(SECRET);
}

async function failureOf(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => new Error('expected the call to fail, and it succeeded'),
    (e: unknown) => e,
  );
}

/** Seeds jobs a mistaken cancelWhere or list would touch: three waiting jobs on bad_q, one tagged t2. */
async function seed(tq: TaskQ): Promise<void> {
  await tq.enqueue(free, { n: 1 }, { tags: ['t1'] });
  await tq.enqueue(free, { n: 2 }, { tags: ['t2'] });
  await tq.enqueue(free, { n: 3 }, { delay: '1h' });
}

function defineTable(
  name: string,
  open: () => Promise<{ tq: TaskQ; snapshot: () => Promise<Snapshot>; close: () => Promise<void> }>,
): void {
  describe(`bad inputs: ${name}`, () => {
    let tq: TaskQ;
    let snapshot: () => Promise<Snapshot>;
    let close: () => Promise<void>;
    let before: Snapshot;
    beforeAll(async () => {
      ({ tq, snapshot, close } = await open());
      await seed(tq);
      before = await snapshot();
      expect(before.jobs).toBe(3);
    });
    afterAll(async () => {
      await close();
    });

    it(`has at least 40 cases (${CASES.length})`, () => {
      expect(CASES.length).toBeGreaterThanOrEqual(40);
      expect(new Set(CASES.map((c) => c.name)).size).toBe(CASES.length);
    });

    it.each(CASES.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
      expectRaised(await failureOf(c.run(tq)), c);
      expect(await snapshot()).toEqual(before);
    });

    it('the corrected calls work: the typo’d cancel previews one job and cancels it', async () => {
      const preview = await tq.cancelWhere({ queue: 'bad_q', tags: ['t2'] }, 'cleanup', { dryRun: true });
      expect(preview).toEqual({ dryRun: true, cancelledDirectly: 1, cancelRequested: 0, totalAffected: 1 });
      expect(await snapshot()).toEqual(before);
      const done = await tq.cancelWhere({ queue: 'bad_q', tags: ['t2'] }, 'cleanup');
      expect(done.totalAffected).toBe(1);
      expect((await tq.list({ queue: 'bad_q', active: true, limit: 1000 })).jobs).toHaveLength(2);
    });
  });
}

/** Every job and its event count, through the Backend (what the in-memory backend offers). */
async function backendSnapshot(backend: Backend): Promise<Snapshot> {
  const page = await backend.listJobs({
    queue: null,
    actor: null,
    identityKey: null,
    batchId: null,
    tags: [],
    statuses: null,
    limit: 1000,
    orderBy: 'created_at_desc',
    after: null,
    hasPredicates: false,
  });
  let events = 0;
  for (const j of page.jobs) events += (await backend.getEvents(j.id)).length;
  return {
    jobs: page.jobs.length,
    events,
    statuses: page.jobs
      .map((j) => `${j.id}:${j.status}:${j.cancelRequestedAt === null ? '' : 'c'}`)
      .sort()
      .join(','),
  };
}

defineTable('PostgresBackend', async () => {
  const db = await migratedSchema('bad');
  const q = `"${db.schema}"`;
  return {
    tq: new TaskQ(new PostgresBackend(db.driver, { schema: db.schema }), { capacityCacheTtl: 0 }),
    async snapshot() {
      const counts = await db.pool.query<{ jobs: number; events: number; statuses: string | null }>(
        `SELECT (SELECT count(*) FROM ${q}.jobs)::int AS jobs,
                (SELECT count(*) FROM ${q}.job_events)::int AS events,
                (SELECT string_agg(id || ':' || status || ':' || CASE WHEN cancel_requested_at IS NULL THEN '' ELSE 'c' END, ',' ORDER BY id || ':' || status)
                   FROM ${q}.jobs) AS statuses`,
      );
      const r = counts.rows[0]!;
      return { jobs: r.jobs, events: r.events, statuses: r.statuses ?? '' };
    },
    close: () => db.drop(),
  };
});

defineTable('InMemoryBackend', async () => {
  const backend = new InMemoryBackend();
  return {
    tq: new TaskQ(backend, { capacityCacheTtl: 0 }),
    snapshot: () => backendSnapshot(backend),
    close: async () => undefined,
  };
});

/** Cases that do not depend on a backend's storage: settings, client options, connection strings. */
describe('bad inputs: settings and connection strings (Postgres)', () => {
  let db: TestSchema;
  let rows: () => Promise<string>;
  let before: string;
  beforeAll(async () => {
    db = await migratedSchema('badcfg');
    const q = `"${db.schema}"`;
    rows = async () =>
      JSON.stringify(
        (
          await db.pool.query(
            `SELECT (SELECT count(*) FROM ${q}.jobs)::int AS jobs, (SELECT count(*) FROM ${q}.job_events)::int AS events`,
          )
        ).rows[0],
      );
    const tq = new TaskQ(new PostgresBackend(db.driver, { schema: db.schema }));
    await seed(tq);
    before = await rows();
  });
  afterAll(async () => {
    await db.drop();
  });

  const settingsError = (setting: string, rule: RegExp) => ({
    cls: SettingsError,
    code: 'TASKQ_INVALID_SETTINGS',
    check: (e: unknown) => {
      const problems = (e as SettingsError).problems;
      expect(problems.map((p) => p.setting)).toContain(setting);
      expect(problems.find((p) => p.setting === setting)?.rule).toMatch(rule);
    },
  });

  const SETTINGS_CASES: {
    name: string;
    run: () => Promise<unknown>;
    cls: ErrorClass;
    code: string;
    field?: string;
    rule?: RegExp;
    check?: (e: unknown) => void;
  }[] = [
    {
      name: 'TASKQ_PAYLOAD_MAX_BYTES below 1 KiB',
      run: async () => loadTaskQSettings({ env: { TASKQ_PAYLOAD_MAX_BYTES: '100' } }),
      ...settingsError('payloadMaxBytes', /between 1024 and 67108864/),
    },
    {
      name: 'TaskQ.fromEnv with a payload bound above 64 MiB',
      run: () => TaskQ.fromEnv({ TASKQ_PG_DSN: TEST_DSN, TASKQ_PAYLOAD_MAX_BYTES: String(2 ** 30) }),
      ...settingsError('payloadMaxBytes', /between 1024 and 67108864/),
    },
    {
      name: 'a worker lockLease of 1e300 ms',
      run: async () => loadWorkerSettings({ overrides: { lockLease: 1e300 } }),
      ...settingsError('lockLease', /at most 2147483647 ms/),
    },
    {
      name: 'a retention period of 40,000 days',
      run: async () => loadWorkerSettings({ env: { TASKQ_PRUNE_RETENTION_FAILED: '40000d' } }),
      ...settingsError('pruneRetentionFailed', /at most 100 years/),
    },
    {
      name: 'an unknown client setting',
      run: async () => loadTaskQSettings({ overrides: { payloadMaxByte: 1 } as never }),
      ...settingsError('payloadMaxByte', /did you mean payloadMaxBytes\?/),
    },
    {
      name: 'client option payloadMaxBytes: 0',
      run: async () => new TaskQ(new InMemoryBackend(), { payloadMaxBytes: 0 }),
      ...arg('TaskQ.payloadMaxBytes', /between 1024 and 67108864/),
    },
    {
      name: 'client option idempotencyKeyMaxBytes: 1e6',
      run: async () => new TaskQ(new InMemoryBackend(), { idempotencyKeyMaxBytes: 1e6 }),
      ...arg('TaskQ.idempotencyKeyMaxBytes', /between 1 and 2048/),
    },
    {
      name: 'an actor with startToClose past the longest timer',
      run: async () => actor({ name: 'bad_timer', startToClose: '30d' }, async () => undefined),
      ...arg('actor(bad_timer).startToClose', /at most 2147483647 ms/),
    },
    {
      name: 'a misspelt TaskQ.open option',
      run: () => TaskQ.open({ dsn: TEST_DSN, schemaName: 'x' } as never),
      ...arg('TaskQ.open.schemaName', /is not an option of TaskQ\.open\(\)/),
    },
    {
      name: 'a misspelt client option',
      run: async () => new TaskQ(new InMemoryBackend(), { payloadMaxByte: 2048 } as never),
      ...arg('TaskQ.options.payloadMaxByte', /did you mean payloadMaxBytes\?/),
    },
    {
      name: 'a DSN of another database',
      run: () => TaskQ.open({ dsn: 'mysql://root:hunter2@db/app' }),
      ...arg('TaskQ.open.dsn', /must be a postgres:\/\/ or postgresql:\/\/ URL/),
    },
  ];

  it.each(SETTINGS_CASES.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const err = await failureOf(c.run());
    expectRaised(err, c);
    c.check?.(err);
    expect((err as Error).message).not.toContain('hunter2');
    expect(await rows()).toBe(before);
  });

  /** The ConnectionError of the first call that connects, with its codes and hint. */
  async function connectionFailure(dsn: string): Promise<ConnectionError> {
    const tq = await TaskQ.open({ dsn, schema: db.schema });
    try {
      const err = await failureOf(tq.list({ limit: 1 }));
      expect(err).toBeInstanceOf(ConnectionError);
      const e = err as ConnectionError;
      expect(e.code).toBe('TASKQ_CONNECTION_FAILED');
      expect(e.hint.length).toBeGreaterThan(10);
      expect(e.message).toContain(e.hint);
      expect(e.message).not.toContain('[object Object]');
      return e;
    } finally {
      await tq.close();
    }
  }

  const withUrl = (change: (u: URL) => void): string => {
    const u = new URL(TEST_DSN);
    change(u);
    return u.toString();
  };

  it('a refused connection keeps the socket code', async () => {
    const port = await freePort();
    const e = await connectionFailure(`postgres://postgres:hunter2@127.0.0.1:${port}/test`);
    expect(e).toMatchObject({ reason: 'refused', socketCode: 'ECONNREFUSED', sqlState: null });
    expect(e.message).not.toContain('hunter2');
    expect(await rows()).toBe(before);
  });

  it('an unknown role keeps SQLSTATE 28000', async () => {
    const e = await connectionFailure(withUrl((u) => (u.username = uniqueSchemaName('no_role'))));
    expect(e).toMatchObject({ reason: 'auth-failed', sqlState: '28000', socketCode: null });
    expect(e.hint).toMatch(/Check the user and password/);
    expect(await rows()).toBe(before);
  });

  it('an unknown database keeps SQLSTATE 3D000', async () => {
    const e = await connectionFailure(withUrl((u) => (u.pathname = `/${uniqueSchemaName('no_db')}`)));
    expect(e).toMatchObject({ reason: 'database-not-found', sqlState: '3D000' });
    expect(e.hint).toMatch(/createdb/);
    expect(await rows()).toBe(before);
  });

  it('a host that does not resolve keeps the DNS code', async () => {
    const e = await connectionFailure('postgres://postgres@taskq-no-such-host.invalid:5432/test');
    expect(e.reason).toBe('host-not-found');
    expect(['ENOTFOUND', 'EAI_AGAIN']).toContain(e.socketCode);
  });

  describe('on a server with password authentication', () => {
    let cluster: PgCluster;
    beforeAll(async () => {
      cluster = await startPgCluster({ maxConnections: 10 });
    }, 120_000);
    afterAll(async () => {
      await cluster?.destroy();
    });

    it('a bad password keeps SQLSTATE 28P01 and never shows the password', async () => {
      const dsn = new URL(cluster.dsn);
      dsn.password = 'not-the-password';
      const tq = await TaskQ.open({ dsn: dsn.toString() });
      try {
        const err = await failureOf(tq.list({ limit: 1 }));
        expect(err).toBeInstanceOf(ConnectionError);
        const e = err as ConnectionError;
        expect(e).toMatchObject({ reason: 'auth-failed', sqlState: '28P01', socketCode: null });
        expect(e.message).not.toContain('not-the-password');
        expect(e.message).toContain(e.hint);
      } finally {
        await tq.close();
      }
    });
  });
});
