import { TaskQError } from './taskq-error.js';

/**
 * An enqueue reused an idempotency key that belongs to a job of another actor. Keys are unique in
 * their scope across every actor (the global scope `''` by default, as in the reference), so the
 * stored job cannot be this enqueue's result: returning it would hand the caller a handle typed for
 * the wrong actor. Nothing is written — in a batch, no item is. Use another key, or a scope of its
 * own per actor (`idempotencyScope`).
 */
export class IdempotencyKeyConflict extends TaskQError {
  /** The reused key. */
  readonly idempotencyKey: string;
  /** The key's scope (`''`: the global scope). */
  readonly idempotencyScope: string;
  /** Actor of the job that holds the key. */
  readonly existingActor: string;
  /** Actor the enqueue asked for. */
  readonly requestedActor: string;
  /** Id of the stored job that holds the key; null when an earlier item of the same batch holds it. */
  readonly existingJobId: string | null;

  constructor(fields: {
    idempotencyKey: string;
    idempotencyScope: string;
    existingActor: string;
    requestedActor: string;
    existingJobId: string | null;
  }) {
    const scope =
      fields.idempotencyScope === ''
        ? 'the global scope'
        : `scope ${JSON.stringify(fields.idempotencyScope)}`;
    const holder =
      fields.existingJobId === null ? 'an earlier item of this batch' : `job ${fields.existingJobId}`;
    super(
      'TASKQ_IDEMPOTENCY_KEY_CONFLICT',
      `idempotency key ${JSON.stringify(fields.idempotencyKey)} (${scope}) belongs to ${holder} of actor ` +
        `${JSON.stringify(fields.existingActor)}, not ${JSON.stringify(fields.requestedActor)}; nothing was written ` +
        '(use another key, or an idempotencyScope per actor)',
    );
    this.idempotencyKey = fields.idempotencyKey;
    this.idempotencyScope = fields.idempotencyScope;
    this.existingActor = fields.existingActor;
    this.requestedActor = fields.requestedActor;
    this.existingJobId = fields.existingJobId;
  }
}
