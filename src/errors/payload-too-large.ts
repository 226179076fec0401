import { TaskQError } from './taskq-error.js';

/**
 * A payload's JSON is larger than `payloadMaxBytes` (default 1 MiB). Nothing was written. Large
 * inputs belong in object storage or a table of your own; pass the job a reference to them.
 */
export class PayloadTooLarge extends TaskQError {
  /** The rejected payload: `payload`, or `items[i].payload` in a batch. */
  readonly field: string;
  /** The configured limit, in UTF-8 bytes of JSON. */
  readonly limit: number;
  /** The payload's size, in UTF-8 bytes of JSON. */
  readonly actual: number;

  constructor(field: string, limit: number, actual: number) {
    super(
      'TASKQ_PAYLOAD_TOO_LARGE',
      `${field} serialises to ${actual} bytes of JSON, above payloadMaxBytes (${limit}); ` +
        'store large inputs elsewhere and pass a reference, or raise payloadMaxBytes (TASKQ_PAYLOAD_MAX_BYTES)',
    );
    this.field = field;
    this.limit = limit;
    this.actual = actual;
  }
}
