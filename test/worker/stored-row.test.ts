import { describe, expect, it } from 'vitest';

import type { JobRow } from '../../src/backend/types.js';
import type { Logger } from '../../src/obs/logger.js';
import { readStoredRow } from '../../src/worker/stored-row.js';

function recordingLogger(): { logger: Logger; errors: { msg?: string; fields: object }[] } {
  const errors: { msg?: string; fields: object }[] = [];
  const logger: Logger = {
    debug: () => undefined,
    info: () => undefined,
    warn: () => undefined,
    error: (fields: object, msg?: string) => errors.push({ msg, fields }),
    child: () => logger,
  };
  return { logger, errors };
}

const row = { id: 'job-1', status: 'failed' } as JobRow;

describe('readStoredRow (the row hooks and the error reporter see)', () => {
  it('returns the row read', async () => {
    const { logger, errors } = recordingLogger();
    expect(await readStoredRow(async () => row, 'job-1', logger)).toBe(row);
    expect(errors).toEqual([]);
  });

  it('tries again after a failed read', async () => {
    const { logger, errors } = recordingLogger();
    let calls = 0;
    const read = async () => {
      calls++;
      if (calls < 3) throw new Error('connection reset');
      return row;
    };
    expect(await readStoredRow(read, 'job-1', logger)).toBe(row);
    expect(calls).toBe(3);
    expect(errors).toEqual([]);
  });

  it('gives up after three failed reads, logging hook-row-unreadable with the last error', async () => {
    const { logger, errors } = recordingLogger();
    let calls = 0;
    const read = async (): Promise<JobRow | null> => {
      calls++;
      throw new Error(`down ${calls}`);
    };
    expect(await readStoredRow(read, 'job-1', logger)).toBeNull();
    expect(calls).toBe(3);
    expect(errors).toHaveLength(1);
    expect(errors[0]!.msg).toBe('hook-row-unreadable');
    expect(errors[0]!.fields).toMatchObject({ jobId: 'job-1', err: new Error('down 3') });
  });

  it('does not retry a row that is gone', async () => {
    const { logger, errors } = recordingLogger();
    let calls = 0;
    const read = async () => {
      calls++;
      return null;
    };
    expect(await readStoredRow(read, 'job-1', logger)).toBeNull();
    expect(calls).toBe(1);
    expect(errors.map((e) => e.msg)).toEqual(['hook-row-unreadable']);
  });
});
