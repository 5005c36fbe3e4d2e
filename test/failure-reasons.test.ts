import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { failureReasons } from '../scripts/failure-reasons.ts';

/** The spec reporter's real output for a file, from the Node.js running this test. */
function specOutput(source: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'failure-reasons-'));
  try {
    const file = path.join(dir, 'fixture.test.mjs');
    writeFileSync(file, source);
    // Without NODE_TEST_CONTEXT, which would make the child report to this test's runner instead.
    const { NODE_TEST_CONTEXT: _runner, ...env } = process.env;
    const run = spawnSync(process.execPath, ['--test-reporter=spec', file], { encoding: 'utf8', env: { ...env, NO_COLOR: '1', FORCE_COLOR: '0' } });
    return run.stdout + run.stderr;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test("a failed hook is named with its error, not as the tests it cancelled; an assertion with its message", () => {
  const output = specOutput(`
    import assert from 'node:assert/strict';
    import { before, describe, it, test } from 'node:test';
    describe('servers', () => {
      before(() => { throw new Error('the gateway did not start'); });
      it('first', () => {});
      it('second', () => {});
    });
    test('passes', () => {});
    test('compares', () => { assert.equal(1, 2, 'one is not two'); });
  `);
  assert.deepEqual(failureReasons(output), ['servers: Error: the gateway did not start', 'compares: AssertionError [ERR_ASSERTION]: one is not two']);
});

test("a retry's output after the first run's is not read: the first run is what failed", () => {
  const first = specOutput(`import { test } from 'node:test'; test('flaky', () => { throw new Error('first time'); });`);
  const again = specOutput(`import { test } from 'node:test'; test('flaky', () => { throw new Error('second time'); });`);
  assert.deepEqual(failureReasons(`${first}\n# ---- the same file again, with source maps (failed again) ----\n${again}`), ['flaky: Error: first time']);
});

test('a file that names no failed test (killed, or ended outside a test) gives its last lines', () => {
  assert.deepEqual(failureReasons('✔ one (1ms)\n\n# killed: still running after 600 s (TEST_FILE_TIMEOUT_MS)\n'), ['✔ one (1ms)', '# killed: still running after 600 s (TEST_FILE_TIMEOUT_MS)']);
});
