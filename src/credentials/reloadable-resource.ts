/**
 * A connection resource built from a credential provider that a credential reload can rebuild in
 * place: a worker pool, a dedicated-connection factory, an owned Redis client. The worker's reload
 * coordinator (SIGHUP, `reloadInterval`, `worker.reloadCredentials()`) calls `reload` on each one it
 * holds, bounding every call by `reloadFactoryTimeout`.
 */
export interface ReloadableResource {
  /** Names the resource in log lines and errors, e.g. `pg:taskq-worker` or `redis:progress`. */
  readonly name: string;
  /**
   * Fetches a fresh credential and makes new connections use it; the connections already open keep
   * serving until they are released. When `signal` aborts (the reload's timeout) the call gives up
   * and leaves the current resource serving. Rejects when the rebuild failed; the old resource then
   * keeps serving too.
   */
  reload(signal: AbortSignal): Promise<void>;
}
