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

export async function runEnqueue(ctx: BenchContext): Promise<void> {
  const single = ctx.opts.quick ? 300 : 2000;
  const bulkCalls = ctx.opts.quick ? 5 : 20;
  const importCalls = ctx.opts.quick ? 2 : 10;
  const warmup = 50;
  for (let round = 0; round < ctx.opts.rounds; round++) {
    for (const id of rotate(ctx.systems, round)) {
      try {
        await withFreshSystem(id, async (sys) => {
          let t: number;
          let singleRate: number;
          let concurrentRate: number;
          if (sys.timedSingles) {
            await sys.timedSingles(warmup, 1);
            singleRate = single / ((await sys.timedSingles(single, 1)) / 1000);
            ctx.results.record('enqueue', ENQUEUE_CASES.single, RATE, id, singleRate);
            concurrentRate = single / ((await sys.timedSingles(single, CALLERS)) / 1000);
          } else {
            for (let i = 0; i < warmup; i++) await sys.enqueueOne({ i });
            t = nowMs();
            for (let i = 0; i < single; i++) await sys.enqueueOne({ i });
            singleRate = single / ((nowMs() - t) / 1000);
            ctx.results.record('enqueue', ENQUEUE_CASES.single, RATE, id, singleRate);

            // The same number of single calls, CALLERS at a time on the one client.
            let next = 0;
            t = nowMs();
            await Promise.all(
              Array.from({ length: CALLERS }, async () => {
                while (next < single) await sys.enqueueOne({ i: next++ });
              }),
            );
            concurrentRate = single / ((nowMs() - t) / 1000);
          }
          ctx.results.record('enqueue', ENQUEUE_CASES.concurrent, RATE, id, concurrentRate);

          const batches: BenchPayload[][] = [];
          for (let b = 0; b < bulkCalls; b++)
            batches.push(Array.from({ length: 1000 }, (_, i) => ({ i: b * 1000 + i })));
          for (let w = 0; w < BULK_WARMUP_CALLS; w++) await sys.enqueueBulk(batches[w % bulkCalls]!);
          t = nowMs();
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
