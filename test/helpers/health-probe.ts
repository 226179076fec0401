import { request } from 'node:http';

/** Where a health listener is: a TCP address or a Unix socket path. */
export type HealthTarget = { host: string; port: number } | { socketPath: string };

/** One answer of a health endpoint, with how long it took. */
export interface ProbeAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON body (null for HEAD or an empty body). */
  body: Record<string, unknown> | null;
  ms: number;
}

/**
 * Sends one HTTP request to a health listener, as a probe would. Rejects when no answer comes
 * within `timeoutMs` (default 10 s), or the connection fails.
 */
export function probe(
  target: HealthTarget,
  path: string,
  options: { method?: string; headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<ProbeAnswer> {
  const t0 = performance.now();
  const where =
    'socketPath' in target
      ? { socketPath: target.socketPath }
      : { host: target.host === '0.0.0.0' ? '127.0.0.1' : target.host, port: target.port };
  return new Promise((resolve, reject) => {
    const req = request(
      { ...where, path, method: options.method ?? 'GET', headers: options.headers ?? {}, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: text === '' ? null : (JSON.parse(text) as Record<string, unknown>),
            ms: Math.round(performance.now() - t0),
          });
        });
      },
    );
    req.setTimeout(options.timeoutMs ?? 10_000, () => req.destroy(new Error(`no answer from ${path}`)));
    req.on('error', reject);
    req.end();
  });
}
