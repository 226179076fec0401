import { TaskQError } from './taskq-error.js';

/** One schema issue, sanitised: where it is and what rule failed, never the input value. */
export interface ValidationIssue {
  /** Path into the payload, e.g. `['address', 'zip']`; empty for the root. */
  readonly path: readonly (string | number)[];
  /** The validator's message with any echo of the input value removed. */
  readonly message: string;
}

/**
 * A payload (or result) failed its actor's schema.
 *
 * At enqueue nothing is written; at dispatch the job fails without retry. `validationErrors`
 * carries paths and rule messages only — never input values — so it is safe to log.
 */
export class PayloadValidationError extends TaskQError {
  /** The actor whose schema rejected the payload. */
  readonly actor: string | null;
  /** Payload schema version of the actor, when it declares one. */
  readonly payloadSchemaVer: number | null;
  /** Sanitised issues (no input values). */
  readonly validationErrors: readonly ValidationIssue[];

  constructor(
    detail: string,
    fields: {
      actor?: string | null;
      payloadSchemaVer?: number | null;
      validationErrors?: readonly ValidationIssue[];
    } = {},
  ) {
    super('TASKQ_PAYLOAD_INVALID', detail);
    this.actor = fields.actor ?? null;
    this.payloadSchemaVer = fields.payloadSchemaVer ?? null;
    this.validationErrors = fields.validationErrors ?? [];
  }
}
