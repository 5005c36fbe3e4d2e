import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Exposure, MetricEvent } from '../../model/entities.ts';
import {
  assertRejectsWithCode,
  foreignOrgScope,
  inWorld,
  type MakeEventExperimentRepos,
} from './event-experiment-fixture.ts';

type NewEvent = Omit<MetricEvent, 'environmentId'>;
type NewExposure = Omit<Exposure, 'environmentId'>;

const event = (metricKey: string, contextKey: string, value = 1): NewEvent => ({
  metricKey,
  contextType: 'user',
  contextKey,
  value,
  timestampMs: 1_700_000_000_000,
});
const exposure = (flagKey: string, contextKey: string, variantKey = 'on'): NewExposure => ({
  flagKey,
  variantKey,
  contextType: 'user',
  contextKey,
  timestampMs: 1_700_000_000_000,
});

/** The behaviour every EventDefinitionRepository must show; run against the fake and PostgreSQL. */
export function eventDefinitionRepositoryContract(name: string, makeRepos: MakeEventExperimentRepos): void {
  describe(`EventDefinitionRepository contract: ${name}`, () => {
    test('create returns the record; get and list (ordered by key) read it back', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const created = await repos.eventDefinitions.create(scopes.env, { key: 'signup', description: 'Signed up', valueType: 'bool' });
        assert.equal(created.environmentId, scopes.env.environmentId);
        assert.equal(created.key, 'signup');
        assert.equal(created.description, 'Signed up');
        assert.equal(created.valueType, 'bool');
        assert.ok(Number.isInteger(created.createdAtMs) && created.createdAtMs > 0);
        assert.equal(created.updatedAtMs, created.createdAtMs);
        assert.deepEqual(await repos.eventDefinitions.get(scopes.env, 'signup'), created);
        await repos.eventDefinitions.create(scopes.env, { key: 'revenue', description: '', valueType: 'double' });
        await repos.eventDefinitions.create(scopes.env, { key: 'clicks', description: '', valueType: 'int' });
        const listed = await repos.eventDefinitions.list(scopes.env);
        assert.deepEqual(listed.map((d) => d.key), ['clicks', 'revenue', 'signup']);
        assert.deepEqual(listed[2], created);
        assert.equal(await repos.eventDefinitions.get(scopes.env, 'missing'), null);
      }));

    test('a key taken in the environment is ALREADY_EXISTS; another environment may reuse it', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const first = await repos.eventDefinitions.create(scopes.env, { key: 'buy', description: 'first', valueType: 'int' });
        await assertRejectsWithCode(
          repos.eventDefinitions.create(scopes.env, { key: 'buy', description: 'second', valueType: 'bool' }),
          'ALREADY_EXISTS',
        );
        assert.deepEqual(await repos.eventDefinitions.get(scopes.env, 'buy'), first);
        const other = await repos.eventDefinitions.create(scopes.otherEnvSameProject, { key: 'buy', description: 'other', valueType: 'bool' });
        assert.equal(other.environmentId, scopes.otherEnvSameProject.environmentId);
        assert.deepEqual((await repos.eventDefinitions.list(scopes.env)).map((d) => d.description), ['first']);
        assert.deepEqual((await repos.eventDefinitions.list(scopes.otherEnvSameProject)).map((d) => d.description), ['other']);
      }));

    test('update changes description and value type and bumps updatedAtMs only', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const created = await repos.eventDefinitions.create(scopes.env, { key: 'score', description: 'old', valueType: 'int' });
        const described = await repos.eventDefinitions.update(scopes.env, 'score', { description: 'new' });
        assert.equal(described.description, 'new');
        assert.equal(described.valueType, 'int');
        assert.equal(described.createdAtMs, created.createdAtMs);
        assert.ok(described.updatedAtMs > created.updatedAtMs, 'updatedAtMs moves forward');
        const retyped = await repos.eventDefinitions.update(scopes.env, 'score', { valueType: 'double' });
        assert.equal(retyped.valueType, 'double');
        assert.equal(retyped.description, 'new');
        assert.ok(retyped.updatedAtMs > described.updatedAtMs);
        assert.deepEqual(await repos.eventDefinitions.get(scopes.env, 'score'), retyped);
      }));

    test('delete removes the definition; update and delete of an unknown key are NOT_FOUND', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        await repos.eventDefinitions.create(scopes.env, { key: 'gone', description: '', valueType: 'bool' });
        await repos.eventDefinitions.delete(scopes.env, 'gone');
        assert.equal(await repos.eventDefinitions.get(scopes.env, 'gone'), null);
        assert.deepEqual(await repos.eventDefinitions.list(scopes.env), []);
        await assertRejectsWithCode(repos.eventDefinitions.delete(scopes.env, 'gone'), 'NOT_FOUND');
        await assertRejectsWithCode(repos.eventDefinitions.update(scopes.env, 'gone', { description: 'x' }), 'NOT_FOUND');
      }));

    test("another org sees none of the environment's definitions and cannot change them", () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const created = await repos.eventDefinitions.create(scopes.env, { key: 'private', description: 'mine', valueType: 'bool' });
        const intruder = foreignOrgScope(scopes.env, scopes.otherOrgEnv);
        for (const scope of [scopes.otherOrgEnv, intruder]) {
          assert.equal(await repos.eventDefinitions.get(scope, 'private'), null);
          assert.deepEqual(await repos.eventDefinitions.list(scope), []);
          await assertRejectsWithCode(repos.eventDefinitions.update(scope, 'private', { description: 'hacked' }), 'NOT_FOUND');
          await assertRejectsWithCode(repos.eventDefinitions.delete(scope, 'private'), 'NOT_FOUND');
        }
        await assertRejectsWithCode(
          repos.eventDefinitions.create(intruder, { key: 'planted', description: '', valueType: 'bool' }),
          'NOT_FOUND',
        );
        assert.deepEqual(await repos.eventDefinitions.list(scopes.env), [created]);
      }));
  });
}

/** The behaviour every EventRepository must show; run against the fake and PostgreSQL. */
export function eventRepositoryContract(name: string, makeRepos: MakeEventExperimentRepos): void {
  describe(`EventRepository contract: ${name}`, () => {
    test('insert returns the number stored; count filters by metric and by tenant', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        assert.equal(await repos.events.insert(scopes.env, []), 0);
        const stored = await repos.events.insert(scopes.env, [event('buy', 'u1'), event('buy', 'u2', 0), event('view', 'u1', 3.5)]);
        assert.equal(stored, 3);
        // insert resolved, so the rows are committed and visible to the next statement.
        assert.equal(await repos.events.count(scopes.env), 3);
        assert.equal(await repos.events.count(scopes.env, { metricKey: 'buy' }), 2);
        assert.equal(await repos.events.count(scopes.env, { metricKey: 'view' }), 1);
        assert.equal(await repos.events.count(scopes.env, { metricKey: 'none' }), 0);
        assert.equal(await repos.events.count(scopes.env, {}), 3);
        assert.equal(await repos.events.count(scopes.otherEnvSameProject), 0);
        assert.equal(await repos.events.count(scopes.otherOrgEnv), 0);
        assert.equal(await repos.events.count(foreignOrgScope(scopes.env, scopes.otherOrgEnv)), 0);
      }));

    test('lastReceivedAtMs is 0 when empty, then the server receipt time of the newest batch', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        assert.equal(await repos.events.lastReceivedAtMs(scopes.env), 0);
        const before = Date.now();
        // The client timestamp is far in the past: the receipt time must not come from it.
        await repos.events.insert(scopes.env, [event('buy', 'u1')]);
        const after = Date.now();
        const last = await repos.events.lastReceivedAtMs(scopes.env);
        assert.ok(last >= before && last <= after, `${last} within [${before}, ${after}]`);
        assert.equal(await repos.events.lastReceivedAtMs(scopes.otherEnvSameProject), 0);
        assert.equal(await repos.events.lastReceivedAtMs(scopes.otherOrgEnv), 0);
      }));

    test('12,000 events in one call are all stored', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const batch = Array.from({ length: 12_000 }, (_, i) => event(i % 2 === 0 ? 'even' : 'odd', `u${i}`, i));
        assert.equal(await repos.events.insert(scopes.env, batch), 12_000);
        assert.equal(await repos.events.count(scopes.env), 12_000);
        assert.equal(await repos.events.count(scopes.env, { metricKey: 'even' }), 6_000);
        assert.equal(await repos.events.count(scopes.env, { metricKey: 'odd' }), 6_000);
      }));

    test('an environment outside the scope is NOT_FOUND and nothing is stored', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const intruder = foreignOrgScope(scopes.env, scopes.otherOrgEnv);
        await assertRejectsWithCode(repos.events.insert(intruder, [event('buy', 'u1')]), 'NOT_FOUND');
        assert.equal(await repos.events.count(scopes.env), 0);
        assert.equal(await repos.events.count(intruder), 0);
      }));
  });
}

/** The behaviour every ExposureRepository must show; run against the fake and PostgreSQL. */
export function exposureRepositoryContract(name: string, makeRepos: MakeEventExperimentRepos): void {
  describe(`ExposureRepository contract: ${name}`, () => {
    test('insert returns the number stored; count filters by flag and by tenant', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        assert.equal(await repos.exposures.insert(scopes.env, []), 0);
        const stored = await repos.exposures.insert(scopes.env, [exposure('checkout', 'u1'), exposure('checkout', 'u2', 'off'), exposure('banner', 'u1')]);
        assert.equal(stored, 3);
        assert.equal(await repos.exposures.count(scopes.env), 3);
        assert.equal(await repos.exposures.count(scopes.env, { flagKey: 'checkout' }), 2);
        assert.equal(await repos.exposures.count(scopes.env, { flagKey: 'banner' }), 1);
        assert.equal(await repos.exposures.count(scopes.otherEnvSameProject), 0);
        assert.equal(await repos.exposures.count(scopes.otherOrgEnv), 0);
        assert.equal(await repos.exposures.count(foreignOrgScope(scopes.env, scopes.otherOrgEnv)), 0);
      }));

    test('lastReceivedAtMs is 0 when empty, then the server receipt time', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        assert.equal(await repos.exposures.lastReceivedAtMs(scopes.env), 0);
        const before = Date.now();
        await repos.exposures.insert(scopes.env, [exposure('checkout', 'u1')]);
        const after = Date.now();
        const last = await repos.exposures.lastReceivedAtMs(scopes.env);
        assert.ok(last >= before && last <= after, `${last} within [${before}, ${after}]`);
        assert.equal(await repos.exposures.lastReceivedAtMs(scopes.otherOrgEnv), 0);
      }));

    test('a batch larger than one statement chunk is stored whole', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const batch = Array.from({ length: 7_500 }, (_, i) => exposure('big', `u${i}`, i % 3 === 0 ? 'off' : 'on'));
        assert.equal(await repos.exposures.insert(scopes.env, batch), 7_500);
        assert.equal(await repos.exposures.count(scopes.env, { flagKey: 'big' }), 7_500);
      }));

    test('an environment outside the scope is NOT_FOUND and nothing is stored', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        await assertRejectsWithCode(
          repos.exposures.insert(foreignOrgScope(scopes.env, scopes.otherOrgEnv), [exposure('checkout', 'u1')]),
          'NOT_FOUND',
        );
        assert.equal(await repos.exposures.count(scopes.env), 0);
      }));
  });
}

/** The behaviour every IdempotencyRepository must show; run against the fake and PostgreSQL. */
export function idempotencyRepositoryContract(name: string, makeRepos: MakeEventExperimentRepos): void {
  describe(`IdempotencyRepository contract: ${name}`, () => {
    const first = { accepted_count: 2, rejected_keys: ['bad'], nested: { ok: true, none: null } };
    const second = { accepted_count: 9, rejected_keys: [] };

    test('get is null for a new key; putIfAbsent stores and returns the answer until it expires', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        assert.equal(await repos.idempotency.get(scopes.env, 'k1', 1_000), null);
        assert.deepEqual(await repos.idempotency.putIfAbsent(scopes.env, 'k1', first, 5_000, 1_000), first);
        assert.deepEqual(await repos.idempotency.get(scopes.env, 'k1', 1_000), first);
        assert.deepEqual(await repos.idempotency.get(scopes.env, 'k1', 4_999), first);
        assert.equal(await repos.idempotency.get(scopes.env, 'k1', 5_000), null, 'expiresAtMs <= nowMs is expired');
        assert.equal(await repos.idempotency.get(scopes.env, 'k1', 9_000), null);
      }));

    test('a second putIfAbsent before expiry keeps and returns the FIRST answer', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        await repos.idempotency.putIfAbsent(scopes.env, 'k2', first, 5_000, 1_000);
        assert.deepEqual(await repos.idempotency.putIfAbsent(scopes.env, 'k2', second, 8_000, 2_000), first);
        assert.deepEqual(await repos.idempotency.get(scopes.env, 'k2', 4_000), first);
        assert.equal(await repos.idempotency.get(scopes.env, 'k2', 6_000), null, 'the expiry was not extended');
      }));

    test('pruneExpired deletes expired answers of every environment, at most limit per call; live ones stay', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        // Expiries 100..500 alternating between two orgs' environments, and one live answer.
        const scopeOf = (i: number) => (i % 2 === 0 ? scopes.env : scopes.otherOrgEnv);
        for (let i = 1; i <= 5; i += 1) await repos.idempotency.putIfAbsent(scopeOf(i), `old-${i}`, { i }, i * 100, 0);
        await repos.idempotency.putIfAbsent(scopes.env, 'live', first, 10_000, 0);
        assert.equal(await repos.idempotency.pruneExpired(300, 2), 2, 'the batch limit holds');
        assert.equal(await repos.idempotency.pruneExpired(300, 2), 1, 'expiresAtMs == nowMs is expired too');
        assert.equal(await repos.idempotency.pruneExpired(300, 2), 0);
        // Read as of time 0, when none had expired: the pruned ones are gone, the rest intact.
        const left = [];
        for (let i = 1; i <= 5; i += 1) left.push(await repos.idempotency.get(scopeOf(i), `old-${i}`, 0));
        assert.deepEqual(left, [null, null, null, { i: 4 }, { i: 5 }]);
        assert.equal(await repos.idempotency.pruneExpired(9_999, 0), 0, 'a limit of 0 deletes nothing');
        assert.equal(await repos.idempotency.pruneExpired(9_999, 10), 2);
        assert.deepEqual(await repos.idempotency.get(scopes.env, 'live', 9_999), first);
      }));

    test('an expired answer is replaced by the next putIfAbsent', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        await repos.idempotency.putIfAbsent(scopes.env, 'k3', first, 5_000, 1_000);
        assert.deepEqual(await repos.idempotency.putIfAbsent(scopes.env, 'k3', second, 15_000, 5_000), second);
        assert.deepEqual(await repos.idempotency.get(scopes.env, 'k3', 10_000), second);
      }));

    test('concurrent putIfAbsent calls all return the one answer that won', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const answers = Array.from({ length: 6 }, (_, i) => ({ attempt: i }));
        const returned = await Promise.all(
          answers.map((answer) => repos.idempotency.putIfAbsent(scopes.env, 'race', answer, 50_000, 1_000)),
        );
        const winner = returned[0];
        assert.ok(answers.some((answer) => JSON.stringify(answer) === JSON.stringify(winner)), 'one of the offered answers');
        for (const answer of returned) assert.deepEqual(answer, winner);
        assert.deepEqual(await repos.idempotency.get(scopes.env, 'race', 2_000), winner);
      }));

    test('keys are per environment and invisible to other tenants', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        await repos.idempotency.putIfAbsent(scopes.env, 'shared', first, 5_000, 1_000);
        assert.equal(await repos.idempotency.get(scopes.otherEnvSameProject, 'shared', 1_000), null);
        assert.deepEqual(await repos.idempotency.putIfAbsent(scopes.otherEnvSameProject, 'shared', second, 5_000, 1_000), second);
        assert.equal(await repos.idempotency.get(scopes.otherOrgEnv, 'shared', 1_000), null);
        const intruder = foreignOrgScope(scopes.env, scopes.otherOrgEnv);
        assert.equal(await repos.idempotency.get(intruder, 'shared', 1_000), null);
        await assertRejectsWithCode(repos.idempotency.putIfAbsent(intruder, 'planted', second, 5_000, 1_000), 'NOT_FOUND');
        assert.deepEqual(await repos.idempotency.get(scopes.env, 'shared', 1_000), first);
      }));

    test('storeOnce stores the rows with the answer; a repeat before expiry stores nothing and gets the first answer', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const rows = { events: [event('signup', 'u1'), event('signup', 'u2', 0)], exposures: [exposure('checkout', 'u1')] };
        assert.deepEqual(await repos.idempotency.storeOnce(scopes.env, 'once', rows, first, 5_000, 1_000), { answer: first, stored: true });
        assert.equal(await repos.events.count(scopes.env, { metricKey: 'signup' }), 2);
        assert.equal(await repos.exposures.count(scopes.env, { flagKey: 'checkout' }), 1);
        assert.deepEqual(await repos.idempotency.get(scopes.env, 'once', 2_000), first);
        const repeat = await repos.idempotency.storeOnce(scopes.env, 'once', { events: [event('signup', 'u3')] }, second, 9_000, 2_000);
        assert.deepEqual(repeat, { answer: first, stored: false });
        assert.equal(await repos.events.count(scopes.env), 2);
        // Expired: the key is free again, and the new rows are stored.
        assert.deepEqual(await repos.idempotency.storeOnce(scopes.env, 'once', { events: [event('signup', 'u4')] }, second, 20_000, 5_000), {
          answer: second,
          stored: true,
        });
        assert.equal(await repos.events.count(scopes.env), 3);
      }));

    test('concurrent storeOnce calls with one key store the rows once and all return the winning answer', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const outcomes = await Promise.all(
          Array.from({ length: 6 }, (_, i) =>
            repos.idempotency.storeOnce(scopes.env, 'race-rows', { events: [event('buy', `u${i}`), event('buy', `v${i}`)] }, { attempt: i }, 50_000, 1_000),
          ),
        );
        assert.equal(outcomes.filter((outcome) => outcome.stored).length, 1);
        const winner = outcomes.find((outcome) => outcome.stored)?.answer;
        for (const outcome of outcomes) assert.deepEqual(outcome.answer, winner);
        assert.equal(await repos.events.count(scopes.env, { metricKey: 'buy' }), 2);
      }));

    test('storeCountsOnce claims its key in each environment a report names, in the scope named; a claim lasts until its expiry', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const named = (scope: typeof scopes.env, count: number) => ({ ...scope, flagKey: 'f', variantKey: 'on', reason: 'DEFAULT', hourMs: 0, count });
        const intruder = foreignOrgScope(scopes.env, scopes.otherOrgEnv);
        const report = { counts: [named(scopes.env, 3), named(scopes.otherEnvSameProject, 1), named(intruder, 5)], lastEvaluated: [] };
        await repos.idempotency.storeCountsOnce('report:r1', report, 5_000, 1_000);
        // Claimed where the scope is the environment's own; a count naming another org's scope claims nothing.
        assert.notEqual(await repos.idempotency.get(scopes.env, 'report:r1', 2_000), null);
        assert.notEqual(await repos.idempotency.get(scopes.otherEnvSameProject, 'report:r1', 2_000), null);
        assert.equal(await repos.idempotency.get(scopes.otherOrgEnv, 'report:r1', 2_000), null);
        // Expired at 5,000: gone for a reader then, and claimed again by the next report.
        assert.equal(await repos.idempotency.get(scopes.env, 'report:r1', 5_000), null);
        await repos.idempotency.storeCountsOnce('report:r1', { counts: [named(scopes.env, 3)], lastEvaluated: [] }, 9_000, 5_000);
        assert.notEqual(await repos.idempotency.get(scopes.env, 'report:r1', 8_000), null);
      }));

    test('storeOnce in a scope the environment is not in is NOT_FOUND and writes nothing', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const intruder = foreignOrgScope(scopes.env, scopes.otherOrgEnv);
        await assertRejectsWithCode(
          repos.idempotency.storeOnce(intruder, 'planted', { events: [event('signup', 'u1')], exposures: [exposure('f', 'u1')] }, first, 5_000, 1_000),
          'NOT_FOUND',
        );
        for (const scope of [scopes.env, intruder]) {
          assert.equal(await repos.events.count(scope), 0);
          assert.equal(await repos.exposures.count(scope), 0);
        }
        assert.equal(await repos.idempotency.get(scopes.env, 'planted', 1_000), null);
      }));
  });
}

/** Every event-side contract in one call. */
export function eventRepositoriesContract(name: string, makeRepos: MakeEventExperimentRepos): void {
  eventDefinitionRepositoryContract(name, makeRepos);
  eventRepositoryContract(name, makeRepos);
  exposureRepositoryContract(name, makeRepos);
  idempotencyRepositoryContract(name, makeRepos);
}
