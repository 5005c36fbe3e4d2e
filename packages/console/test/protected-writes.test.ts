import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { environmentIdOfPath, headerComment, intentHeaders, protectionAskedBy, protectionOf } from '../src/protected-writes.ts';

// The console's rules for writes in protected environments (docs/console.md "Protected
// environments"), expectations derived by hand from the API's header rules.

describe('protected writes', () => {
  test('the environment of a write path: environment routes and management environment routes only', () => {
    assert.equal(environmentIdOfPath('/v1/environments/env_1/flags/checkout'), 'env_1');
    assert.equal(environmentIdOfPath('/v1/management/environments/env_2'), 'env_2');
    assert.equal(environmentIdOfPath('/v1/management/environments/env%203/sdk-keys/k'), 'env 3');
    assert.equal(environmentIdOfPath('/v1/management/projects/p/environments'), undefined);
    assert.equal(environmentIdOfPath('/v1/experiments/x/recompute'), undefined);
    assert.equal(environmentIdOfPath('/v1/management/environments/%E0%A4%A/x'), undefined, 'a malformed escape is no environment');
  });

  test('what an environment asks: nothing, the name, a comment, or both', () => {
    const base = { environment_id: 'e', environment_name: 'production', project_id: 'p' };
    assert.equal(protectionOf(undefined), undefined);
    assert.equal(protectionOf(base), undefined);
    assert.equal(protectionOf({ ...base, critical: false, require_comment: false }), undefined);
    assert.deepEqual(protectionOf({ ...base, critical: true }), { environment: { ...base, critical: true }, confirm: true, comment: false });
    assert.deepEqual(protectionOf({ ...base, require_comment: true }), { environment: { ...base, require_comment: true }, confirm: false, comment: true });
  });

  test('a refusal naming a header asks for it; other preconditions ask nothing', () => {
    assert.deepEqual(protectionAskedBy('production is critical: send X-Confirm-Environment: env_1'), { confirm: true, comment: false });
    assert.deepEqual(protectionAskedBy('send x-change-comment (1..1000 characters)'), { confirm: false, comment: true });
    assert.equal(protectionAskedBy('the last server key cannot be revoked'), undefined);
  });

  test('headers of an intent', () => {
    assert.deepEqual(intentHeaders(undefined), {});
    assert.deepEqual(intentHeaders({ confirmEnvironmentId: 'env_1', comment: 'why' }), { 'x-confirm-environment': 'env_1', 'x-change-comment': 'why' });
  });

  test('a comment as a header carries it: plain punctuation, one line, Latin-1, 1..1000 characters', () => {
    assert.deepEqual(headerComment('  Launch “spring” sale — now…  '), { value: 'Launch "spring" sale - now...' });
    assert.deepEqual(headerComment('line one\r\n\n  line two'), { value: 'line one line two' });
    assert.deepEqual(headerComment('café déjà vu'), { value: 'café déjà vu' }, 'Latin-1 is kept');
    assert.deepEqual(headerComment('a\u0001b'), { value: 'a b' });
    assert.ok('error' in headerComment('   '));
    assert.ok('error' in headerComment('ship it 🚀'));
    assert.deepEqual(headerComment('x'.repeat(1000)), { value: 'x'.repeat(1000) });
    assert.ok('error' in headerComment('x'.repeat(1001)));
  });
});
