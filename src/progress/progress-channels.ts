import { validateSchemaName } from '../core/schema-name.js';

/**
 * Redis pub/sub channel carrying one job's live progress: `taskq:{schema}:progress:{jobId}`.
 * Subscribers of one job (`JobHandle.progressStream()`, `TaskQ.stream()`) listen here.
 */
export function progressJobChannel(schema: string, jobId: string): string {
  return `taskq:${validateSchemaName(schema)}:progress:${jobId.toLowerCase()}`;
}

/**
 * Redis pub/sub channel carrying the live progress of every job of a schema:
 * `taskq:{schema}:progress` (published when `progressPublishGlobal` is on; for dashboards).
 */
export function progressGlobalChannel(schema: string): string {
  return `taskq:${validateSchemaName(schema)}:progress`;
}
