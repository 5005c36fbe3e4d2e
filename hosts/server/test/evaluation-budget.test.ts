import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { patternRunMs } from '@switchyard/core/testing';
import { createFlag, createSegment, envFlags, evaluate, onOffFlag, put, segmentsOf } from './support/flag-client.ts';
import { api, expectError, expectStatus, loginAdmin, seedTenant, unique, type ApiClient, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * One request must not freeze every tenant (docs/security.md "Evaluation budget per request"). An
 * org member could make a flag whose rules named two costly rule segments 50 times each; one
 * evaluate request then held the event loop for 10-30 s. Now a rule names a segment once, a flag's
 * regular-expression budget counts the segments it names (at flag and at segment writes), each
 * segment is evaluated once per request, and every request has an evaluation budget after which
 * the flags left answer ERROR.
 */

const BUDGET_MS = 50;
let ts: TestServer;
let client: ApiClient;
let a: Tenant;

before(async () => {
  ts = await startTestServer({ EVALUATION_BUDGET_MS: String(BUDGET_MS) });
  client = api(ts.base);
  const root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'budget');
});
after(async () => {
  await ts.stop();
});

/** Fits the per-definition budget alone (479 RE2 instructions at n = 30), costs 0.1-0.5 s on VALUE here. */
const costly = (n: number): string => `^(?:[ab]*a[ab]{${n}}){1,14}$`;

/**
 * 4,095 random a/b characters and a '!' (no pattern above matches it). A fresh value each time: a
 * pattern remembers its answer for the last value it ran on.
 */
function abValue(): string {
  let text = '';
  for (const byte of randomBytes(4095)) text += byte & 1 ? 'a' : 'b';
  return `${text}!`;
}

const matches = (attribute: string, pattern: string, negate = false) => ({ attribute, op: 'matches', values: [pattern], negate });
const ruleSegment = (key: string, conditions: unknown[]) => ({ key, context_type: 'user', kind: 'rule', conditions });

describe('write-time: a flag pays for the segments it names', () => {
  test('a rule naming a segment twice is refused, naming the field', async () => {
    const segment = `dup-${unique()}`;
    await createSegment(client, a.member.token, a.environmentId, ruleSegment(segment, [{ attribute: 'plan', op: 'eq', values: ['gold'] }]));
    const response = await client.post(envFlags(a.environmentId), {
      token: a.member.token,
      body: onOffFlag(`dup-${unique()}`, [{ id: 'r', conditions: [], segment_keys: [segment, segment], variant_key: 'on' }]),
    });
    expectError(response, 400, 'INVALID_ARGUMENT', /rules\[0\]\.segment_keys\[1\] '.*' is named twice/);
  });

  test("the issue's attack: a flag naming two costly segments is refused (958 RE2 instructions, at most 500)", async () => {
    const s1 = `costly-a-${unique()}`;
    const s2 = `costly-b-${unique()}`;
    // Each segment alone fits its own budget.
    await createSegment(client, a.member.token, a.environmentId, ruleSegment(s1, [matches('a', costly(30))]));
    await createSegment(client, a.member.token, a.environmentId, ruleSegment(s2, [matches('b', costly(30), true)]));
    const keys = Array.from({ length: 2 }, (_, i) => (i % 2 === 0 ? s1 : s2));
    const response = await client.post(envFlags(a.environmentId), {
      token: a.member.token,
      body: onOffFlag(`attack-${unique()}`, [{ id: 'r', conditions: [], segment_keys: keys, variant_key: 'on' }]),
    });
    expectError(response, 400, 'INVALID_ARGUMENT', /958 RE2 instructions together \(at most 500\)/);
    // The same through PUT .../rules on an existing flag.
    const key = `plain-${unique()}`;
    await createFlag(client, a.member.token, a.environmentId, onOffFlag(key));
    expectError(
      await put(client, `${envFlags(a.environmentId)}/${key}/rules`, { token: a.member.token, body: { rules: [{ id: 'r', conditions: [], segment_keys: [s1, s2], variant_key: 'on' }] } }),
      400,
      'INVALID_ARGUMENT',
      /958 RE2 instructions/,
    );
  });

  test('a segment edit that would push a flag naming it over the budget is refused, naming the flag', async () => {
    const s1 = `edit-a-${unique()}`;
    const s2 = `edit-b-${unique()}`;
    await createSegment(client, a.member.token, a.environmentId, ruleSegment(s1, [matches('a', costly(30))]));
    await createSegment(client, a.member.token, a.environmentId, ruleSegment(s2, [{ attribute: 'plan', op: 'eq', values: ['gold'] }]));
    const flagKey = `uses-both-${unique()}`;
    await createFlag(client, a.member.token, a.environmentId, onOffFlag(flagKey, [{ id: 'r', conditions: [], segment_keys: [s1, s2], variant_key: 'on' }]));
    const response = await put(client, `${segmentsOf(a.environmentId)}/${s2}`, { token: a.member.token, body: { conditions: [matches('b', costly(30))] } });
    expectError(response, 400, 'INVALID_ARGUMENT', new RegExp(`flags naming segment '${s2}' .*: ${flagKey} \\(958\\)`));
    // Refused means unchanged: the segment keeps its conditions and version.
    const segment = expectStatus(await client.get(`${segmentsOf(a.environmentId)}/${s2}`, { token: a.member.token }), 200);
    assert.deepEqual(segment.conditions.map((c: { op: string }) => c.op), ['eq']);
    assert.equal(segment.version, 1);
  });
});

describe('the evaluation budget per request', () => {
  // 24 flags, each within its own budget, each running a different costly pattern: evaluating
  // them all on a 4,096-character value took 4-10 s of one event loop without the budget.
  let environmentId: string;
  let sdkKey: string;
  before(async () => {
    const root = await loginAdmin(client);
    const tenant = await seedTenant(client, root.token, 'budget-all');
    environmentId = tenant.environmentId;
    sdkKey = tenant.rawKey;
    for (let i = 0; i < 24; i++) {
      await createFlag(client, tenant.member.token, environmentId, onOffFlag(`costly-${i}`, [{ id: 'r', conditions: [matches('a', costly(8 + i))], variant_key: 'on' }]));
    }
    // Warm the snapshot, so the requests below measure evaluation.
    expectStatus(await evaluate(client, sdkKey, environmentId, 'u1', { flag_key: 'costly-0', attributes: { a: 'ab' } }), 200);
  });

  test('evaluate of every flag answers 200 within about the budget; the flags left answer ERROR naming it', async () => {
    const value = abValue();
    const onePatternRun = patternRunMs(costly(31), value);
    const started = performance.now();
    const body = expectStatus(await evaluate(client, sdkKey, environmentId, 'u1', { attributes: { a: value } }), 200);
    const elapsed = performance.now() - started;
    const results = body.flags as Array<{ flag_key: string; reason: string; error_code?: string; error_message?: string; variant_key: string }>;
    assert.equal(results.length, 24);
    const stopped = results.filter((r) => r.reason === 'ERROR');
    assert.ok(stopped.length >= 18, `only ${stopped.length} of 24 flags were stopped`);
    for (const result of stopped) {
      assert.equal(result.error_code, 'GENERAL');
      assert.equal(result.error_message, `not evaluated: this evaluation used up its budget of ${BUDGET_MS} ms`);
      assert.equal(result.variant_key, 'off', 'an ERROR serves the off variant');
    }
    assert.ok(results.every((r) => r.reason === 'ERROR' || r.reason === 'DEFAULT'));
    // The budget plus at most one pattern run already started, and the HTTP round trip; in pattern
    // runs measured now (in this process; the same machine), so a busy machine slows both alike.
    assert.ok(elapsed < BUDGET_MS + 3 * onePatternRun + 500, `took ${elapsed.toFixed(0)} ms; one pattern run ${onePatternRun.toFixed(0)} ms`);
  });

  test('OFREP bulk: the flags left answer errorCode GENERAL', async () => {
    const response = await client.post('/ofrep/v1/evaluate/flags', { sdkKey, body: { context: { targetingKey: 'u1', a: abValue() } } });
    assert.equal(response.status, 200, response.text);
    const stopped = (response.body.flags as Array<{ errorCode?: string; errorDetails?: string }>).filter((f) => f.errorCode !== undefined);
    assert.ok(stopped.length >= 18, `only ${stopped.length} of 24 flags were stopped`);
    for (const flag of stopped) {
      assert.equal(flag.errorCode, 'GENERAL');
      assert.match(flag.errorDetails ?? '', /budget of 50 ms/);
    }
  });

  test('other requests are not starved: /healthz answers while one request is spending its budget', async () => {
    // Timed from the attack's start: whether the server runs in this process (single topology: a
    // blocked loop delays the timer below too) or in another, /healthz answers only once the loop
    // is free again (without the budget, 7-15 s here).
    const value = abValue();
    const onePatternRun = patternRunMs(costly(31), value);
    const started = performance.now();
    const attack = evaluate(client, sdkKey, environmentId, 'u1', { attributes: { a: value } });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const health = await fetch(`${ts.base}/healthz`, { signal: AbortSignal.timeout(10_000) });
    assert.equal(health.status, 200);
    const healthMs = performance.now() - started;
    expectStatus(await attack, 200);
    assert.ok(healthMs < 100 + BUDGET_MS + 3 * onePatternRun + 500, `healthz took ${healthMs.toFixed(0)} ms; one pattern run ${onePatternRun.toFixed(0)} ms`);
  });
});
