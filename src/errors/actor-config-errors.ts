import { TaskQError } from './taskq-error.js';

const HINT =
  'the stored actor_config differs from the code: deploy the intended code everywhere, or update the row, ' +
  'or start the worker once with TASKQ_FORCE_UPDATE_ACTOR_CONFIG=true to overwrite it';

/** One structural difference (queue or metadata) between an actor in code and its stored row. */
export class ActorConfigDriftError extends TaskQError {
  /** What to do about it. */
  static readonly hint = HINT;
  readonly actor: string;
  readonly field: 'queue' | 'metadata';
  readonly registered: unknown;
  readonly stored: unknown;

  constructor(actor: string, field: 'queue' | 'metadata', registered: unknown, stored: unknown) {
    super(
      'TASKQ_ACTOR_CONFIG_DRIFT',
      `actor ${JSON.stringify(actor)}: ${field} is ${JSON.stringify(registered)} in code but ${JSON.stringify(stored)} in actor_config`,
    );
    this.actor = actor;
    this.field = field;
    this.registered = registered;
    this.stored = stored;
  }
}

/** The worker refused to start: at least one actor drifted structurally. */
export class ActorConfigDriftList extends TaskQError {
  static readonly hint = HINT;
  readonly drifts: readonly ActorConfigDriftError[];

  constructor(
    drifts: readonly { actor: string; field: 'queue' | 'metadata'; registered: unknown; stored: unknown }[],
  ) {
    const errors = drifts.map((d) => new ActorConfigDriftError(d.actor, d.field, d.registered, d.stored));
    super('TASKQ_ACTOR_CONFIG_DRIFT', `${errors.map((e) => e.message).join('; ')}; ${HINT}`);
    this.drifts = errors;
  }
}
