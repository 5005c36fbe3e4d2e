import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { DomainError, FLAGS_DOCUMENT_LIMITS, FLAGS_DOCUMENT_SCHEMA, parseFlagsDocument } from '../src/index.ts';

// The flags-as-code document's frame (docs/flags-as-code.md "The document"): what parseFlagsDocument
// accepts and refuses, each expectation written from the documented rules.

const FORMAT = 'switchyard.flags/v1';

function refused(input: unknown, message: RegExp): void {
  assert.throws(
    () => parseFlagsDocument(input),
    (error: unknown) => error instanceof DomainError && error.code === 'INVALID_ARGUMENT' && message.test(error.message),
    `refused with ${message}`,
  );
}

describe('parseFlagsDocument', () => {
  test('the smallest document is the format alone', () => {
    const parsed = parseFlagsDocument({ format: FORMAT });
    assert.deepEqual({ ...parsed, environments: { ...parsed.environments } }, { format: FORMAT, flags: [], environments: {} });
  });

  test('environments are kept by name, with their three lists defaulting to empty', () => {
    const parsed = parseFlagsDocument({ format: FORMAT, flags: [{ key: 'a' }], environments: { production: { flags: { a: { enabled: true } } } } });
    assert.deepEqual(parsed.flags, [{ key: 'a' }]);
    const production = parsed.environments.production!;
    assert.deepEqual({ ...production, flags: { ...production.flags } }, { flags: { a: { enabled: true } }, segments: [], event_definitions: [] });
  });

  test('another format, an unknown field anywhere, a bad key or a duplicate is refused, naming where', () => {
    refused({ format: 'switchyard.flags/v2' }, /format must be 'switchyard\.flags\/v1'/);
    refused({}, /format/);
    refused(null, /document must be an object/);
    refused([], /document must be an object/);
    refused({ format: FORMAT, flag: [] }, /document\.flag is not a field/);
    refused({ format: FORMAT, flags: [{ key: 'a', colour: 'red' }] }, /flags\[0\]\.colour is not a field/);
    refused({ format: FORMAT, flags: [{ key: 'not a key' }] }, /flags\[0\]\.key must be/);
    refused({ format: FORMAT, flags: [{ key: 'a' }, { key: 'a' }] }, /names 'a' twice/);
    refused({ format: FORMAT, flags: {} }, /flags must be a list/);
    refused({ format: FORMAT, environments: { production: { flags: { a: { enabled: true, rule: [] } } } } }, /environments\.production\.flags\.a\.rule is not a field/);
    refused({ format: FORMAT, environments: { production: { flags: { 'bad key': {} } } } }, /environments\.production\.flags\.bad key/);
    refused({ format: FORMAT, environments: { production: { segments: [{ key: 's', kind: 'list' }, { key: 's', kind: 'rule' }] } } }, /segments names 's' twice/);
    refused({ format: FORMAT, environments: { production: { event_definitions: [{ key: 'e', unit: 'ms' }] } } }, /event_definitions\[0\]\.unit is not a field/);
    refused({ format: FORMAT, flags: [{ key: 'a', version: -1 }] }, /version must be an integer >= 0/);
    refused({ format: FORMAT, environments: { '': {} } }, /environment name is 1-200 characters/);
  });

  test('a name such as __proto__ is an environment like any other, not a prototype', () => {
    const parsed = parseFlagsDocument(JSON.parse(`{"format": "${FORMAT}", "environments": {"__proto__": {"flags": {}}}}`));
    assert.deepEqual(Object.keys(parsed.environments), ['__proto__']);
    assert.equal(Object.getPrototypeOf(parsed.environments), null);
  });

  test('the bounds: flags, environments, and list keys per list and in all', () => {
    refused({ format: FORMAT, flags: Array.from({ length: FLAGS_DOCUMENT_LIMITS.flags + 1 }, (_, i) => ({ key: `f${i}` })) }, /flags holds at most 5000/);
    refused({ format: FORMAT, environments: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`e${i}`, {}])) }, /environments holds at most 50/);
    const list = (n: number) => Array.from({ length: n }, (_, i) => `k${i}`);
    refused({ format: FORMAT, environments: { p: { segments: [{ key: 's', kind: 'list', included_keys: list(10_001) }] } } }, /included_keys holds at most 10000/);
    // 21 segments of 10,000 keys: each list within its bound, the document over 200,000.
    const segments = Array.from({ length: 21 }, (_, i) => ({ key: `s${i}`, kind: 'list', included_keys: list(10_000) }));
    refused({ format: FORMAT, environments: { p: { segments } } }, /at most 200000 member keys/);
    assert.doesNotThrow(() => parseFlagsDocument({ format: FORMAT, environments: { p: { segments: segments.slice(0, 20) } } }));
  });
});

describe('the published JSON Schema', () => {
  test('docs/flags-as-code.schema.json is FLAGS_DOCUMENT_SCHEMA (regenerate it from the constant when it changes)', () => {
    const published = JSON.parse(readFileSync(new URL('../../../docs/flags-as-code.schema.json', import.meta.url), 'utf8'));
    assert.deepEqual(published, JSON.parse(JSON.stringify(FLAGS_DOCUMENT_SCHEMA)));
  });
});
