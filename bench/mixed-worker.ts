/**
 * A worker process of `bench/mixed-load.ts`: a TaskQ `Worker` (from the compiled package) running
 * the mix's actors on both of its queues. It reports over IPC, every {@link FLUSH_MS}: the handler
 * starts of first attempts (enqueue time and start, on the shared monotonic clock), the jobs that
 * succeeded and the attempts that threw since the last report, and its RSS and V8 heap. Started by
 * the load script as `node --import tsx bench/mixed-worker.ts` with its settings in
 * `BENCH_MIXED_WORKER`.
 */
import { stderrLogger } from './lib/stderr-logger.js';
import { errorMessage, nowMs, PG_DSN } from './lib/common.js';
import { MIXED_QUEUE, MIXED_SECOND_QUEUE, mixedActors, type MixedPayload } from './lib/mixed-mix.js';
import type { MixedChildMessage, MixedParentMessage, MixedWorkerSpec } from './lib/mixed-ipc.js';
import { loadTaskq } from './systems/taskq-package.js';

/** How often the process reports (a small share of the sampling interval). */
const FLUSH_MS = 250;

const spec = JSON.parse(process.env.BENCH_MIXED_WORKER ?? '{}') as MixedWorkerSpec;

function send(msg: MixedChildMessage): void {
  process.send?.(msg);
}

/** Flattened [start, latency, high priority 0/1] of first attempts since the last report. */
let starts: number[] = [];
let done = 0;
let thrown = 0;
let failedForGood = 0;

/**
 * The worker's log lines on stderr, warnings counted rather than written one by one: each planned
 * failure of the flaky actor logs one, 40 a second at the default rate.
 */
const logger = stderrLogger(3);

function flush(): void {
  const mem = process.memoryUsage();
  send({
    type: 'report',
    starts,
    done,
    thrown,
    failedForGood,
    rss: mem.rss,
    heapUsed: mem.heapUsed,
    heapTotal: mem.heapTotal,
  });
  starts = [];
  done = 0;
  thrown = 0;
  failedForGood = 0;
}

async function main(): Promise<void> {
  const pkg = await loadTaskq();
  const actors = mixedActors(pkg, {
    onStart(p: MixedPayload, attempt: number) {
      // Only first attempts: a retry's start includes its planned backoff, not the queue's delay.
      if (attempt !== 1) return;
      const t = nowMs();
      starts.push(t, t - p.t, p.h === 1 ? 1 : 0);
    },
    onDone() {
      done++;
    },
    onThrow() {
      thrown++;
    },
  });
  const worker = new pkg.worker.Worker({
    actors,
    settings: {
      pgDsn: PG_DSN,
      schema: spec.schema,
      queues: [MIXED_QUEUE, MIXED_SECOND_QUEUE],
      maxConcurrency: spec.concurrency,
      // As in the harness: the watchdog's detectors are tuned for production, not for a machine
      // whose two cores the load generator and Postgres share.
      watchdogEnabled: false,
      ...(spec.pruneRetentionMs === null
        ? {}
        : {
            // Production prunes: every minute, succeeded jobs older than the retention, so that the
            // jobs table reaches a steady size within the run.
            pruneCronExpr: '* * * * *',
            pruneRetentionSucceeded: spec.pruneRetentionMs,
            pruneRetentionFailed: spec.pruneRetentionMs,
          }),
    },
    logger,
    errorReporter: {
      report() {
        failedForGood++;
      },
    },
  });
  let timer: NodeJS.Timeout | null = null;
  process.on('message', (msg: MixedParentMessage) => {
    void (async () => {
      if (msg.type === 'go') {
        await worker.start();
        timer = setInterval(flush, FLUSH_MS);
        send({ type: 'started' });
      } else if (msg.type === 'stop') {
        await worker.stop();
        if (timer) clearInterval(timer);
        flush();
        // Leave once the last report is written: the worker's clients may keep the loop alive.
        process.send?.(
          { type: 'stopped', warnings: logger.warnings } satisfies MixedChildMessage,
          undefined,
          {},
          () => process.exit(0),
        );
      }
    })().catch((err: unknown) => {
      send({ type: 'error', message: errorMessage(err) });
      process.exit(1);
    });
  });
  send({ type: 'loaded', pid: process.pid });
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  send({ type: 'error', message: errorMessage(err) });
  process.exit(1);
});
