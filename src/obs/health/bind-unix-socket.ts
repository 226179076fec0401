import { lstat, unlink } from 'node:fs/promises';
import { connect } from 'node:net';
import type { Server } from 'node:net';

/** What {@link bindUnixSocket} did. */
export type UnixSocketBinding =
  /** Listening; `ino` identifies the socket file, so closing removes only this one. */
  | { bound: true; ino: number }
  /** Another live process answers on the path; nothing was touched. */
  | { bound: false; reason: 'in-use' };

/**
 * Listens on the Unix socket `path`. A socket file left by a process that died (nobody answers on
 * it) is removed first; a live one is left alone and reported as `in-use`. A path that holds anything
 * but a socket is an error: it is never deleted.
 */
export async function bindUnixSocket(server: Server, path: string): Promise<UnixSocketBinding> {
  const existing = await lstat(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return null;
    throw err;
  });
  if (existing !== null) {
    if (!existing.isSocket())
      throw new Error(`${path} exists and is not a Unix socket; remove it or choose another path`);
    if (await answers(path)) return { bound: false, reason: 'in-use' };
    await unlink(path).catch(() => undefined);
  }
  const bound = await new Promise<boolean>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => {
      // Another worker bound the path between our look and our listen (workers starting together
      // on one host with the default path): that is the live socket case, not a failure.
      if (err.code === 'EADDRINUSE') resolve(false);
      else reject(err);
    };
    server.once('error', onError);
    server.listen(path, () => {
      server.off('error', onError);
      resolve(true);
    });
  });
  if (!bound) return { bound: false, reason: 'in-use' };
  return { bound: true, ino: (await lstat(path)).ino };
}

/** True when a process accepts a connection on the socket. */
function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(path);
    const done = (alive: boolean): void => {
      socket.destroy();
      resolve(alive);
    };
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
    socket.setTimeout(1000, () => done(false));
  });
}

/** Removes the socket file at `path` if it is still the one with inode `ino` (closing normally removes it). */
export async function removeUnixSocket(path: string, ino: number): Promise<void> {
  const st = await lstat(path).catch(() => null);
  if (st !== null && st.isSocket() && st.ino === ino) await unlink(path).catch(() => undefined);
}
