import assert from 'node:assert/strict';
import { describe } from 'node:test';
import type { Flag, HashingConfig, Rule, Variant } from '../../model/definitions.ts';
import type { FlagDefinitionInput } from '../../ports/flag-ports.ts';
import {
  MALFORMED_ID,
  MISSING_ID,
  ORDERED_KEYS,
  assertRecentMs,
  contractTest,
  projectOf,
  rejectsWith,
  settleRace,
  tick,
  type ContractCheck,
  type MakeFlagSegmentRepos,
} from './flag-segment-fixture.ts';

/** The default rule of boolFlag's variants, derived by hand: unconditional, id "default", serving `on` (true). */
const DEFAULT_RULES: Rule[] = [{ id: 'default', conditions: [], variant_key: 'on' }];

const boolFlag = (key: string): FlagDefinitionInput => ({
  key,
  description: `the ${key} flag`,
  value_type: 'bool',
  variants: [
    { key: 'on', value: true },
    { key: 'off', value: false },
  ],
});

/** Documents with nesting, nulls, fractions and non-ASCII text: what must survive jsonb exactly. */
const JSON_VARIANTS: Variant[] = [
  { key: 'plain', value: { theme: 'dark', sizes: [1, 2.5, -3], nested: { deep: [null, true, 'é😀'] } } },
  { key: 'empty', value: {} },
  { key: 'null', value: null },
];
const RULES: Rule[] = [
  {
    id: 'beta-users',
    description: 'beta testers on iOS',
    conditions: [
      { context_type: 'user', attribute: 'plan', op: 'in', values: ['beta', 'internal'] },
      { attribute: 'app_version', op: 'semver_gt', values: ['2.0.0'], negate: true },
      { attribute: 'score', op: 'gte', values: [0.75] },
    ],
    segment_keys: ['ios-users'],
    variant_key: 'plain',
  },
  {
    id: 'rollout',
    conditions: [],
    allocation: {
      context_hash_specs: { user: { parameter_names: [] }, device: { parameter_names: ['model', 'region'] } },
      buckets: [
        { variant_key: 'plain', weight_milli: 333 },
        { variant_key: 'empty', weight_milli: 667 },
      ],
    },
  },
];
const HASHING: HashingConfig[] = [
  { parameter_key: 'org_id', parameter_type: 'user', order: 0 },
  { parameter_key: 'model', parameter_type: 'device', order: 1 },
];

/**
 * The FlagRepository contract: every implementation (in-memory fake, PostgreSQL) must pass it.
 * `makeRepos` is called once per test and provides fresh tenants.
 */
export function flagRepositoryContract(name: string, makeRepos: MakeFlagSegmentRepos): void {
  const check: ContractCheck = (title, body) => contractTest(makeRepos, title, body);

  describe(`FlagRepository contract: ${name}`, () => {
    check('createDefinition starts at version 1 with the environment fields at their defaults', async ({ repos, scopes }) => {
      const project = projectOf(scopes.env);
      const created = await repos.flags.createDefinition(project, boolFlag('checkout'));
      assert.deepEqual({ ...created, created_at_ms: 0, updated_at_ms: 0 }, {
        ...boolFlag('checkout'),
        enabled: false,
        off_variant_key: null,
        rules: [],
        hashing: [],
        version: 1,
        archived: false,
        // The project's client_visible_default, false unless set.
        client_visible: false,
        // The metadata's defaults (docs/contract.md "Flags and evaluation").
        tags: [],
        lifetime: 'permanent',
        maintainer: null,
        bucket_by: 'environment',
        created_at_ms: 0,
        updated_at_ms: 0,
      });
      assertRecentMs(created.created_at_ms, 'created_at_ms');
      assert.equal(created.updated_at_ms, created.created_at_ms);
      assert.deepEqual(await repos.flags.getDefinition(project, 'checkout'), created);
      // An environment that never wrote its state sees the flag disabled at state version 0, with
      // the default rule (docs/contract.md "Default rule"); the project's view has no rules.
      assert.deepEqual(await repos.flags.get(scopes.env, 'checkout'), { ...created, version: 0, rules: DEFAULT_RULES });
      assert.equal(await repos.flags.getDefinition(project, 'absent'), null);
      assert.equal(await repos.flags.get(scopes.env, 'absent'), null);
    });

    check('client_visible: set on create wins over the project default; updateDefinition changes it only when given', async ({ repos, scopes }) => {
      const project = projectOf(scopes.env);
      const shown = await repos.flags.createDefinition(project, { ...boolFlag('shown'), client_visible: true });
      assert.equal(shown.client_visible, true);
      assert.equal((await repos.flags.get(scopes.otherEnvSameProject, 'shown'))?.client_visible, true, 'project-level: every environment sees it');
      const kept = await repos.flags.updateDefinition(project, 'shown', { description: 'words' });
      assert.equal(kept.client_visible, true, 'absent from the patch: kept');
      const hidden = await repos.flags.updateDefinition(project, 'shown', { client_visible: false });
      assert.equal(hidden.client_visible, false);
      assert.equal(hidden.version, 3);
      assert.equal((await repos.flags.list(scopes.env)).find((flag) => flag.key === 'shown')?.client_visible, false);
    });

    check('tags, lifetime, maintainer and bucket_by round-trip; a patch changes only what it names (maintainer null clears)', async ({ repos, scopes }) => {
      const project = projectOf(scopes.env);
      const metadata = { tags: ['a/b', 'team:web'], lifetime: 'temporary', maintainer: 'ana@example.com', bucket_by: 'project' } as const;
      const created = await repos.flags.createDefinition(project, { ...boolFlag('meta'), ...metadata, tags: [...metadata.tags] });
      const pick = (flag: Flag | null | undefined) => (flag ? { tags: flag.tags, lifetime: flag.lifetime, maintainer: flag.maintainer, bucket_by: flag.bucket_by } : flag);
      assert.deepEqual(pick(created), metadata);
      assert.deepEqual(pick(await repos.flags.getDefinition(project, 'meta')), metadata);
      assert.deepEqual(pick((await repos.flags.listDefinitions(project)).find((flag) => flag.key === 'meta')), metadata);
      // Project-level: every environment's merged view carries them, written or not.
      assert.deepEqual(pick(await repos.flags.get(scopes.otherEnvSameProject, 'meta')), metadata);
      await repos.flags.updateState(scopes.env, 'meta', { enabled: true });
      assert.deepEqual(pick((await repos.flags.list(scopes.env)).find((flag) => flag.key === 'meta')), metadata);

      const described = await repos.flags.updateDefinition(project, 'meta', { description: 'words' });
      assert.deepEqual(pick(described), metadata, 'absent from the patch: kept');
      const retagged = await repos.flags.updateDefinition(project, 'meta', { tags: ['beta'], lifetime: 'permanent' });
      assert.deepEqual(pick(retagged), { ...metadata, tags: ['beta'], lifetime: 'permanent' });
      const cleared = await repos.flags.updateDefinition(project, 'meta', { maintainer: null, bucket_by: 'environment', tags: [] });
      assert.deepEqual(pick(cleared), { tags: [], lifetime: 'permanent', maintainer: null, bucket_by: 'environment' });
      assert.equal(cleared.version, created.version + 3);
      assert.deepEqual(pick(await repos.flags.get(scopes.env, 'meta')), pick(cleared));
    });

    check('createDefinition rejects a duplicate key in the project but not in another org', async ({ repos, scopes }) => {
      await repos.flags.createDefinition(projectOf(scopes.env), boolFlag('dup'));
      await rejectsWith(repos.flags.createDefinition(projectOf(scopes.env), boolFlag('dup')), 'ALREADY_EXISTS');
      const elsewhere = await repos.flags.createDefinition(projectOf(scopes.otherOrgEnv), boolFlag('dup'));
      assert.equal(elsewhere.version, 1);
      assert.equal((await repos.flags.listDefinitions(projectOf(scopes.env))).length, 1);
    });

    check('createDefinition in a project outside the org, or unknown, is NOT_FOUND', async ({ repos, scopes }) => {
      const foreign = { orgId: scopes.env.orgId, projectId: scopes.otherOrgEnv.projectId };
      await rejectsWith(repos.flags.createDefinition(foreign, boolFlag('x')), 'NOT_FOUND');
      await rejectsWith(repos.flags.createDefinition({ orgId: scopes.env.orgId, projectId: MISSING_ID }, boolFlag('x')), 'NOT_FOUND');
      assert.deepEqual(await repos.flags.listDefinitions(projectOf(scopes.otherOrgEnv)), []);
    });

    check('updateDefinition patches, bumps the definition version and is seen by every environment', async ({ repos, scopes }) => {
      const project = projectOf(scopes.env);
      const created = await repos.flags.createDefinition(project, boolFlag('banner'));
      // No rules: nothing serves the variants the json ones replace below (see the next test).
      await repos.flags.updateState(scopes.env, 'banner', { enabled: true, rules: [] });
      await tick();
      const updated = await repos.flags.updateDefinition(project, 'banner', { description: 'new words' });
      assert.equal(updated.version, 2);
      assert.equal(updated.description, 'new words');
      assert.deepEqual(updated.variants, created.variants, 'fields absent from the patch are kept');
      assert.equal(updated.created_at_ms, created.created_at_ms);
      assert.ok(updated.updated_at_ms > created.updated_at_ms, 'updated_at_ms moves');
      const again = await repos.flags.updateDefinition(project, 'banner', { value_type: 'json', variants: JSON_VARIANTS }, 2);
      assert.equal(again.version, 3);
      const inEnv = await repos.flags.get(scopes.env, 'banner');
      assert.equal(inEnv?.description, 'new words');
      assert.deepEqual(inEnv?.variants, JSON_VARIANTS);
      assert.equal(inEnv?.version, 1, 'get reports the environment state version, not the definition version');
      assert.equal(inEnv?.enabled, true);
      const otherEnv = await repos.flags.get(scopes.otherEnvSameProject, 'banner');
      assert.equal(otherEnv?.value_type, 'json');
      assert.equal(otherEnv?.version, 0);
    });

    check('a variant a stored state serves cannot leave the definition', async ({ repos, scopes }) => {
      const project = projectOf(scopes.env);
      await repos.flags.createDefinition(project, { key: 'tri', description: '', value_type: 'string', variants: [{ key: 'a', value: 'A' }, { key: 'b', value: 'B' }, { key: 'c', value: 'C' }] });
      // env: a rule serves b; the other environment: c is its off variant.
      await repos.flags.updateState(scopes.env, 'tri', { rules: [{ id: 'r', conditions: [], variant_key: 'b' }] });
      await repos.flags.updateState(scopes.otherEnvSameProject, 'tri', { off_variant_key: 'c', rules: [] });
      const before = await repos.flags.getDefinition(project, 'tri');
      await rejectsWith(repos.flags.updateDefinition(project, 'tri', { variants: [{ key: 'a', value: 'A' }, { key: 'c', value: 'C' }] }), 'FAILED_PRECONDITION');
      await rejectsWith(repos.flags.updateDefinition(project, 'tri', { variants: [{ key: 'a', value: 'A' }, { key: 'b', value: 'B' }] }), 'FAILED_PRECONDITION');
      assert.deepEqual(await repos.flags.getDefinition(project, 'tri'), before, 'a refused removal changes nothing');
      // Nothing serves a: it may go, and b's value may change.
      const kept = await repos.flags.updateDefinition(project, 'tri', { variants: [{ key: 'b', value: 'B2' }, { key: 'c', value: 'C' }] });
      assert.deepEqual(kept.variants.map((v) => v.key), ['b', 'c']);
      // A rollout bucket serves its variant too, weight 0 included.
      await repos.flags.updateState(scopes.env, 'tri', {
        rules: [{ id: 'split', conditions: [], allocation: { context_hash_specs: { user: { parameter_names: [] } }, buckets: [{ variant_key: 'c', weight_milli: 1000 }, { variant_key: 'b', weight_milli: 0 }] } }],
      });
      await rejectsWith(repos.flags.updateDefinition(project, 'tri', { variants: [{ key: 'c', value: 'C' }] }), 'FAILED_PRECONDITION');
    });

    check('a stale expected version is ABORTED and changes nothing; unknown keys are NOT_FOUND', async ({ repos, scopes }) => {
      const project = projectOf(scopes.env);
      await repos.flags.createDefinition(project, boolFlag('locked'));
      await repos.flags.updateDefinition(project, 'locked', { description: 'v2' }, 1);
      const before = await repos.flags.getDefinition(project, 'locked');
      await rejectsWith(repos.flags.updateDefinition(project, 'locked', { description: 'lost' }, 1), 'ABORTED');
      await rejectsWith(repos.flags.setArchived(project, 'locked', true, 1), 'ABORTED');
      await rejectsWith(repos.flags.deleteDefinition(project, 'locked', 5), 'ABORTED');
      assert.deepEqual(await repos.flags.getDefinition(project, 'locked'), before);
      await rejectsWith(repos.flags.updateDefinition(project, 'nope', { description: 'x' }), 'NOT_FOUND');
      await rejectsWith(repos.flags.updateDefinition(project, 'nope', { description: 'x' }, 1), 'NOT_FOUND');
      await rejectsWith(repos.flags.setArchived(project, 'nope', true), 'NOT_FOUND');
      await rejectsWith(repos.flags.deleteDefinition(project, 'nope'), 'NOT_FOUND');
    });

    check('setArchived is a definition change: it bumps the version', async ({ repos, scopes }) => {
      const project = projectOf(scopes.env);
      await repos.flags.createDefinition(project, boolFlag('old'));
      const archived = await repos.flags.setArchived(project, 'old', true, 1);
      assert.equal(archived.archived, true);
      assert.equal(archived.version, 2);
      assert.equal((await repos.flags.get(scopes.env, 'old'))?.archived, true);
      const restored = await repos.flags.setArchived(project, 'old', false);
      assert.equal(restored.archived, false);
      assert.equal(restored.version, 3);
    });

    check('deleteDefinition removes the definition and every environment state', async ({ repos, scopes }) => {
      const project = projectOf(scopes.env);
      await repos.flags.createDefinition(project, boolFlag('gone'));
      await repos.flags.updateState(scopes.env, 'gone', { enabled: true, rules: RULES });
      await repos.flags.updateState(scopes.otherEnvSameProject, 'gone', { enabled: true });
      await repos.flags.deleteDefinition(project, 'gone', 1);
      assert.equal(await repos.flags.getDefinition(project, 'gone'), null);
      assert.equal(await repos.flags.get(scopes.env, 'gone'), null);
      assert.deepEqual(await repos.flags.list(scopes.otherEnvSameProject), []);
      // A new flag of the same key starts from scratch in every environment.
      await repos.flags.createDefinition(project, boolFlag('gone'));
      for (const scope of [scopes.env, scopes.otherEnvSameProject]) {
        const fresh = await repos.flags.get(scope, 'gone');
        assert.equal(fresh?.version, 0);
        assert.equal(fresh?.enabled, false);
        assert.deepEqual(fresh?.rules, DEFAULT_RULES);
      }
    });

    check('updateState upserts per environment and bumps only that state version', async ({ repos, scopes }) => {
      const project = projectOf(scopes.env);
      const created = await repos.flags.createDefinition(project, boolFlag('state'));
      await tick();
      const first = await repos.flags.updateState(scopes.env, 'state', { enabled: true, off_variant_key: 'off' });
      assert.equal(first.version, 1, 'the first write creates the state at version 1');
      assert.equal(first.enabled, true);
      assert.equal(first.off_variant_key, 'off');
      assert.ok(first.updated_at_ms > created.updated_at_ms, 'updated_at_ms moves');
      const second = await repos.flags.updateState(scopes.env, 'state', { rules: RULES }, 1);
      assert.equal(second.version, 2);
      assert.equal(second.enabled, true, 'fields absent from the patch are kept');
      assert.equal(second.off_variant_key, 'off');
      const third = await repos.flags.updateState(scopes.env, 'state', { off_variant_key: null, enabled: false });
      assert.equal(third.off_variant_key, null, 'null clears the off variant');
      assert.deepEqual(third.rules, RULES);
      assert.deepEqual(await repos.flags.get(scopes.env, 'state'), third);
      // The other environment and the definition are untouched.
      const other = await repos.flags.get(scopes.otherEnvSameProject, 'state');
      assert.deepEqual({ enabled: other?.enabled, version: other?.version, rules: other?.rules }, { enabled: false, version: 0, rules: DEFAULT_RULES });
      assert.equal((await repos.flags.getDefinition(project, 'state'))?.version, 1);
    });

    check('updateState checks the expected version against the state (absent state: 0)', async ({ repos, scopes }) => {
      await repos.flags.createDefinition(projectOf(scopes.env), boolFlag('guarded'));
      await rejectsWith(repos.flags.updateState(scopes.env, 'guarded', { enabled: true }, 1), 'ABORTED');
      assert.equal((await repos.flags.get(scopes.env, 'guarded'))?.version, 0, 'no state row was created');
      assert.equal((await repos.flags.updateState(scopes.env, 'guarded', { enabled: true }, 0)).version, 1);
      await rejectsWith(repos.flags.updateState(scopes.env, 'guarded', { enabled: false, rules: RULES }, 0), 'ABORTED');
      const stored = await repos.flags.get(scopes.env, 'guarded');
      assert.deepEqual({ enabled: stored?.enabled, rules: stored?.rules, version: stored?.version }, { enabled: true, rules: DEFAULT_RULES, version: 1 });
      await rejectsWith(repos.flags.updateState(scopes.env, 'nope', { enabled: true }), 'NOT_FOUND');
    });

    check('an environment that never wrote shows the default rule of the current variants; its first write keeps it unless rules are given', async ({ repos, scopes }) => {
      const project = projectOf(scopes.env);
      // Written false-first and with no off variant: the bool flag's default still serves `yes` (true).
      await repos.flags.createDefinition(project, { key: 'fresh', description: '', value_type: 'bool', variants: [{ key: 'no', value: false }, { key: 'yes', value: true }] });
      const servesYes: Rule[] = [{ id: 'default', conditions: [], variant_key: 'yes' }];
      assert.deepEqual((await repos.flags.get(scopes.env, 'fresh'))?.rules, servesYes);
      assert.deepEqual((await repos.flags.list(scopes.otherEnvSameProject)).find((f) => f.key === 'fresh')?.rules, servesYes);
      assert.deepEqual((await repos.flags.getDefinition(project, 'fresh'))?.rules, [], 'the project view has no rules');
      // Unwritten, the view follows the variants: a string flag now, whose first variant is `b`.
      await repos.flags.updateDefinition(project, 'fresh', { value_type: 'string', variants: [{ key: 'b', value: 'B' }, { key: 'a', value: 'A' }] });
      assert.deepEqual((await repos.flags.get(scopes.env, 'fresh'))?.rules, [{ id: 'default', conditions: [], variant_key: 'b' }]);
      // A first write that leaves rules out keeps what was shown; from then on it is stored.
      const first = await repos.flags.updateState(scopes.env, 'fresh', { hashing: HASHING });
      assert.deepEqual(first.rules, [{ id: 'default', conditions: [], variant_key: 'b' }]);
      await repos.flags.updateDefinition(project, 'fresh', { variants: [{ key: 'a', value: 'A' }, { key: 'b', value: 'B' }] });
      assert.deepEqual((await repos.flags.get(scopes.env, 'fresh'))?.rules, [{ id: 'default', conditions: [], variant_key: 'b' }], 'written: no longer derived');
      assert.deepEqual((await repos.flags.get(scopes.otherEnvSameProject, 'fresh'))?.rules, [{ id: 'default', conditions: [], variant_key: 'a' }], 'still unwritten: derived');
      // An explicit empty list is a value.
      const emptied = await repos.flags.updateState(scopes.otherEnvSameProject, 'fresh', { rules: [] });
      assert.deepEqual(emptied.rules, []);
      assert.deepEqual((await repos.flags.get(scopes.otherEnvSameProject, 'fresh'))?.rules, []);
      // A first write that names an off variant stores the default rule for it: the first other variant.
      await repos.flags.createDefinition(project, { key: 'named-off', description: '', value_type: 'string', variants: [{ key: 'a', value: 'A' }, { key: 'b', value: 'B' }] });
      const named = await repos.flags.updateState(scopes.env, 'named-off', { enabled: true, off_variant_key: 'a' }, 0);
      assert.deepEqual([named.off_variant_key, named.rules], ['a', [{ id: 'default', conditions: [], variant_key: 'b' }]]);
      // A flag with no variants has nothing to serve: no default rule.
      await repos.flags.createDefinition(project, { key: 'bare', description: '', value_type: 'string', variants: [] });
      assert.deepEqual((await repos.flags.get(scopes.env, 'bare'))?.rules, []);
    });

    check('two concurrent writers holding the same version: exactly one wins', async ({ repos, scopes }) => {
      const project = projectOf(scopes.env);
      await repos.flags.createDefinition(project, boolFlag('race'));
      // The first write of a state (expected 0, no row yet) ...
      const firstWrite = await settleRace([
        repos.flags.updateState(scopes.env, 'race', { off_variant_key: 'on' }, 0),
        repos.flags.updateState(scopes.env, 'race', { off_variant_key: 'off' }, 0),
      ]);
      assert.deepEqual(firstWrite, { fulfilled: 1, codes: ['ABORTED'] });
      // ... a later one ...
      const later = await settleRace([
        repos.flags.updateState(scopes.env, 'race', { enabled: true }, 1),
        repos.flags.updateState(scopes.env, 'race', { enabled: true }, 1),
      ]);
      assert.deepEqual(later, { fulfilled: 1, codes: ['ABORTED'] });
      assert.equal((await repos.flags.get(scopes.env, 'race'))?.version, 2);
      // ... and the definition.
      const definition = await settleRace([
        repos.flags.updateDefinition(project, 'race', { description: 'a' }, 1),
        repos.flags.updateDefinition(project, 'race', { description: 'b' }, 1),
      ]);
      assert.deepEqual(definition, { fulfilled: 1, codes: ['ABORTED'] });
      assert.equal((await repos.flags.getDefinition(project, 'race'))?.version, 2);
    });

    check('variants, rules and hashing round-trip exactly', async ({ repos, scopes }) => {
      const project = projectOf(scopes.env);
      const input: FlagDefinitionInput = { key: 'doc', description: 'ünïcode ✓', value_type: 'json', variants: JSON_VARIANTS };
      assert.deepEqual((await repos.flags.createDefinition(project, input)).variants, JSON_VARIANTS);
      const written = await repos.flags.updateState(scopes.env, 'doc', { enabled: true, rules: RULES, hashing: HASHING });
      for (const flag of [written, await repos.flags.get(scopes.env, 'doc'), (await repos.flags.list(scopes.env))[0]]) {
        assert.deepEqual(flag?.variants, JSON_VARIANTS);
        assert.deepEqual(flag?.rules, RULES);
        assert.deepEqual(flag?.hashing, HASHING);
        assert.equal(flag?.description, 'ünïcode ✓');
      }
    });

    check('returned flags are copies: changing one does not change the store', async ({ repos, scopes }) => {
      await repos.flags.createDefinition(projectOf(scopes.env), boolFlag('copy'));
      const written = await repos.flags.updateState(scopes.env, 'copy', { rules: RULES });
      written.rules.length = 0;
      written.variants.push({ key: 'sneaky', value: true });
      const stored = await repos.flags.get(scopes.env, 'copy');
      assert.deepEqual(stored?.rules, RULES);
      assert.equal(stored?.variants.length, 2);
    });

    check('list and listDefinitions are ordered by key (code point order)', async ({ repos, scopes }) => {
      const project = projectOf(scopes.env);
      for (const key of [...ORDERED_KEYS].reverse()) await repos.flags.createDefinition(project, boolFlag(key));
      await repos.flags.updateState(scopes.env, 'b', { enabled: true });
      await repos.flags.updateDefinition(project, 'a', { description: 'changed' });
      const definitions = await repos.flags.listDefinitions(project);
      assert.deepEqual(definitions.map((flag) => flag.key), ORDERED_KEYS);
      assert.equal(definitions.find((flag) => flag.key === 'a')?.version, 2);
      const inEnv = await repos.flags.list(scopes.env);
      assert.deepEqual(inEnv.map((flag) => flag.key), ORDERED_KEYS);
      assert.deepEqual(inEnv.map((flag) => [flag.enabled, flag.version]), ORDERED_KEYS.map((key) => (key === 'b' ? [true, 1] : [false, 0])));
      assert.deepEqual((await repos.flags.list(scopes.otherEnvSameProject)).map((flag) => flag.enabled), ORDERED_KEYS.map(() => false));
      assert.deepEqual(await repos.flags.list(scopes.otherOrgEnv), []);
    });

    check('another org cannot see or change the flags (tenant isolation)', async ({ repos, scopes }) => {
      const project = projectOf(scopes.env);
      await repos.flags.createDefinition(project, boolFlag('mine'));
      await repos.flags.updateState(scopes.env, 'mine', { enabled: true });
      const theirs = scopes.otherOrgEnv;
      const theirProject = projectOf(theirs);
      // Their own ids, and our project id under their org id.
      for (const scope of [theirProject, { orgId: theirs.orgId, projectId: project.projectId }]) {
        assert.equal(await repos.flags.getDefinition(scope, 'mine'), null);
        assert.deepEqual(await repos.flags.listDefinitions(scope), []);
        await rejectsWith(repos.flags.updateDefinition(scope, 'mine', { description: 'x' }), 'NOT_FOUND');
        await rejectsWith(repos.flags.setArchived(scope, 'mine', true), 'NOT_FOUND');
        await rejectsWith(repos.flags.deleteDefinition(scope, 'mine'), 'NOT_FOUND');
      }
      for (const scope of [theirs, { ...theirs, projectId: project.projectId }, { ...scopes.env, orgId: theirs.orgId }]) {
        assert.equal(await repos.flags.get(scope, 'mine'), null);
        assert.deepEqual(await repos.flags.list(scope), []);
        await rejectsWith(repos.flags.updateState(scope, 'mine', { enabled: false }), 'NOT_FOUND');
      }
      const mine = await repos.flags.get(scopes.env, 'mine');
      assert.deepEqual([mine?.enabled, mine?.version, mine?.description], [true, 1, 'the mine flag']);
    });

    check('updateState needs the flag in the scope environment\'s own project', async ({ repos, scopes }) => {
      await repos.flags.createDefinition(projectOf(scopes.otherOrgEnv), boolFlag('elsewhere'));
      await rejectsWith(repos.flags.updateState(scopes.env, 'elsewhere', { enabled: true }), 'NOT_FOUND');
      await repos.flags.createDefinition(projectOf(scopes.env), boolFlag('here'));
      // An environment that is not the scope project's: nothing is written anywhere.
      const mismatched = { ...scopes.env, environmentId: scopes.otherOrgEnv.environmentId };
      await rejectsWith(repos.flags.updateState(mismatched, 'here', { enabled: true }), 'NOT_FOUND');
      assert.equal(await repos.flags.get(mismatched, 'here'), null);
      assert.equal((await repos.flags.get(scopes.env, 'here'))?.version, 0);
      assert.equal((await repos.flags.get(scopes.otherOrgEnv, 'elsewhere'))?.version, 0);
    });

    check('malformed or unknown ids are answered as not found, never as driver errors', async ({ repos, scopes }) => {
      await repos.flags.createDefinition(projectOf(scopes.env), boolFlag('real'));
      const badScopes = [
        { ...scopes.env, orgId: MALFORMED_ID },
        { ...scopes.env, projectId: MALFORMED_ID },
        { ...scopes.env, environmentId: MALFORMED_ID },
        { ...scopes.env, environmentId: MISSING_ID },
      ];
      for (const scope of badScopes) {
        assert.equal(await repos.flags.get(scope, 'real'), null);
        assert.deepEqual(await repos.flags.list(scope), []);
        await rejectsWith(repos.flags.updateState(scope, 'real', { enabled: true }), 'NOT_FOUND');
      }
      for (const project of [{ orgId: MALFORMED_ID, projectId: scopes.env.projectId }, { orgId: scopes.env.orgId, projectId: MALFORMED_ID }]) {
        assert.equal(await repos.flags.getDefinition(project, 'real'), null);
        assert.deepEqual(await repos.flags.listDefinitions(project), []);
        await rejectsWith(repos.flags.createDefinition(project, boolFlag('new')), 'NOT_FOUND');
        await rejectsWith(repos.flags.updateDefinition(project, 'real', { description: 'x' }, 1), 'NOT_FOUND');
        await rejectsWith(repos.flags.setArchived(project, 'real', true), 'NOT_FOUND');
        await rejectsWith(repos.flags.deleteDefinition(project, 'real'), 'NOT_FOUND');
      }
    });

    check('prerequisites: stored per environment, checked against the environment graph, and they hold their flags', async ({ repos, scopes }) => {
      const project = projectOf(scopes.env);
      for (const key of ['base', 'mid', 'top', 'spare']) await repos.flags.createDefinition(project, boolFlag(key));
      const on = (flag_key: string) => ({ flag_key, variant_keys: [boolFlag(flag_key).variants[0]!.key] });
      const mid = await repos.flags.updateState(scopes.env, 'mid', { prerequisites: [on('base')] });
      assert.deepEqual(mid.prerequisites, [on('base')]);
      assert.deepEqual((await repos.flags.get(scopes.env, 'mid'))?.prerequisites, [on('base')]);
      assert.deepEqual((await repos.flags.list(scopes.env)).find((f) => f.key === 'mid')?.prerequisites, [on('base')]);
      // Absent when none (the API shows []).
      assert.equal((await repos.flags.get(scopes.otherEnvSameProject, 'mid'))?.prerequisites, undefined);
      assert.equal((await repos.flags.getDefinition(project, 'mid'))?.prerequisites, undefined);
      // A write leaving them out keeps them.
      assert.deepEqual((await repos.flags.updateState(scopes.env, 'mid', { enabled: true })).prerequisites, [on('base')]);
      // Diamond allowed; a cycle, a missing flag and a missing variant refused.
      await repos.flags.updateState(scopes.env, 'top', { prerequisites: [on('mid'), on('base')] });
      await rejectsWith(repos.flags.updateState(scopes.env, 'base', { prerequisites: [on('top')] }), 'INVALID_ARGUMENT');
      await rejectsWith(repos.flags.updateState(scopes.env, 'spare', { prerequisites: [on('absent')] }), 'INVALID_ARGUMENT');
      await rejectsWith(repos.flags.updateState(scopes.env, 'spare', { prerequisites: [{ flag_key: 'base', variant_keys: ['nope'] }] }), 'INVALID_ARGUMENT');
      // Another environment has its own graph.
      await repos.flags.updateState(scopes.otherEnvSameProject, 'base', { prerequisites: [on('top')] });
      // Named flags: no delete, no archive, no removal of a listed variant.
      await rejectsWith(repos.flags.deleteDefinition(project, 'base'), 'FAILED_PRECONDITION');
      await rejectsWith(repos.flags.setArchived(project, 'mid', true), 'FAILED_PRECONDITION');
      // A variant a prerequisite lists (of a flag no environment ever wrote: no rule serves it).
      const abc = [{ key: 'a', value: 'A' }, { key: 'b', value: 'B' }, { key: 'c', value: 'C' }];
      await repos.flags.createDefinition(project, { key: 'three', description: '', value_type: 'string', variants: abc });
      await repos.flags.updateState(scopes.otherEnvSameProject, 'spare', { prerequisites: [{ flag_key: 'three', variant_keys: ['c'] }] });
      await rejectsWith(repos.flags.updateDefinition(project, 'three', { variants: abc.slice(0, 2) }), 'FAILED_PRECONDITION');
      assert.equal((await repos.flags.updateDefinition(project, 'three', { variants: [abc[0]!, abc[2]!] })).variants.length, 2);
      assert.equal((await repos.flags.getDefinition(project, 'mid'))?.archived, false);
      // Unarchiving is never refused; once nothing names it, a flag may go.
      await repos.flags.setArchived(project, 'spare', true);
      await rejectsWith(repos.flags.updateState(scopes.env, 'mid', { prerequisites: [on('spare')] }), 'INVALID_ARGUMENT');
      await repos.flags.setArchived(project, 'spare', false);
      await repos.flags.updateState(scopes.env, 'top', { prerequisites: [] });
      await repos.flags.setArchived(project, 'mid', true);
    });
  });
}
