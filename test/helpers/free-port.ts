import { createServer } from 'node:net';

/**
 * A TCP port on 127.0.0.1 that was free a moment ago (the kernel picks it). Another process can
 * take it before the caller binds it, so servers started on it retry on a bind failure.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error('no port assigned'));
      });
    });
  });
}

/**
 * Runs `start(port)` on a free port, again on another one (up to 5 tries) when that port was
 * taken in between (EADDRINUSE): for servers whose options must name their own port up front.
 */
export async function onFreePort<T>(start: (port: number) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    try {
      return await start(port);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt >= 5) throw err;
    }
  }
}
