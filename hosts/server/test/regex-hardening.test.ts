import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { bearer, rejectsWithStatus } from './support/grpc-clients.ts';
import { flagClient, payload, segmentClient, type FlagClient, type SegmentClient } from './support/grpc-flag-clients.ts';
import { createFlag, createSegment, envFlags, evaluate, evaluatePath, onOffFlag, put, segmentsOf } from './support/flag-client.ts';
import { api, expectError, expectStatus, loginAdmin, seedTenant, unique, type ApiClient, type Tenant } from './support/rest-client.ts';
import { portFrom, spawnServer } from './support/server-process.ts';
import { TEST_JWT_SECRET, startTestServer, type TestServer } from './support/test-server.ts';

/**
 * `matches` cannot stall the server (docs/security.md): patterns run on a linear-time engine
 * (RE2 syntax), patterns outside RE2 are refused at write time on every writer, and string
 * attributes over 4096 characters are refused at every evaluation entry point.
 */

let ts: TestServer;
let client: ApiClient;
let a: Tenant;
let flags: FlagClient;
let segments: SegmentClient;

/** The classic catastrophic-backtracking pattern: about 2^n steps on n 'a's and a '!' in a backtracking engine. */
const REDOS_PATTERN = '^(a+)+$';

before(async () => {
  ts = await startTestServer();
  client = api(ts.base);
  const root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'regex');
  flags = flagClient(ts.server.grpcPort);
  segments = segmentClient(ts.server.grpcPort);
});
after(async () => {
  flags.close();
  segments.close();
  await ts.stop();
});

const matchesRule = (pattern: string) => ({ id: 'pattern', conditions: [{ attribute: 'email', op: 'matches', values: [pattern] }], variant_key: 'on' });

describe('a catastrophic pattern cannot stall the server', () => {
  test('an org member saves ^(a+)+$; evaluating 4096 characters of "aaaa…!" answers while /healthz keeps answering', async () => {
    const key = `redos-${unique()}`;
    // An org member (not only an admin) may write rules: the attack needs no privilege.
    await createFlag(client, a.member.token, a.environmentId, onOffFlag(key, [matchesRule(REDOS_PATTERN)]));

    // The server under attack runs in its own process, so that a blocked event loop there shows
    // as unanswered requests here instead of freezing this test too.
    const other = spawnServer({ APP_ENV: 'production', DATABASE_URL: ts.db.url, JWT_SECRET: TEST_JWT_SECRET });
    try {
      const base = `http://127.0.0.1:${portFrom(await other.waitForLine(/REST listening/))}`;
      await other.waitForLine(/"msg":"ready"/);
      const target = api(base);
      // Warm the environment's snapshot, so the attack below measures evaluation only.
      assert.equal(expectStatus(await evaluate(target, a.rawKey, a.environmentId, 'u1', { flag_key: key, attributes: { email: 'aaa' } }), 200).variant_key, 'on');

      const email = `${'a'.repeat(4095)}!`;
      assert.equal(email.length, 4096, 'exactly at the attribute cap, so the server must evaluate it');
      let attacking = true;
      const health: Array<{ ok: boolean; ms: number }> = [];
      const poll = (async () => {
        while (attacking) {
          const started = performance.now();
          try {
            const response = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(5000) });
            health.push({ ok: response.status === 200 && ((await response.json()) as { status?: string }).status === 'ok', ms: performance.now() - started });
          } catch {
            health.push({ ok: false, ms: performance.now() - started });
          }
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      })();
      // Several attacks in a row: a backtracking engine would need about 2^4095 steps for each.
      const answers = [];
      try {
        for (let i = 0; i < 5; i++) {
          const response = await fetch(`${base}${evaluatePath(a.environmentId)}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-sdk-key': a.rawKey },
            body: JSON.stringify({ context_key: `attacker-${i}`, context_type: 'user', flag_key: key, attributes: { email } }),
            // Generous for a busy 2-core machine; the linear-time engine answers in milliseconds.
            signal: AbortSignal.timeout(20_000),
          });
          answers.push({ status: response.status, body: await response.json() });
        }
      } finally {
        // Let at least one health poll see the server after the attacks.
        await new Promise((resolve) => setTimeout(resolve, 100));
        attacking = false;
        await poll;
      }
      for (const answer of answers) {
        assert.equal(answer.status, 200);
        // "aaaa…!" ends with '!', so ^(a+)+$ does not match: the off variant by default.
        assert.deepEqual(answer.body, { evaluated: true, flag_key: key, variant_key: 'off', is_enabled: true, value: 'OFF', reason: 'DEFAULT' });
      }
      assert.ok(health.length >= 1, 'healthz was polled');
      assert.deepEqual(health.filter((h) => !h.ok), [], 'every /healthz poll answered 200 {status: ok} within 5 s');
    } finally {
      other.child.kill('SIGKILL');
      await other.exited;
    }
  });
});

describe('string attributes are capped at 4096 characters at every evaluation entry point', () => {
  const over = 'a'.repeat(4097);

  test('REST evaluate: 4096 is evaluated, 4097 is 400 INVALID_ARGUMENT naming the attribute', async () => {
    const key = `cap-${unique()}`;
    await createFlag(client, a.admin.token, a.environmentId, onOffFlag(key, [{ id: 'long', conditions: [{ attribute: 'email', op: 'ends_with', values: ['@x'] }], variant_key: 'on' }]));
    const atCap = `${'a'.repeat(4094)}@x`;
    assert.equal(expectStatus(await evaluate(client, a.rawKey, a.environmentId, 'u1', { flag_key: key, attributes: { email: atCap } }), 200).variant_key, 'on');
    expectError(await evaluate(client, a.rawKey, a.environmentId, 'u1', { flag_key: key, attributes: { email: `${over}@x` } }), 400, 'INVALID_ARGUMENT', /^attributes\.email is 4099 characters long \(at most 4096\)$/);
    // Without flag_key (every flag) and in a further context of a multi-context input alike.
    expectError(await evaluate(client, a.rawKey, a.environmentId, 'u1', { attributes: { email: over } }), 400, 'INVALID_ARGUMENT', /attributes\.email .*at most 4096/);
    expectError(
      await evaluate(client, a.rawKey, a.environmentId, 'u1', { flag_key: key, contexts: [{ context_type: 'organization', key: 'o1', attributes: { name: over } }] }),
      400,
      'INVALID_ARGUMENT',
      /^contexts\[0\]\.attributes\.name is 4097 characters long/,
    );
  });

  test('OFREP single and bulk: 400 INVALID_CONTEXT naming the attribute', async () => {
    const key = `cap-ofrep-${unique()}`;
    await createFlag(client, a.admin.token, a.environmentId, onOffFlag(key, [matchesRule('@example\\.com$')]));
    const ok = await client.post(`/ofrep/v1/evaluate/flags/${key}`, { sdkKey: a.rawKey, body: { context: { targetingKey: 'u1', email: `${'a'.repeat(4084)}@example.com` } } });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.variant, 'on');
    const single = await client.post(`/ofrep/v1/evaluate/flags/${key}`, { sdkKey: a.rawKey, body: { context: { targetingKey: 'u1', email: over } } });
    assert.equal(single.status, 400, single.text);
    assert.deepEqual(single.body, { key, errorCode: 'INVALID_CONTEXT', errorDetails: 'attributes.email is 4097 characters long (at most 4096)' });
    const bulk = await client.post('/ofrep/v1/evaluate/flags', { sdkKey: a.rawKey, body: { context: { targetingKey: 'u1', email: over } } });
    assert.equal(bulk.status, 400, bulk.text);
    assert.deepEqual(bulk.body, { errorCode: 'INVALID_CONTEXT', errorDetails: 'attributes.email is 4097 characters long (at most 4096)' });
  });
});

describe('patterns outside RE2 syntax are refused at write time, naming the field', () => {
  const REFUSED = [
    ['a backreference', '(a)\\1'],
    ['a lookahead', '(?=a)a'],
  ] as const;

  for (const [what, pattern] of REFUSED) {
    test(`flags over REST: ${what} in create and in PUT rules is 400 INVALID_ARGUMENT`, async () => {
      const key = `refused-${unique()}`;
      expectError(
        await client.post(envFlags(a.environmentId), { token: a.member.token, body: onOffFlag(key, [matchesRule('^ok$'), matchesRule(pattern)].map((r, i) => ({ ...r, id: `r${i}` }))) }),
        400,
        'INVALID_ARGUMENT',
        /^rules\[1\]\.conditions\[0\]\.values\[0\] is not a valid regular expression \(RE2 syntax/,
      );
      expectError(await client.get(`${envFlags(a.environmentId)}/${key}`, { token: a.member.token }), 404, 'NOT_FOUND');

      await createFlag(client, a.member.token, a.environmentId, onOffFlag(key, [matchesRule('^ok$')]));
      expectError(
        await put(client, `${envFlags(a.environmentId)}/${key}/rules`, { token: a.member.token, body: { rules: [matchesRule(pattern)] } }),
        400,
        'INVALID_ARGUMENT',
        /^rules\[0\]\.conditions\[0\]\.values\[0\] is not a valid regular expression/,
      );
      const stored = expectStatus(await client.get(`${envFlags(a.environmentId)}/${key}`, { token: a.member.token }), 200);
      assert.deepEqual(stored.rules[0].conditions[0].values, ['^ok$'], 'the refused rules were not stored');
    });

    test(`segments over REST: ${what} in create and update is 400 INVALID_ARGUMENT`, async () => {
      const key = `refused-seg-${unique()}`;
      const conditions = [{ attribute: 'plan', op: 'eq', values: ['pro'] }, { attribute: 'email', op: 'matches', values: [pattern] }];
      expectError(
        await client.post(segmentsOf(a.environmentId), { token: a.member.token, body: { key, context_type: 'user', kind: 'rule', conditions } }),
        400,
        'INVALID_ARGUMENT',
        /^conditions\[1\]\.values\[0\] is not a valid regular expression \(RE2 syntax/,
      );
      const created = await createSegment(client, a.member.token, a.environmentId, { key, context_type: 'user', kind: 'rule', conditions: [conditions[0]] });
      expectError(
        await put(client, `${segmentsOf(a.environmentId)}/${key}`, { token: a.member.token, body: { conditions, version: created.version } }),
        400,
        'INVALID_ARGUMENT',
        /^conditions\[1\]\.values\[0\] is not a valid regular expression/,
      );
    });

    test(`gRPC MutateFlag and MutateSegment: ${what} is INVALID_ARGUMENT naming the field`, async () => {
      const member = bearer(a.member.token);
      const flagError = await rejectsWithStatus(
        flags.mutateFlag(
          {
            environment_id: a.environmentId,
            kind: 'MUTATION_KIND_CREATE',
            flag: {
              key: `refused-grpc-${unique()}`,
              value_type: 'FLAG_VALUE_TYPE_BOOL',
              enabled: true,
              variants: [{ key: 'on', value: { bool_value: true } }],
              rules: [{ rule_payload: payload({ conditions: [{ attribute: 'email', op: 'matches', values: [pattern] }] }), variant_key: 'on' }],
            },
          },
          member,
        ),
        grpc.status.INVALID_ARGUMENT,
      );
      assert.match(flagError.details, /rules\[0\]\.conditions\[0\]\.values\[0\] is not a valid regular expression/);
      const segmentError = await rejectsWithStatus(
        segments.mutateSegment(
          {
            environment_id: a.environmentId,
            kind: 'SEGMENT_MUTATION_KIND_CREATE',
            rule_segment: { key: `refused-grpc-${unique()}`, context_type: 'user', rule_payload: payload({ conditions: [{ attribute: 'email', op: 'matches', values: [pattern] }] }) },
          },
          member,
        ),
        grpc.status.INVALID_ARGUMENT,
      );
      assert.match(segmentError.details, /conditions\[0\]\.values\[0\] is not a valid regular expression/);
    });
  }

  test('RE2 patterns users rely on are accepted and evaluated: anchors, classes, alternation, (?i)', async () => {
    const key = `re2-${unique()}`;
    const rules = [
      { id: 'staff', conditions: [{ attribute: 'email', op: 'matches', values: ['(?i)^[a-z.]+@example\\.com$'] }], variant_key: 'on' },
      { id: 'eu', conditions: [{ attribute: 'country', op: 'matches', values: ['^(DE|FR|IT)$'] }], variant_key: 'on' },
      { id: 'build', conditions: [{ attribute: 'build', op: 'matches', values: ['^\\d{4}-[[:alpha:]]+$'] }], variant_key: 'on' },
    ];
    await createFlag(client, a.member.token, a.environmentId, onOffFlag(key, rules));
    const variant = async (attributes: Record<string, string>) =>
      expectStatus(await evaluate(client, a.rawKey, a.environmentId, 'u1', { flag_key: key, attributes }), 200).variant_key;
    assert.equal(await variant({ email: 'Ann.Lee@Example.COM' }), 'on', '(?i) makes the whole pattern case-insensitive');
    assert.equal(await variant({ email: 'ann@example.com.evil' }), 'off', '$ anchors at the end');
    assert.equal(await variant({ country: 'FR' }), 'on');
    assert.equal(await variant({ country: 'FRA' }), 'off', '^(DE|FR|IT)$ is anchored on both sides');
    assert.equal(await variant({ build: '2024-beta' }), 'on');
    assert.equal(await variant({ build: '24-beta' }), 'off', '\\d{4} needs four digits');
  });
});
