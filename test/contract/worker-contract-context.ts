/** What the parts of the worker-facing Backend contract share (worker-backend-contract.ts). */
import type { TaskQ } from '../../src/client/taskq.js';
import type { ClaimedJob } from '../../src/backend/types.js';
import type { ContractHarness } from './backend-contract.js';

export const W1 = '018f0000-0000-7000-8000-00000000a001';
export const W2 = '018f0000-0000-7000-8000-00000000a002';
export const ACTORS: { name: string; maxConcurrent: number | null }[] = [
  { name: 'plain', maxConcurrent: null },
  { name: 'send_email', maxConcurrent: null },
  { name: 'budgeted', maxConcurrent: null },
];
export const QUEUES = ['default', 'emails'];

/** The current test's harness and client, and the helpers every part uses. */
export interface WorkerContractContext {
  readonly h: ContractHarness;
  readonly client: TaskQ;
  /** Claims up to `limit` jobs for `workerId` (default W1) from `queues`. */
  claim(
    limit?: number,
    actors?: { name: string; maxConcurrent: number | null }[],
    workerId?: string,
    queues?: string[],
  ): Promise<ClaimedJob[]>;
  /** The fields every settlement of these tests shares. */
  readonly base: { workerId: string; handlerStartedAt: null; durationMs: number };
}
