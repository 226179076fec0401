/**
 * Code shown in the docs that CI runs lives in a file (examples/…); the doc shows it in a fenced
 * block right after an `<!-- file: <path> -->` marker. This keeps each such block equal to its file,
 * so what a reader copies is what CI ran.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const DOC_FILES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];
const MARKER = /<!-- file: (\S+) -->\s*\n```[a-z]*\n([\s\S]*?)\n```/g;

/** Every marked block of every doc: [doc, file, the block's code]. */
const BLOCKS: [string, string, string][] = DOC_FILES.flatMap((doc) =>
  [...readFileSync(join(ROOT, doc), 'utf8').matchAll(MARKER)].map(
    (m) => [doc, m[1]!, m[2]!] as [string, string, string],
  ),
);

describe('code blocks copied from files', () => {
  it('finds the marked blocks (docs/batches.md shows examples/batches/fan-out.ts)', () => {
    expect(BLOCKS.map(([doc, file]) => `${doc} ← ${file}`)).toContain(
      'docs/batches.md ← examples/batches/fan-out.ts',
    );
  });

  it.each(BLOCKS)('%s shows %s exactly', (_doc, file, code) => {
    expect(code + '\n').toBe(readFileSync(join(ROOT, file), 'utf8'));
  });
});
