/**
 * Thread-isolated actors get their injected values by structured clone: cloneable values arrive (as
 * copies), and a value that cannot cross fails with `DependencyNotCloneable` naming the token and
 * the actor: at worker start for process- and worker-scoped values, at the attempt (not retried)
 * for job-scoped ones. Real Postgres, an in-process Worker.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { threadActor } from '../../src/core/actor.js';
import { TaskQ } from '../../src/client/taskq.js';
import { Providers } from '../../src/di/providers.js';
import { token } from '../../src/di/token.js';
import { DependencyNotCloneable, DependencyValidationError, JobFailed } from '../../src/errors/index.js';
import { silentLogger } from '../../src/obs/logger.js';
import { Worker } from '../../src/worker/worker.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { testWorkerSettings } from '../helpers/in-process-worker.js';

const QUEUE = 'di_threads';
const handlers = new URL('../fixtures/thread-handlers.ts', import.meta.url);

const Settings = token<{ apiUrl: string; since: Date }>('Settings');
const RequestId = token<string>('RequestId');
const Client = token<{ get(): string }>('Client');
const Callback = token<() => void>('Callback');

const cloneable = threadActor({
  name: 'di_thread_ok',
  queue: QUEUE,
  module: handlers,
  exportName: 'injected',
  inject: { settings: Settings, requestId: RequestId },
});
const jobUncloneable = threadActor({
  name: 'di_thread_job_fn',
  queue: QUEUE,
  module: handlers,
  exportName: 'injected',
  retry: { maxAttempts: 3, base: 10, jitter: 0 },
  inject: { callback: Callback },
});

let serial = 0;
const since = new Date('2026-01-02T03:04:05.000Z');
const closed: string[] = [];
const providers = (): Providers =>
  new Providers()
    .value(Settings, { apiUrl: 'https://api.example.com', since })
    .factory(RequestId, { scope: 'job', dispose: (id) => void closed.push(id) }, () => `req-${++serial}`)
    .factory(Client, { scope: 'worker' }, () => ({ get: () => 'x' }))
    .factory(Callback, { scope: 'job', dispose: () => void closed.push('callback') }, () => () => undefined);

let db: TestSchema;
let tq: TaskQ;
let worker: Worker;

beforeAll(async () => {
  db = await migratedSchema('dithr');
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
  worker = new Worker({
    actors: [cloneable, jobUncloneable],
    providers: providers(),
    settings: testWorkerSettings(db.schema, { queues: [QUEUE] }),
    logger: silentLogger,
  });
  await worker.start();
});

afterAll(async () => {
  await worker?.stop();
  await tq?.close();
  await db?.drop();
});

describe('thread-isolated actors with inject', () => {
  it('get cloneable values in the thread, and their job-scoped values torn down after', async () => {
    const result = (await (await tq.enqueue(cloneable, null)).wait({ timeout: '20s' })) as {
      deps: { settings: { apiUrl: string; since: string }; requestId: string };
      settingsIsDate: boolean;
    };
    expect(result.settingsIsDate).toBe(true);
    expect(result.deps.settings.apiUrl).toBe('https://api.example.com');
    expect(result.deps.requestId).toMatch(/^req-\d+$/);
    expect(closed).toContain(result.deps.requestId);
  });

  it('fail an attempt whose job-scoped value cannot cross, without retrying it', async () => {
    const h = await tq.enqueue(jobUncloneable, null);
    expect(await h.wait({ timeout: '20s' }).catch((e: unknown) => e)).toBeInstanceOf(JobFailed);
    const row = await h.refresh();
    expect(row.attempt).toBe(1);
    expect(row.errorClass).toBe('DependencyNotCloneable');
    expect(row.errorMessage).toMatch(
      /^Callback, injected into thread-isolated actor "di_thread_job_fn", cannot be copied to its thread \(.*could not be cloned.*\): only structured-clone data crosses a thread/,
    );
    expect(closed).toContain('callback');
  });

  it('refuse to start when a process- or worker-scoped value cannot cross, naming each', async () => {
    const w = new Worker({
      actors: [
        threadActor({
          name: 'di_t1',
          queue: 'di_t',
          module: handlers,
          exportName: 'injected',
          inject: { client: Client },
        }),
        threadActor({
          name: 'di_t2',
          queue: 'di_t',
          module: handlers,
          exportName: 'injected',
          inject: { c: Client },
        }),
      ],
      providers: providers(),
      settings: testWorkerSettings(db.schema, { queues: ['di_t'] }),
      logger: silentLogger,
    });
    const err = await w.start().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DependencyValidationError);
    const problems = (err as DependencyValidationError).problems;
    expect(problems.every((p) => p instanceof DependencyNotCloneable)).toBe(true);
    expect(
      problems.map((p) => [(p as DependencyNotCloneable).tokenName, (p as DependencyNotCloneable).actor]),
    ).toEqual([
      ['Client', 'di_t1'],
      ['Client', 'di_t2'],
    ]);
    expect(problems[0]!.message).toMatch(
      /^Client, injected into thread-isolated actor "di_t1", cannot be copied/,
    );
  });
});
