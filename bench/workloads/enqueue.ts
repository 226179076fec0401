/**
 * Enqueue throughput: single jobs one call at a time (awaited, one client), single jobs from
 * concurrent callers sharing one client (a web server's pattern), bulk calls of 1,000 jobs, and a
 * bulk import of 10,000 jobs per call: through the COPY fast path where a system has one (TaskQ's
 * `enqueueBatchFast`), else through its bulk call with all 10,000 jobs at once.
 *
 * A system whose client runs in another process (the Node 22 peers, systems/node22.ts) times its
 * single cases there (`timedSingles`): timed from here, each job would carry an IPC round trip that
 * the others do not.
 */
import { nowMs, type BenchPayload } from '../lib/common.js';
import { rotate, shortError, withFreshSystem, type BenchContext } from '../lib/context.js';
import type { MetricSpec } from '../lib/results.js';
import type { SystemAdapter } from '../systems/types.js';

const RATE: MetricSpec = { metric: 'jobs/s', unit: 'jobs/s', better: 'higher', ratio: true };
/** Callers enqueueing at once in the concurrent case. */
const CALLERS = 16;
export const ENQUEUE_CASES = {
  single: 'single (one call per job)',
  concurrent: `single, ${CALLERS} concurrent callers`,
  bulk: 'bulk (1,000 per call)',
  copy: 'bulk import (10,000 per call; COPY where there is one)',
};

/** Jobs per call of the bulk-import case. */
const IMPORT_SIZE = 10_000;
/**
 * Full-size bulk calls made before the bulk case is timed. Postgres plans a prepared statement (and
 * the statements inside a PL/pgSQL function) afresh for each of its first five executions, and V8
 * compiles the client's code for a 1,000-job call as it runs: untimed, those first calls would be a
 * share of the measurement that differs by system.
 */
const BULK_WARMUP_CALLS = 5;

/**
 * Milliseconds for `count` single enqueues made by `callers` concurrent callers sharing the one
 * client (1: one awaited call after another); inside the client's own process where it has one.
 */
async function timeSingles(sys: SystemAdapter, count: number, callers: number): Promise<number> {
  if (sys.timedSingles) return sys.timedSingles(count, callers);
  let next = 0;
  const t = nowMs();
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (next < count) await sys.enqueueOne({ i: next++ });
    }),
  );
  return nowMs() - t;
}

export async function runEnqueue(ctx: BenchContext): Promise<void> {
  const single = ctx.opts.quick ? 300 : 2000;
  const bulkCalls = ctx.opts.quick ? 5 : 20;
  const importCalls = ctx.opts.quick ? 2 : 10;
  const warmup = 50;
  for (let round = 0; round < ctx.opts.rounds; round++) {
    for (const id of rotate(ctx.systems, round)) {
      try {
        await withFreshSystem(id, async (sys) => {
          await timeSingles(sys, warmup, 1);
          const singleRate = single / ((await timeSingles(sys, single, 1)) / 1000);
          ctx.results.record('enqueue', ENQUEUE_CASES.single, RATE, id, singleRate);

          // The same number of single calls, CALLERS at a time on the one client.
          const concurrentRate = single / ((await timeSingles(sys, single, CALLERS)) / 1000);
          ctx.results.record('enqueue', ENQUEUE_CASES.concurrent, RATE, id, concurrentRate);

          const batches: BenchPayload[][] = [];
          for (let b = 0; b < bulkCalls; b++)
            batches.push(Array.from({ length: 1000 }, (_, i) => ({ i: b * 1000 + i })));
          for (let w = 0; w < BULK_WARMUP_CALLS; w++) await sys.enqueueBulk(batches[w % bulkCalls]!);
          let t = nowMs();
          for (const batch of batches) await sys.enqueueBulk(batch);
          const bulkRate = (bulkCalls * 1000) / ((nowMs() - t) / 1000);
          ctx.results.record('enqueue', ENQUEUE_CASES.bulk, RATE, id, bulkRate);
          // Bulk import: COPY where the system has it, else its bulk call with every job at once.
          const importOne = sys.enqueueCopy ?? ((p: BenchPayload[]) => sys.enqueueBulk(p));
          const imports: BenchPayload[][] = [];
          for (let b = 0; b < importCalls; b++)
            imports.push(Array.from({ length: IMPORT_SIZE }, (_, i) => ({ i: b * IMPORT_SIZE + i })));
          await importOne(imports[0]!.slice(0, 100)); // warm-up
          t = nowMs();
          for (const batch of imports) await importOne(batch);
          const importRate = (importCalls * IMPORT_SIZE) / ((nowMs() - t) / 1000);
          ctx.results.record(
            'enqueue',
            ENQUEUE_CASES.copy,
            RATE,
            id,
            importRate,
            sys.enqueueCopy ? 'COPY' : 'no COPY path: its bulk call',
          );
          ctx.log(
            `  enqueue ${id} round ${round + 1}: single ${singleRate.toFixed(0)}/s, ${CALLERS} callers ${concurrentRate.toFixed(0)}/s, bulk ${bulkRate.toFixed(0)}/s, import ${importRate.toFixed(0)}/s`,
          );
        });
      } catch (err) {
        ctx.results.fail('enqueue', ENQUEUE_CASES.single, RATE, id, shortError(err));
        ctx.log(`  enqueue ${id} round ${round + 1}: FAILED ${shortError(err)}`);
      }
    }
  }
}
