import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { categoryOf, processKind, summarize, type CpuProfile } from '../scripts/cpu-profile-summary.ts';

/** A profile with the given frames (ids 1...) sampled in the given order. */
function profile(frames: Array<[functionName: string, url: string]>, samples: number[]): CpuProfile {
  return { nodes: frames.map(([functionName, url], i) => ({ id: i + 1, callFrame: { functionName, url, lineNumber: 9 } })), samples };
}

const GATEWAY = '/w/node_modules/.cache/switchyard-tests/run-x/hosts/gateway/src/main.js';
const BATCH = '/w/node_modules/.cache/switchyard-tests/run-x/_batches/split-3.mjs';

describe('cpu-profile-summary', () => {
  test('a process is told by the scripts it ran: a batch entry, a test file, a host entry', () => {
    assert.equal(processKind(profile([['', BATCH], ['', '/w/run-x/hosts/server/test/a.test.js']], [])), 'test batch');
    assert.equal(processKind(profile([['', '/w/run-x/hosts/server/test/a.test.js']], [])), 'test file');
    assert.equal(processKind(profile([['', GATEWAY]], [])), 'gateway host');
    assert.equal(processKind(profile([['', '/w/hosts/services/src/main.ts']], [])), 'services host');
    // A package's own main.js is not a host.
    assert.equal(processKind(profile([['', '/w/node_modules/@stdlib/x/lib/main.js']], [])), 'other');
  });

  test('categories: module loading wherever it runs, the collector, packages, our code, Node internals', () => {
    assert.equal(categoryOf({ functionName: 'wrapSafe', url: 'node:internal/modules/cjs/loader', lineNumber: 0 }), 'module loading');
    assert.equal(categoryOf({ functionName: 'compileSourceTextModule', url: 'node:internal/vm/utils', lineNumber: 0 }), 'module loading');
    assert.equal(categoryOf({ functionName: '(garbage collector)', url: '', lineNumber: -1 }), 'garbage collection');
    assert.equal(categoryOf({ functionName: 'encode', url: 'file:///w/node_modules/@grpc/grpc-js/build/src/x.js', lineNumber: 0 }), 'package @grpc/grpc-js');
    assert.equal(categoryOf({ functionName: 'hash', url: 'file:///w/node_modules/bcryptjs/index.js', lineNumber: 0 }), 'package bcryptjs');
    assert.equal(categoryOf({ functionName: 'f', url: `file://${GATEWAY}`, lineNumber: 0 }), 'this repository (compiled)');
    assert.equal(categoryOf({ functionName: 'f', url: 'file:///w/packages/core/src/evaluation/evaluate.ts', lineNumber: 0 }), 'this repository: packages/core');
    assert.equal(categoryOf({ functionName: 'emit', url: 'node:events', lineNumber: 0 }), 'node:events');
    assert.equal(categoryOf({ functionName: 'x', url: 'node:internal/streams/readable', lineNumber: 0 }), 'node:internal/streams');
    assert.equal(categoryOf({ functionName: 'writeBuffer', url: '', lineNumber: -1 }), 'native code (no script)');
  });

  test('sums non-idle samples by process, category and function', () => {
    const frames: Array<[string, string]> = [
      ['(root)', ''],
      ['(idle)', ''],
      ['(garbage collector)', ''],
      ['startGateway', `file://${GATEWAY}`],
      ['hash', 'file:///w/node_modules/bcryptjs/index.js'],
    ];
    // Gateway: 3 idle, 2 GC, 4 in startGateway. Batch: 1 GC, 5 in bcryptjs, 1 idle.
    const gateway = profile(frames, [2, 2, 2, 3, 3, 4, 4, 4, 4]);
    const batch = profile([...frames, ['', BATCH]], [3, 5, 5, 5, 5, 5, 2]);
    const summary = summarize([gateway, batch]);
    assert.equal(summary.samples, 6 + 6);
    assert.deepEqual(Object.fromEntries(summary.byKind), { 'gateway host': { processes: 1, samples: 6 }, 'test batch': { processes: 1, samples: 6 } });
    assert.deepEqual(Object.fromEntries(summary.byCategory), { 'garbage collection': 3, 'this repository (compiled)': 4, 'package bcryptjs': 5 });
    assert.equal(summary.byFunction.get('startGateway main.js:10'), 4);
    assert.equal(summary.byFunction.get('hash index.js:10'), 5);
  });
});
