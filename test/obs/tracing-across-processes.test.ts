/**
 * Issue 63, tracing: a job enqueued in this process (an OpenTelemetry SDK with an in-memory
 * exporter registered) runs in a worker process with its own in-memory SDK, which prints its spans
 * at exit. The worker's `process` span must link to this process's `send` span, through the ids the
 * job row carries.
 */
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import {
  registerMemoryTracing,
  spanJson,
  unregisterMemoryTracing,
  type SpanJson,
} from '../fixtures/otel-memory.js';
import { tracedFail, tracedOk } from '../fixtures/tracing-actors.js';
import { useProcessFleet } from '../helpers/process-fleet.js';

const fleet = useProcessFleet('trace', { TASKQ_QUEUES: 'traced' });
let sdk: ReturnType<typeof registerMemoryTracing>;

beforeAll(() => {
  sdk = registerMemoryTracing();
});
afterAll(async () => {
  await unregisterMemoryTracing(sdk.provider);
});

/** The spans the worker process printed at exit. */
function workerSpans(stdout: string[]): SpanJson[] {
  for (const line of stdout) {
    if (!line.startsWith('{')) continue;
    const msg = JSON.parse(line) as { event?: string; spans?: SpanJson[] };
    if (msg.event === 'spans') return msg.spans!;
  }
  throw new Error(`the worker printed no spans: ${stdout.join('\n').slice(-2000)}`);
}

describe('tracing across processes', () => {
  it('links each attempt to the span of its enqueue; dispatch spans; failures in ERROR', async () => {
    const tq = fleet.tq;
    const tracer = trace.getTracer('test');
    // A request span of the caller: the send span is its child.
    const { okJob, requestSpanId } = await tracer.startActiveSpan('request', async (request) => {
      const job = await tq.enqueue(tracedOk, { n: 1 });
      request.end();
      return { okJob: job, requestSpanId: request.spanContext().spanId };
    });
    const failJob = await tq.enqueue(tracedFail, { n: 2 });
    const batch = await tq.enqueueBatch([
      { actor: tracedOk, payload: { n: 3 } },
      { actor: tracedOk, payload: { n: 4 } },
    ]);
    // The caller's own ids win over the send span's.
    const external = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331' };
    const ownJob = await tq.enqueue(tracedOk, { n: 5 }, external);

    const sends = sdk.exporter
      .getFinishedSpans()
      .map(spanJson)
      .filter((s) => s.name.startsWith('send'));
    expect(sends.map((s) => s.name)).toEqual(['send traced', 'send traced', 'send traced', 'send traced']);
    const [okSend, failSend, batchSend, ownSend] = sends as [SpanJson, SpanJson, SpanJson, SpanJson];
    expect(okSend.kind).toBe(SpanKind.PRODUCER);
    expect(okSend.parentSpanId).toBe(requestSpanId);
    expect(okSend.attributes).toMatchObject({
      'messaging.system': 'taskq',
      'messaging.operation.type': 'send',
      'messaging.destination.name': 'traced',
      'messaging.message.id': okJob.jobId,
      'taskq.job.actor': 'traced_ok',
    });
    expect(batchSend.attributes).toMatchObject({
      'messaging.batch.message_count': 2,
      'taskq.batch.id': batch.batchId,
    });
    // The rows carry the send spans' ids (the caller's own where it gave them).
    const okRow = (await tq.getRow(okJob.jobId))!;
    expect({ traceId: okRow.traceId, spanId: okRow.spanId }).toEqual({
      traceId: okSend.traceId,
      spanId: okSend.spanId,
    });
    for (const h of batch.jobHandles) {
      const row = (await tq.getRow(h.jobId))!;
      expect(row.spanId).toBe(batchSend.spanId);
    }
    const ownRow = (await tq.getRow(ownJob.jobId))!;
    expect({ traceId: ownRow.traceId, spanId: ownRow.spanId }).toEqual(external);
    expect(ownSend.attributes['messaging.message.id']).toBe(ownJob.jobId);

    const w = fleet.start({ TQ_FIXTURE_ACTORS: 'tracing', TQ_FIXTURE_OTEL: 'memory' });
    await w.ready;
    const all = [okJob.jobId, failJob.jobId, ownJob.jobId, ...batch.jobHandles.map((h) => h.jobId)];
    for (const id of all) await tq.waitForTerminal(id, 30_000);
    expect((await w.stop()).code).toBe(0);
    const spans = workerSpans(w.stdout);
    const processOf = (jobId: string): SpanJson => {
      const found = spans.filter((s) => s.attributes['messaging.message.id'] === jobId);
      expect(found).toHaveLength(1);
      return found[0]!;
    };

    const ok = processOf(okJob.jobId);
    expect(ok.name).toBe('process traced_ok');
    expect(ok.kind).toBe(SpanKind.CONSUMER);
    // Linked, not a child: a trace of its own.
    expect(ok.links).toEqual([{ traceId: okSend.traceId, spanId: okSend.spanId }]);
    expect(ok.parentSpanId).toBeNull();
    expect(ok.traceId).not.toBe(okSend.traceId);
    expect(ok.attributes).toMatchObject({
      'messaging.system': 'taskq',
      'messaging.operation.type': 'process',
      'messaging.destination.name': 'traced',
      'messaging.message.id': okJob.jobId,
      'taskq.job.actor': 'traced_ok',
      'taskq.job.attempt': 1,
      'taskq.job.outcome': 'succeeded',
      'taskq.worker.id': (await w.ready).workerId,
      // Set by the handler through ctx.span.
      'test.n': 1,
    });
    expect(ok.status.code).toBe(SpanStatusCode.UNSET);

    const failed = processOf(failJob.jobId);
    expect(failed.name).toBe('process traced_fail');
    expect(failed.links).toEqual([{ traceId: failSend.traceId, spanId: failSend.spanId }]);
    expect(failed.status.code).toBe(SpanStatusCode.ERROR);
    expect(failed.attributes['taskq.job.outcome']).toBe('failed');
    const exception = failed.events.find((e) => e.name === 'exception');
    expect(exception?.attributes).toMatchObject({ 'exception.type': 'Error', 'exception.message': 'boom 2' });

    for (const h of batch.jobHandles)
      expect(processOf(h.jobId).links).toEqual([{ traceId: batchSend.traceId, spanId: batchSend.spanId }]);
    expect(processOf(ownJob.jobId).links).toEqual([external]);

    const dispatches = spans.filter((s) => s.name === 'dispatch');
    expect(dispatches.length).toBeGreaterThan(0);
    expect(dispatches.every((d) => d.kind === SpanKind.INTERNAL && d.parentSpanId === null)).toBe(true);
    const claimed = dispatches.reduce((n, d) => n + Number(d.attributes['messaging.batch.message_count']), 0);
    expect(claimed).toBe(all.length);
    console.log(
      `tracing across processes: ${sends.length} send spans here; the worker process finished ` +
        `${spans.length} spans (${dispatches.length} dispatch, ${all.length} process), ` +
        `claiming ${claimed} jobs`,
    );
  });
});
