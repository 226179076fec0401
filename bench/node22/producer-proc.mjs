/**
 * The producer side of a Node 22 system in a process of its own: the harness (Node 20) starts it
 * under the Node 22 binary of this directory (bench/systems/node22.ts) and sends requests over the
 * IPC channel (JSON serialisation: the two Node versions' V8 serialisers need not agree):
 *
 *   → { id, op, args }     op: setup | teardown | enqueueOne | enqueueBulk | outstanding | timedSingles
 *   ← { id, value } or { id, error }
 *
 * The system, its schema and the DSN come in BENCH_NODE22_PRODUCER as JSON. `timedSingles` runs a
 * timed loop of single enqueues here, so that the single-enqueue rate has no IPC round trip per job
 * in it (see bench/workloads/enqueue.ts).
 */
import { createProducer } from './peers.mjs';

const { system, schema, dsn } = JSON.parse(process.env.BENCH_NODE22_PRODUCER ?? '{}');
const producer = createProducer(system, schema, dsn);

/** Milliseconds on the machine's monotonic clock, as nowMs() in bench/lib/common.ts. */
function nowMs() {
  return Number(process.hrtime.bigint()) / 1e6;
}

/**
 * `count` single enqueues from `callers` concurrent callers (1: one awaited call after another),
 * payloads { i } numbered from `first`; resolves to the elapsed milliseconds.
 */
async function timedSingles(count, callers, first) {
  let next = 0;
  const t = nowMs();
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (next < count) await producer.enqueueOne({ i: first + next++ });
    }),
  );
  return nowMs() - t;
}

const ops = {
  setup: () => producer.setup(),
  teardown: () => producer.teardown(),
  enqueueOne: (payload) => producer.enqueueOne(payload),
  enqueueBulk: (payloads) => producer.enqueueBulk(payloads),
  outstanding: () => producer.outstanding(),
  timedSingles,
};

process.on('message', (msg) => {
  const op = ops[msg.op];
  const result = op
    ? Promise.resolve().then(() => op(...msg.args))
    : Promise.reject(new Error(`unknown op ${msg.op}`));
  result.then(
    (value) => process.send({ id: msg.id, value: value ?? null }),
    (err) => process.send({ id: msg.id, error: err instanceof Error ? err.message : String(err) }),
  );
});
// The parent leaving (or closing the channel) ends the producer.
process.on('disconnect', () => process.exit(0));
process.send({ ready: true });
