/**
 * The job page's live updates over a real socket: the SSE stream sends the job's state, then each
 * change, ends when the job is terminal, and refuses streams past `maxSseConnections` (503) until
 * one closes.
 */
import http from 'node:http';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { serveAdmin, type AdminServer } from '../../src/admin/index.js';
import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { TaskQ } from '../../src/client/taskq.js';
import { actor } from '../../src/core/actor.js';
import { migratedSchema, type TestSchema } from '../helpers/db.js';
import { waitFor } from '../helpers/wait.js';

let db: TestSchema;
let tq: TaskQ;
let server: AdminServer;
const work = actor({ name: 'ui_live', queue: 'ui_live_q' }, async () => undefined);

/** An open SSE connection: its status, the `state` events received so far, and whether it ended. */
interface OpenStream {
  status: number;
  headers: http.IncomingHttpHeaders;
  states: { status: string; progress: unknown }[];
  ended: boolean;
  close(): void;
}

function openStream(path: string): Promise<OpenStream> {
  return new Promise((resolve, reject) => {
    const req = http.get(`http://127.0.0.1:${server.port}${path}`, (res) => {
      const stream: OpenStream = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        states: [],
        ended: false,
        close: () => req.destroy(),
      };
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const event = /^event: (.*)$/m.exec(frame)?.[1];
          const data = /^data: (.*)$/m.exec(frame)?.[1];
          if (event === 'state' && data) stream.states.push(JSON.parse(data) as OpenStream['states'][number]);
        }
      });
      res.on('end', () => (stream.ended = true));
      res.on('error', () => (stream.ended = true));
      resolve(stream);
    });
    req.on('error', (err) => (err.message === 'socket hang up' ? undefined : reject(err)));
  });
}

async function setStatus(id: string, status: string, progress: object = {}): Promise<void> {
  await db.pool.query(
    `UPDATE "${db.schema}".jobs SET status = $2::text::"${db.schema}".job_status, progress_state = $3::jsonb,
       finished_at = CASE WHEN $2::text IN ('succeeded', 'failed') THEN clock_timestamp() END WHERE id = $1`,
    [id, status, JSON.stringify(progress)],
  );
}

beforeAll(async () => {
  db = await migratedSchema('admin_sse');
  tq = new TaskQ(new PostgresBackend(db.driver, { schema: db.schema }));
  server = await serveAdmin({
    tq,
    host: '127.0.0.1',
    port: 0,
    prefix: '/admin',
    environment: 'dev',
    maxSseConnections: 1,
    pollInterval: '100ms',
  });
});
afterAll(async () => {
  await server.close();
  await tq.close();
  await db.drop();
});

describe('job SSE stream', () => {
  it('streams status and progress changes, ends at a terminal status, and caps connections', async () => {
    const job = await tq.enqueue(work, { secret: 'not-in-stream' });
    const first = await openStream(`/admin/jobs/${job.jobId}/stream`);
    expect(first.status).toBe(200);
    expect(first.headers['content-type']).toMatch(/^text\/event-stream/);
    await waitFor(() => first.states.length === 1, 10_000, 'the first state event');
    expect(first.states[0]).toMatchObject({ status: 'pending' });

    // The cap (1) is reached: a second stream is refused and the page polls /state instead.
    const second = await openStream(`/admin/jobs/${job.jobId}/stream`);
    expect(second.status).toBe(503);
    expect(second.headers['retry-after']).toBeDefined();
    second.close();

    await setStatus(job.jobId, 'running', { percent: 40 });
    await waitFor(() => first.states.some((s) => s.status === 'running'), 10_000, 'the running event');
    expect(first.states.at(-1)).toMatchObject({ status: 'running', progress: { percent: 40 } });

    await setStatus(job.jobId, 'succeeded', { percent: 100 });
    await waitFor(() => first.ended, 10_000, 'the stream to end at a terminal status');
    expect(first.states.at(-1)).toMatchObject({ status: 'succeeded' });
    expect(JSON.stringify(first.states)).not.toContain('not-in-stream');

    // The ended stream gave its slot back.
    const third = await openStream(`/admin/jobs/${job.jobId}/stream`);
    expect(third.status).toBe(200);
    await waitFor(() => third.ended, 10_000, 'the terminal job stream to end');
  });

  it('a client that goes away frees its slot', async () => {
    const job = await tq.enqueue(work, {});
    const a = await openStream(`/admin/jobs/${job.jobId}/stream`);
    expect(a.status).toBe(200);
    a.close();
    let b: OpenStream | null = null;
    await waitFor(
      async () => {
        b?.close();
        b = await openStream(`/admin/jobs/${job.jobId}/stream`);
        return b.status === 200;
      },
      10_000,
      'a new stream once the first client left',
    );
    (b as OpenStream | null)?.close();
  });
});
