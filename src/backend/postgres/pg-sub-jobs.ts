import type { EnqueueArgs, JobRow } from '../types.js';
import type { Settlement, SettleWithChildrenResult } from '../worker-types.js';
import { enqueueMany } from './pg-enqueue.js';
import type { PgOps } from './pg-ops.js';
import {
  allPlainSuccesses,
  settleParams,
  settleResults,
  settleSucceededParams,
  type SettleRow,
} from './pg-settle.js';

/** Most children one insert statement carries (the size of an `enqueueBatch`). */
const CHILDREN_PER_STATEMENT = 1000;

/**
 * One attempt's success and the jobs its handler enqueued through `ctx.jobs`, in one transaction
 * on the backend's pool: the ownership-guarded write of `settle`, then, only when it wrote, the
 * children through `enqueueBatch`'s code path on the same transaction (gate locks, `uniqueFor`,
 * singleton, `maxPending`, idempotency keys). A gate that refuses a child throws and rolls the
 * success back with it. Nothing in the transaction NOTIFYs (a notifying commit is serialised with
 * every other, WAL flush included): the caller announces the parent's end and the children's
 * wake-up once it has committed.
 */
export async function settleWithChildren(
  ops: PgOps,
  item: Settlement,
  children: readonly EnqueueArgs[],
): Promise<SettleWithChildrenResult> {
  return ops.driver.transaction(async (tx) => {
    const items = [item];
    const rows = allPlainSuccesses(items)
      ? await ops.run<SettleRow>('settleSucceeded', settleSucceededParams(items), tx)
      : await ops.run<SettleRow>('settle', settleParams(items), tx);
    const result = settleResults(items, rows)[0]!;
    if (result.status === 'noop') return { result, children: [] };
    const written: JobRow[] = [];
    for (let i = 0; i < children.length; i += CHILDREN_PER_STATEMENT) {
      const chunk = children.slice(i, i + CHILDREN_PER_STATEMENT);
      written.push(...(await enqueueMany(ops, chunk, { ex: tx, ownPool: false }, 'byCaller')));
    }
    return { result, children: written };
  });
}
