/**
 * Issue 63: what a worker's `metricsPort` endpoint serves, checked without a Prometheus server by a
 * strict parser of the text format (test/helpers/prometheus-text.ts): every family typed, every
 * TaskQ family in the catalog, histograms well formed, outcomes counted as they ran; the endpoint's
 * token, method and path checks; the settings that refuse it; a port already taken.
 */
import { createServer, type Server } from 'node:net';
import { randomBytes } from 'node:crypto';

import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { TaskQ } from '../../src/client/taskq.js';
import { METRIC_CATALOG, prometheusName } from '../../src/obs/metrics/metric-catalog.js';
import { silentLogger } from '../../src/obs/logger.js';
import { loadWorkerSettings } from '../../src/settings/load-worker-settings.js';
import { SettingsError } from '../../src/settings/settings-error.js';
import { InvalidArgumentError } from '../../src/errors/invalid-argument-error.js';
import { Worker } from '../../src/worker/worker.js';
import { freePort } from '../helpers/free-port.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { startTestWorker, testWorkerSettings } from '../helpers/in-process-worker.js';
import { parsePrometheusText, PromParseError, type PromExposition } from '../helpers/prometheus-text.js';
import { waitFor } from '../helpers/wait.js';

const QUEUE = 'promx';
const TOKEN = randomBytes(16).toString('hex');
const SUCCEEDED = 3;

const ok = actor({ name: 'promx_ok', queue: QUEUE, payload: z.object({ n: z.number() }) }, async () => 'ok');
const bad = actor({ name: 'promx_bad', queue: QUEUE, retry: { maxAttempts: 1 } }, async () => {
  throw new Error('fails for good');
});

let db: TestSchema;
let tq: TaskQ;
let worker: Worker;
let url: string;

/** GET (or `method`) on the worker's endpoint, with the token unless `auth` says otherwise. */
function scrape(
  path = '/metrics',
  { auth = `Bearer ${TOKEN}`, method = 'GET' }: { auth?: string | null; method?: string } = {},
): Promise<Response> {
  return fetch(`${url}${path}`, { method, headers: auth === null ? {} : { authorization: auth } });
}

async function exposition(): Promise<PromExposition> {
  const res = await scrape();
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
  return parsePrometheusText(await res.text());
}

/** Sum of the samples named `name` whose labels include `labels`. */
function sum(e: PromExposition, name: string, labels: Record<string, string> = {}): number {
  return e.samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((acc, s) => acc + s.value, 0);
}

beforeAll(async () => {
  db = await migratedSchema('promx');
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
  worker = await startTestWorker([ok, bad], db.schema, {
    queues: [QUEUE],
    metricsPort: 0,
    healthHost: '127.0.0.1',
    healthToken: TOKEN,
    queueDepthInterval: '1s',
  });
  const { host, port } = worker.metricsServer!.address;
  url = `http://${host}:${port}`;
  const handles = await Promise.all(Array.from({ length: SUCCEEDED }, (_, n) => tq.enqueue(ok, { n })));
  handles.push(await tq.enqueue(bad, {}));
  for (const h of handles) await tq.waitForTerminal(h.jobId, 30_000);
});
afterAll(async () => {
  await worker?.stop();
  await tq?.close();
  await db?.drop();
});

describe('the Prometheus text-format parser (test helper)', () => {
  it('reads names, escaped label values, values and timestamps', () => {
    const e = parsePrometheusText(
      [
        '# HELP x_total Help with \\\\ and \\n.',
        '# TYPE x_total counter',
        '# a plain comment',
        'x_total{a="q\\"uote",b="back\\\\slash",c="new\\nline"} 3 1700000000000',
        'x_total 1.5e3',
        '# TYPE h histogram',
        'h_bucket{le="1"} 1',
        'h_bucket{le="+Inf"} 2',
        'h_sum 3',
        'h_count 2',
        '',
      ].join('\n'),
    );
    const x = e.families.get('x_total')!;
    expect(x.type).toBe('counter');
    expect(x.help).toBe('Help with \\ and \n.');
    expect(x.samples[0]).toMatchObject({
      labels: { a: 'q"uote', b: 'back\\slash', c: 'new\nline' },
      value: 3,
      timestamp: 1_700_000_000_000,
    });
    expect(x.samples[1]!.value).toBe(1500);
    expect(e.families.get('h')!.samples.map((s) => s.name)).toEqual([
      'h_bucket',
      'h_bucket',
      'h_sum',
      'h_count',
    ]);
    expect(e.families.get('h')!.samples[1]!.labels.le).toBe('+Inf');
  });

  it.each([
    ['x{a="b} 1\n', /line 1 .*unterminated value of label a/],
    ['x{a="\\t"} 1\n', /line 1 .*unknown escape \\t/],
    ['x{a=b} 1\n', /line 1 .*expected '"'/],
    ['x{1a="b"} 1\n', /line 1 .*expected a label name/],
    ['x{a="b",a="c"} 1\n', /line 1 .*label a appears twice/],
    ['x one\n', /line 1 .*bad value "one"/],
    ['x 1 soon\n', /line 1 .*bad timestamp "soon"/],
    ['9x 1\n', /line 1 .*expected a metric name/],
    ['x\n', /line 1 .*expected " value/],
    ['# TYPE x counter\n# TYPE x gauge\n', /line 2 .*a second TYPE for x/],
    ['# TYPE x countr\n', /line 1 .*unknown type "countr"/],
    ['x 1\n# TYPE x gauge\n', /line 2 .*comes after its samples/],
    ['x 1', /line 1 .*no newline/],
    ['# HELP x a \\t tab\n', /line 1 .*unknown escape \\t in the HELP of x/],
  ])('rejects %j naming the line', (text, message) => {
    expect(() => parsePrometheusText(text)).toThrow(PromParseError);
    expect(() => parsePrometheusText(text)).toThrow(message);
  });
});

describe('a worker’s /metrics (metricsPort), parsed', () => {
  it('types every family, and every TaskQ family is a catalog entry', async () => {
    const e = await exposition();
    const catalog = new Map(METRIC_CATALOG.map((m) => [prometheusName(m), m]));
    for (const f of e.families.values()) {
      if (f.samples.length === 0) continue;
      expect(f.type, `family ${f.name} (line ${f.samples[0]!.line}) has no TYPE line`).toBeDefined();
      if (!/^(taskq|messaging)_/.test(f.name)) continue;
      const spec = catalog.get(f.name);
      expect(spec, `${f.name} is not the prometheusName of a METRIC_CATALOG entry`).toBeDefined();
      const expectedType = spec!.kind === 'observableCounter' ? 'counter' : spec!.kind;
      expect(f.type, `the TYPE of ${f.name}`).toBe(expectedType);
      const suffixes = f.type === 'histogram' ? ['_bucket', '_sum', '_count'] : [''];
      for (const s of f.samples) expect(suffixes.map((x) => f.name + x)).toContain(s.name);
    }
    // The worker's own instruments are there, not only the fleet's.
    for (const name of [
      'taskq_worker_slots',
      'messaging_client_consumed_messages_total',
      'messaging_process_duration',
    ])
      expect(e.families.get(name)?.samples.length, name).toBeGreaterThan(0);
  });

  it('serves histograms with monotone le buckets whose +Inf equals _count', async () => {
    const e = await exposition();
    const histograms = [...e.families.values()].filter((f) => f.type === 'histogram' && f.samples.length > 0);
    expect(histograms.map((h) => h.name)).toContain('messaging_process_duration');
    for (const h of histograms) {
      const series = new Map<string, { buckets: [number, number][]; count?: number; sum?: number }>();
      const keyOf = (labels: Record<string, string>): string =>
        JSON.stringify(
          Object.entries(labels)
            .filter(([k]) => k !== 'le')
            .sort(([a], [b]) => a.localeCompare(b)),
        );
      for (const s of h.samples) {
        const key = keyOf(s.labels);
        const entry = series.get(key) ?? { buckets: [] };
        series.set(key, entry);
        if (s.name === `${h.name}_bucket`) {
          const le = s.labels.le;
          expect(le, `${h.name}_bucket on line ${s.line} has no le`).toBeDefined();
          const bound = le === '+Inf' ? Infinity : Number(le);
          expect(Number.isNaN(bound), `le=${le} on line ${s.line}`).toBe(false);
          entry.buckets.push([bound, s.value]);
        } else if (s.name === `${h.name}_count`) entry.count = s.value;
        else entry.sum = s.value;
      }
      for (const [key, { buckets, count, sum: total }] of series) {
        const what = `${h.name} ${key}`;
        expect(count, `${what}: _count`).toBeDefined();
        expect(total, `${what}: _sum`).toBeDefined();
        for (let i = 1; i < buckets.length; i++) {
          expect(buckets[i]![0], `${what}: le ascending`).toBeGreaterThan(buckets[i - 1]![0]);
          expect(buckets[i]![1], `${what}: cumulative counts`).toBeGreaterThanOrEqual(buckets[i - 1]![1]);
        }
        expect(buckets.at(-1)?.[0], `${what}: last bucket`).toBe(Infinity);
        expect(buckets.at(-1)![1], `${what}: +Inf bucket = _count`).toBe(count);
      }
    }
  });

  it('counts consumed attempts by outcome as they ran', async () => {
    let e = await exposition();
    const consumed = 'messaging_client_consumed_messages_total';
    await waitFor(
      async () => {
        e = await exposition();
        return sum(e, consumed) >= SUCCEEDED + 1;
      },
      10_000,
      'the consumed counters',
    );
    const labels = (actorName: string, outcome: string) => ({
      messaging_destination_name: QUEUE,
      taskq_actor: actorName,
      taskq_outcome: outcome,
    });
    expect(sum(e, consumed, labels('promx_ok', 'succeeded'))).toBe(SUCCEEDED);
    expect(sum(e, consumed, labels('promx_bad', 'failed'))).toBe(1);
    expect(sum(e, consumed)).toBe(SUCCEEDED + 1);
    expect(sum(e, 'messaging_process_duration_count', { taskq_outcome: 'succeeded' })).toBe(SUCCEEDED);
    expect(sum(e, 'taskq_worker_slots')).toBe(4);
  });

  it('answers 401 without the token or with a wrong one, 405 to POST, 404 elsewhere', async () => {
    const none = await scrape('/metrics', { auth: null });
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer /);
    expect(await none.text()).not.toMatch(/taskq_/);
    const wrong = await scrape('/metrics', { auth: `Bearer ${TOKEN}x` });
    expect(wrong.status).toBe(401);
    expect(await wrong.text()).not.toMatch(/taskq_/);
    const post = await scrape('/metrics', { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET');
    await post.body?.cancel();
    const elsewhere = await scrape('/other');
    expect(elsewhere.status).toBe(404);
    await elsewhere.body?.cancel();
  });
});

describe('metricsPort refused or unbindable', () => {
  it('refuses metricsPort with otelEnabled false, naming both settings', () => {
    const check = (fn: () => unknown): void => {
      let caught: unknown;
      try {
        fn();
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(SettingsError);
      expect((caught as Error).message).toMatch(/metricsPort/);
      expect((caught as Error).message).toMatch(/otelEnabled/);
    };
    check(() => loadWorkerSettings({ overrides: { metricsPort: 9464, otelEnabled: false } }));
    check(() =>
      loadWorkerSettings({ env: { TASKQ_METRICS_PORT: '9464', TASKQ_OTEL_ENABLED: 'false' }, overrides: {} }),
    );
    check(
      () =>
        new Worker({
          actors: [ok],
          settings: testWorkerSettings('unused', { metricsPort: 9464, otelEnabled: false }),
          logger: silentLogger,
        }),
    );
  });

  it('fails to start on a taken metricsPort, naming it, and leaves nothing running', async () => {
    const squatter: Server = createServer((socket) => socket.end());
    await new Promise<void>((resolve) => squatter.listen(0, '127.0.0.1', resolve));
    const port = (squatter.address() as { port: number }).port;
    try {
      const healthPort = await freePort();
      const before = await db.pool.query(`SELECT count(*)::int AS n FROM "${db.schema}".workers`);
      const w = new Worker({
        actors: [ok],
        settings: testWorkerSettings(db.schema, {
          queues: [QUEUE],
          metricsPort: port,
          healthHost: '127.0.0.1',
          healthPort,
          // The watchdog too (its loop-lag budget needs a longer lease than the tests' default).
          watchdogEnabled: true,
          lockLease: '60s',
        }),
        logger: silentLogger,
      });
      const err = await w.start().then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(InvalidArgumentError);
      expect((err as InvalidArgumentError).field).toBe('metricsPort');
      expect((err as Error).message).toContain(`127.0.0.1:${port}`);
      expect((err as Error).message).toMatch(/in use/);
      expect(w.phase).toBe('stopped');
      expect(w.metricsServer).toBeNull();
      // The health listener and the watchdog it had started first are stopped again.
      await expect(fetch(`http://127.0.0.1:${healthPort}/live`)).rejects.toThrow();
      expect(w.healthServer?.tcpAddress ?? null).toBeNull();
      const after = await db.pool.query(`SELECT count(*)::int AS n FROM "${db.schema}".workers`);
      expect(after.rows[0].n).toBe(before.rows[0].n);
      await w.stop();
    } finally {
      await new Promise<void>((resolve) => squatter.close(() => resolve()));
    }
  });
});
