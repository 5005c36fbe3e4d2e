import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';

/**
 * Comments and docs cite only what a reader of this repository can open: the interface contract is
 * docs/contract.md plus docs/decisions.md, not documents kept outside the repository. This test
 * keeps that true for every tracked file, and checks that citations of those two files name a
 * section that exists.
 */

const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** Files that are not ours to rewrite: the lock file, and the frozen first migration. */
const EXCLUDED = new Set(['package-lock.json', 'packages/postgres/migrations/0001_baseline.sql']);

/**
 * References to documents outside the repository. Built from parts so that this file does not
 * contain them itself.
 */
const FORBIDDEN = [['SP', 'EC.md'], ['DECI', 'SIONS.md'], ['..', '/shared'], ['DECI', 'SIONS §'], ['SP', 'EC §']].map((parts) => parts.join(''));

function trackedTextFiles(): Array<{ file: string; text: string }> {
  const listing = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  const files: Array<{ file: string; text: string }> = [];
  for (const file of listing.split('\0')) {
    if (file === '' || EXCLUDED.has(file) || file.split('/').includes('node_modules')) continue;
    let bytes: Buffer;
    try {
      bytes = readFileSync(path.join(ROOT, file));
    } catch {
      continue; // deleted in the work tree but not yet from the index
    }
    if (bytes.includes(0)) continue; // binary
    files.push({ file, text: bytes.toString('utf8') });
  }
  return files;
}

/** What a citation may name in a markdown file: its `#`-headings and the bold labels that open list items (`- **Limits.**`). */
function sectionNames(file: string): Set<string> {
  const text = readFileSync(path.join(ROOT, file), 'utf8');
  const names = [...text.matchAll(/^#{1,6}\s+(.+?)\s*$/gm)].map((match) => match[1]!);
  const labels = [...text.matchAll(/^\s*- \*\*(.+?)\.?\*\*/gm)].map((match) => match[1]!);
  return new Set([...names, ...labels]);
}

describe('repository citations', () => {
  const files = trackedTextFiles();

  test('the tracked files are found', () => {
    assert.ok(files.some(({ file }) => file === 'docs/contract.md'), 'docs/contract.md is tracked');
    assert.ok(files.length > 100, `only ${files.length} tracked text files found`);
  });

  test('no file cites the specification documents kept outside the repository', () => {
    const offences: string[] = [];
    for (const { file, text } of files) {
      const lines = text.split('\n');
      lines.forEach((line, i) => {
        for (const needle of FORBIDDEN) {
          if (line.includes(needle)) offences.push(`${file}:${i + 1}: ${needle}: ${line.trim()}`);
        }
      });
    }
    assert.deepEqual(offences, [], `cite docs/contract.md or docs/decisions.md sections instead:\n${offences.join('\n')}`);
  });

  test('citations of docs/contract.md and docs/decisions.md name existing sections', () => {
    const sections = new Map([
      ['docs/contract.md', sectionNames('docs/contract.md')],
      ['docs/decisions.md', sectionNames('docs/decisions.md')],
    ]);
    const broken: string[] = [];
    for (const { file, text } of files) {
      for (const match of text.matchAll(/(docs\/(?:contract|decisions)\.md) "([^"]+)"/g)) {
        // A comment may wrap a section name over two lines: `// "Sync\n// stream"`.
        const name = match[2]!.replace(/\s*\n\s*(?:\/\/|\*|#)?\s*/g, ' ').trim();
        if (!sections.get(match[1]!)!.has(name)) broken.push(`${file}: ${match[1]} "${name}"`);
      }
    }
    assert.deepEqual(broken, [], `no such section:\n${broken.join('\n')}`);
  });
});
