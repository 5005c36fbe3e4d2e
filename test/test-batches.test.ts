import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { BATCH_MAX_FILES, batchEntrySource, filesToRetry, mayShareProcess, planBatches, suiteDurations } from '../scripts/test-batches.ts';

test('short files that may share a process are batched by recorded time; long, unknown and solitary files run alone', () => {
  const ms: Record<string, number> = { a: 30_000, b: 35_000, c: 50_000, d: 40_000, e: 45_000 };
  const batches = planBatches(['a', 'b', 'c', 'd', 'e', 'new', 'solo'], (file) => (file === 'solo' ? 1_000 : ms[file]), (file) => file !== 'solo');
  // Alone: c (50 s > 40 s), e (45 s), new (no record), solo (may not share). Batched longest first,
  // first fit under 120 s: d 40 + b 35 + a 30 = 105 s.
  assert.deepEqual(batches, [['c'], ['e'], ['new'], ['solo'], ['d', 'b', 'a']]);
});

test('a batch holds at most BATCH_MAX_FILES files', () => {
  const files = Array.from({ length: BATCH_MAX_FILES + 1 }, (_, i) => `f${String(i).padStart(2, '0')}`);
  const batches = planBatches(files, () => 100, () => true);
  assert.deepEqual(batches.map((batch) => batch.length), [BATCH_MAX_FILES, 1]);
});

test('files that act on their process or say so run alone; browser files share (one Chromium)', () => {
  assert.equal(mayShareProcess("import { test } from 'node:test';\ntest('x', () => {});"), true);
  assert.equal(mayShareProcess('// test-batch: alone (reason)\n'), false);
  assert.equal(mayShareProcess('const b = await launchChromium();'), true);
  assert.equal(mayShareProcess('process.exit(1);'), false);
  assert.equal(mayShareProcess("process.on('exit', () => {});"), false);
  assert.equal(mayShareProcess('globalThis.fetch = fake;'), false);
  assert.equal(mayShareProcess('if (globalThis.fetch === x) {}'), true);
  // A process has 4 outcome stores and a server takes 3 (core's outcomes.ts).
  assert.equal(mayShareProcess('const STORE = reserveOutcomeStore();'), false);
  assert.equal(mayShareProcess('const cache = new ResultJsonCache((r) => r.variant_key);'), false);
});

test("a batch's spec output names each file's time, and the files to run again", () => {
  const output = ['▶ a.test.ts', '  ✔ one (1ms)', '✔ a.test.ts (120.5ms)', '▶ b.test.ts', '  ✖ two (2ms)', '✖ b.test.ts (30ms)', '  ✔ c.test.ts (5ms)'].join('\n');
  assert.deepEqual([...suiteDurations(output, ['a.test.ts', 'b.test.ts', 'c.test.ts'])], [['a.test.ts', 121], ['b.test.ts', 30]]);
  // b failed; c's suite never closed at the start of a line (an indented line is a test, not a file).
  assert.deepEqual(filesToRetry(output, ['a.test.ts', 'b.test.ts', 'c.test.ts']), ['b.test.ts', 'c.test.ts']);
});

test("a batch's entry runs each file's hooks around that file's tests only, in order", () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'test-batches-'));
  try {
    const file = (name: string) => {
      const module = path.join(dir, `${name}.mjs`);
      writeFileSync(
        module,
        `import { after, before, test } from 'node:test';
const started = await Promise.resolve('${name}');
before(() => console.log('before ${name}'));
after(() => console.log('after ${name}'));
// What files share (test-server.ts) ends when the batch's last file has ended.
if ('${name}' === 'a') globalThis.__switchyardTestBatch.cleanups.push(async () => console.log('after all: a'));
test('${name} 1', () => console.log('test ' + started));\n`,
      );
      return { name, module };
    };
    const entry = path.join(dir, 'entry.mjs');
    writeFileSync(entry, batchEntrySource([file('a'), file('b')]));
    // As the runner starts it: not as a child of this file's own test run (NODE_TEST_CONTEXT).
    const env = { ...process.env };
    delete env.NODE_TEST_CONTEXT;
    const run = spawnSync(process.execPath, ['--test-reporter=spec', entry], { encoding: 'utf8', env });
    assert.equal(run.status, 0, run.stdout + run.stderr);
    const order = run.stdout.split('\n').filter((line) => /^(before|after|test|after all:) /.test(line));
    assert.deepEqual(order, ['before a', 'test a', 'after a', 'before b', 'test b', 'after b', 'after all: a']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
