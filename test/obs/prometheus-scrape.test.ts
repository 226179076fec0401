/**
 * Issue 63: a real Prometheus (Debian's `prometheus` package) scrapes a running in-process worker
 * (`metricsPort`, Bearer token from a credentials file) and a `taskq health metrics` exporter on the
 * same schema, and its query API shows what ran; a scrape job without the token is refused with a
 * 401. The Prometheus server is the test's own: a temporary directory, a free port, no service.
 * Where the package is not installed the suite is skipped with a printed reason;
 * prometheus-exposition.test.ts checks the exposition without a server either way.
 */
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { TaskQ } from '../../src/client/taskq.js';
import { runCli } from '../../src/cli/main.js';
import type { Worker } from '../../src/worker/worker.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { freePort } from '../helpers/free-port.js';
import { startTestWorker } from '../helpers/in-process-worker.js';
import { makeScratchDir } from '../helpers/scratch-dir.js';
import { logTail, spawnServer, type ServerProcess } from '../helpers/server-process.js';
import { waitFor } from '../helpers/wait.js';

const PROMETHEUS = '/usr/bin/prometheus';
const present = existsSync(PROMETHEUS);
if (!present)
  console.log(
    `prometheus-scrape: skipped: ${PROMETHEUS} is missing (Debian package "prometheus" not installed); ` +
      'prometheus-exposition.test.ts still checks the exposition with a text-format parser',
  );

const QUEUE = 'promscrape';
const TOKEN = randomBytes(16).toString('hex');
const SUCCEEDED = 3;

const ok = actor(
  { name: 'promscrape_ok', queue: QUEUE, payload: z.object({ n: z.number() }) },
  async () => 'ok',
);
const bad = actor({ name: 'promscrape_bad', queue: QUEUE, retry: { maxAttempts: 1 } }, async () => {
  throw new Error('fails for good');
});

/** One series of an instant-query answer. */
interface Series {
  metric: Record<string, string>;
  value: [number, string];
}
/** A target of `/api/v1/targets`. */
interface Target {
  labels: Record<string, string>;
  health: 'up' | 'down' | 'unknown';
  lastError: string;
}

describe.skipIf(!present)('a real Prometheus scrapes a worker and the fleet exporter', () => {
  let db: TestSchema;
  let tq: TaskQ;
  let worker: Worker;
  let dir: string;
  let prometheus: ServerProcess | null = null;
  let api = '';
  const exporterStop = new AbortController();
  let exporterDone: Promise<number> | null = null;
  const exporterOut: string[] = [];
  const exporterErr: string[] = [];

  /** A GET on the Prometheus HTTP API; the `data` of a success. */
  async function prom<T>(path: string, params: Record<string, string> = {}): Promise<T> {
    const res = await fetch(`${api}${path}?${new URLSearchParams(params).toString()}`);
    const body = (await res.json()) as { status: string; data: T; error?: string };
    if (body.status !== 'success') throw new Error(`${path}: ${res.status} ${body.error ?? ''}`);
    return body.data;
  }
  const targets = async (): Promise<Target[]> =>
    (await prom<{ activeTargets: Target[] }>('/api/v1/targets', { state: 'active' })).activeTargets;
  const query = async (q: string): Promise<Series[]> =>
    (await prom<{ resultType: string; result: Series[] }>('/api/v1/query', { query: q })).result;
  /** Queries `q` until `check` accepts the answer (a scrape lands every second); returns it. */
  async function queryUntil(q: string, check: (r: Series[]) => boolean, what: string): Promise<Series[]> {
    let last: Series[] = [];
    await waitFor(
      async () => check((last = await query(q))),
      30_000,
      `${what} (query ${q}; last answer ${JSON.stringify(last)}; prometheus log: ${logTail(join(dir, 'prometheus.log'), 500)})`,
    );
    return last;
  }

  beforeAll(async () => {
    dir = makeScratchDir('taskq-prometheus-');
    db = await migratedSchema('promscrape');
    tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
    worker = await startTestWorker([ok, bad], db.schema, {
      queues: [QUEUE],
      metricsPort: 0,
      healthHost: '127.0.0.1',
      healthToken: TOKEN,
      queueDepthInterval: '1s',
    });

    exporterDone = runCli(
      ['health', 'metrics', '--port', '0', '--host', '127.0.0.1', '--dsn', TEST_DSN, '--schema', db.schema],
      {
        out: (line) => exporterOut.push(line),
        err: (line) => exporterErr.push(line),
        env: { TASKQ_HEALTH_TOKEN: TOKEN, TASKQ_QUEUE_DEPTH_INTERVAL: '1s', TASKQ_LOG_LEVEL: 'warn' },
        stop: exporterStop.signal,
      },
    );
    let exporterPort = 0;
    await waitFor(
      () => {
        if (exporterErr.length > 0) throw new Error(`taskq health metrics failed: ${exporterErr.join('\n')}`);
        const m = /^serving the fleet gauges of schema \S+ at http:\/\/127\.0\.0\.1:(\d+)\/metrics$/.exec(
          exporterOut.join('\n'),
        );
        if (m) exporterPort = Number(m[1]);
        return m !== null;
      },
      15_000,
      'taskq health metrics to serve',
    );

    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, `${TOKEN}\n`, { mode: 0o600 });
    const target = (port: number): string => `[{ targets: ['127.0.0.1:${port}'] }]`;
    const workerPort = worker.metricsServer!.address.port;
    writeFileSync(
      join(dir, 'prometheus.yml'),
      [
        'global:',
        '  scrape_interval: 1s',
        '  scrape_timeout: 1s',
        'scrape_configs:',
        '  - job_name: worker',
        `    static_configs: ${target(workerPort)}`,
        `    authorization: { type: Bearer, credentials_file: '${tokenFile}' }`,
        '  - job_name: exporter',
        `    static_configs: ${target(exporterPort)}`,
        `    authorization: { type: Bearer, credentials_file: '${tokenFile}' }`,
        '  - job_name: worker_without_token',
        `    static_configs: ${target(workerPort)}`,
        '',
      ].join('\n'),
    );
    // The port was free a moment ago; if someone took it meanwhile, try another.
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      api = `http://127.0.0.1:${port}`;
      const logFile = join(dir, 'prometheus.log');
      const p = spawnServer(
        PROMETHEUS,
        [
          `--config.file=${join(dir, 'prometheus.yml')}`,
          `--storage.tsdb.path=${join(dir, 'data')}`,
          `--web.listen-address=127.0.0.1:${port}`,
          '--log.level=warn',
        ],
        { deathSignal: 'SIGTERM', logFile, cwd: dir },
      );
      prometheus = p;
      try {
        await waitFor(
          async () => {
            if (!p.running()) throw new Error(`prometheus exited while starting:\n${logTail(logFile)}`);
            return fetch(`${api}/-/ready`).then(
              (r) => r.ok,
              () => false,
            );
          },
          30_000,
          `prometheus on port ${port}`,
        );
        break;
      } catch (err) {
        await p.stop('SIGTERM');
        if (attempt >= 3 || !/address already in use/i.test(String(err))) throw err;
      }
    }

    const handles = await Promise.all(Array.from({ length: SUCCEEDED }, (_, n) => tq.enqueue(ok, { n })));
    handles.push(await tq.enqueue(bad, {}));
    for (const h of handles) await tq.waitForTerminal(h.jobId, 30_000);
    // One job left waiting, so the queue has a depth series whatever else finished.
    await tq.enqueue(ok, { n: 99 }, { delay: '1h' });
  }, 120_000);

  afterAll(async () => {
    await prometheus?.stop('SIGTERM', 10_000);
    exporterStop.abort();
    await exporterDone;
    await worker?.stop();
    await tq?.close();
    await db?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('scrapes both targets with the token and sees what ran', async () => {
    await waitFor(
      async () => {
        const up = (await targets()).filter((t) => t.health === 'up').map((t) => t.labels.job);
        return up.includes('worker') && up.includes('exporter');
      },
      30_000,
      'both targets up',
    );

    const consumed = 'messaging_client_consumed_messages_total';
    const total = (r: Series[]): number => r.reduce((acc, s) => acc + Number(s.value[1]), 0);
    await queryUntil(
      `${consumed}{job="worker",taskq_outcome="succeeded"}`,
      (r) => total(r) === SUCCEEDED,
      'the succeeded count',
    );
    const failed = await queryUntil(
      `${consumed}{job="worker",taskq_outcome="failed"}`,
      (r) => total(r) === 1,
      'the failed count',
    );
    expect(failed[0]!.metric).toMatchObject({
      messaging_destination_name: QUEUE,
      taskq_actor: 'promscrape_bad',
      instance: `127.0.0.1:${worker.metricsServer!.address.port}`,
    });

    const depth = await queryUntil(
      `taskq_queue_jobs{messaging_destination_name="${QUEUE}",taskq_status="scheduled"}`,
      (r) => r.length === 2 && r.every((s) => s.value[1] === '1'),
      'the queue depth from both targets',
    );
    expect(depth.map((s) => s.metric.job).sort()).toEqual(['exporter', 'worker']);

    const leaders = await queryUntil(
      'taskq_fleet_leaders',
      (r) => r.length === 2 && r.every((s) => s.value[1] === '1'),
      'one live leader, seen by both targets',
    );
    expect(leaders.map((s) => s.metric.job).sort()).toEqual(['exporter', 'worker']);

    const slots = await queryUntil('taskq_worker_slots', (r) => r.length === 1, 'the worker slots');
    expect(slots[0]!.metric.job).toBe('worker');
    expect(slots[0]!.value[1]).toBe('4');
  });

  it('marks a target scraped without the token down, with the 401 in lastError', async () => {
    let target: Target | undefined;
    await waitFor(
      async () => {
        target = (await targets()).find((t) => t.labels.job === 'worker_without_token');
        return target?.health === 'down';
      },
      30_000,
      'the target without a token to be scraped',
    );
    expect(target!.lastError).toMatch(/401/);
    // A refused scrape stores no series.
    expect(await query('taskq_worker_slots{job="worker_without_token"}')).toEqual([]);
  });
});
