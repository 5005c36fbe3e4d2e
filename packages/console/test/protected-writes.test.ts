import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Api } from '../src/api.ts';
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

  test('headers of an intent: a printable ASCII comment as is, any other as utf-8\'\' and percent-encoded UTF-8', () => {
    assert.deepEqual(intentHeaders(undefined), {});
    assert.deepEqual(intentHeaders({ confirmEnvironmentId: 'env_1', comment: 'why: "now"' }), { 'x-confirm-environment': 'env_1', 'x-change-comment': 'why: "now"' });
    assert.deepEqual(intentHeaders({ comment: 'café “x” 🚀' }), { 'x-change-comment': "utf-8''caf%C3%A9%20%E2%80%9Cx%E2%80%9D%20%F0%9F%9A%80" });
    // A comment that starts like an encoded one is encoded, so the API's one decoding gives it back.
    assert.deepEqual(intentHeaders({ comment: "UTF-8''x" }), { 'x-change-comment': "utf-8''UTF-8''x" });
  });

  test('a typed comment: one line, trimmed, 1..1000 characters (counted as characters, not UTF-16 units)', () => {
    assert.deepEqual(headerComment('  Launch “spring” sale  '), { value: 'Launch “spring” sale' });
    assert.deepEqual(headerComment('line one\r\n\n  line two'), { value: 'line one line two' });
    assert.deepEqual(headerComment('a\u0001b\u0085c'), { value: 'a b c' });
    assert.ok('error' in headerComment('   '));
    assert.deepEqual(headerComment('🚀'.repeat(1000)), { value: '🚀'.repeat(1000) });
    assert.ok('error' in headerComment('x'.repeat(1001)));
  });

  test('a calculation sent as a POST (query) is a read: no question in a critical environment, no intent headers; a write asks', async () => {
    const memory = new Map<string, string>();
    const storage = { getItem: (k: string) => memory.get(k) ?? null, setItem: (k: string, v: string) => void memory.set(k, v), removeItem: (k: string) => void memory.delete(k) } as unknown as Storage;
    const api = new Api(storage);
    api.setEnvironments([{ environment_id: 'env_1', environment_name: 'production', project_id: 'p', critical: true }]);
    let asked = 0;
    api.setWriteGuard(async () => (asked++, {}));
    const sent: Array<{ method: string; headers: Record<string, string> }> = [];
    const realFetch = globalThis.fetch;
    globalThis.fetch = (async (_path: string, init: RequestInit) => {
      sent.push({ method: String(init.method), headers: init.headers as Record<string, string> });
      return new Response('{}', { status: 200 });
    }) as typeof fetch;
    try {
      await api.query('/v1/environments/env_1/experiments/power', { mde: 0.02, mean: 1, variance: 1 });
      assert.equal(asked, 0);
      assert.equal(sent[0]!.method, 'POST');
      assert.equal(sent[0]!.headers['x-confirm-environment'], undefined);
      await api.post('/v1/environments/env_1/experiments', { name: 'x' });
      assert.equal(asked, 1, 'a write there asks');
      assert.equal(sent[1]!.headers['x-confirm-environment'], 'env_1');
    } finally {
      globalThis.fetch = realFetch;
    }
  });
});
