import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import {
  MAX_MATCHES_PROGRAM_SIZE,
  checkConditions,
  checkHashing,
  checkKey,
  checkOffVariant,
  checkRules,
  checkValueType,
  checkVariants,
  evaluate,
  matchesProgramSize,
  type Condition,
  type EvaluationContext,
  type EvaluationEnvironment,
  type Flag,
  type Rule,
  type Segment,
} from '@switchyard/core';
import {
  convertLaunchDarkly,
  rolloutWeightsMilli,
  valueTypeFor,
  variantKeysFor,
  type ImportReportEntry,
  type ImportedFlag,
  type ImportedSegment,
  type LaunchDarklyImport,
} from '../src/index.ts';

/**
 * The LaunchDarkly importer on hand-written exports (test/fixtures/launchdarkly/, written from
 * LaunchDarkly's REST API schema for `GET /api/v2/flags/{project}?summary=0` and
 * `GET /api/v2/segments/{project}/{env}`). Every expected document, weight and served variant
 * below is derived by hand from LaunchDarkly's documented semantics (docs/launchdarkly-import.md),
 * not from the converter.
 */

const fixture = (name: string): unknown => JSON.parse(readFileSync(new URL(`./fixtures/launchdarkly/${name}`, import.meta.url), 'utf8'));

const converted: LaunchDarklyImport = convertLaunchDarkly(
  {
    flags: fixture('flags.json') as never,
    segments: { production: fixture('segments-production.json') as never, staging: fixture('segments-staging.json') as never },
  },
  { environments: { production: 'prod', staging: 'stage' } },
);

function flagOf(key: string): ImportedFlag {
  const flag = converted.flags.find((f) => f.definition.key === key);
  assert.ok(flag, `flag ${key} imported`);
  return flag;
}

function entries(filter: Partial<ImportReportEntry>, message?: RegExp): ImportReportEntry[] {
  return converted.report.filter(
    (e) =>
      (filter.severity === undefined || e.severity === filter.severity) &&
      (filter.flag_key === undefined || e.flag_key === filter.flag_key) &&
      (filter.segment_key === undefined || e.segment_key === filter.segment_key) &&
      (filter.environment === undefined || e.environment === filter.environment) &&
      (message === undefined || message.test(e.message)),
  );
}

function assertReported(filter: Partial<ImportReportEntry>, message: RegExp): void {
  assert.ok(entries(filter, message).length >= 1, `expected a report entry ${JSON.stringify(filter)} ${message}; report:\n${JSON.stringify(converted.report, null, 1)}`);
}

/** A Switchyard flag document as one environment sees it, from the imported definition and environment. */
function toFlag(imported: ImportedFlag, environment: string): Flag {
  const env = imported.environments[environment];
  assert.ok(env, `${imported.definition.key} has environment ${environment}`);
  const flag: Flag = {
    key: imported.definition.key,
    description: imported.definition.description,
    value_type: imported.definition.value_type,
    variants: imported.definition.variants,
    enabled: env.enabled,
    off_variant_key: env.off_variant_key,
    rules: env.rules,
    hashing: env.hashing,
    version: 1,
    archived: false,
    client_visible: imported.definition.client_visible,
    created_at_ms: 0,
    updated_at_ms: 0,
  };
  if (env.prerequisites.length > 0) flag.prerequisites = env.prerequisites;
  return flag;
}

function toSegment(doc: ImportedSegment): Segment {
  return {
    id: `id-${doc.key}`,
    key: doc.key,
    context_type: doc.context_type,
    kind: doc.kind,
    description: doc.description,
    conditions: doc.conditions ?? [],
    included_count: doc.included_keys?.length ?? 0,
    excluded_count: doc.excluded_keys?.length ?? 0,
    version: 1,
    created_at_ms: 0,
    updated_at_ms: 0,
  };
}

/** The evaluation environment of one imported environment: its flags (for prerequisites) and segments (list members: excluded wins). */
function environmentOf(environment: string): EvaluationEnvironment {
  const docs = converted.segments[environment] ?? [];
  const byKey = new Map(docs.map((d) => [d.key, d]));
  return {
    projectId: 'p1',
    environmentId: environment,
    segments: new Map(docs.map((d) => [d.key, toSegment(d)])),
    flags: new Map(converted.flags.filter((f) => f.environments[environment]).map((f) => [f.definition.key, toFlag(f, environment)])),
    isListMember: (segmentKey, contextKey) => {
      const doc = byKey.get(segmentKey);
      return doc !== undefined && (doc.included_keys ?? []).includes(contextKey) && !(doc.excluded_keys ?? []).includes(contextKey);
    },
  };
}

const user = (key: string, parameters: Record<string, string | number | boolean> = {}): EvaluationContext => ({ context_type: 'user', key, parameters });
const ctx = (context_type: string, key: string, parameters: Record<string, string | number | boolean> = {}): EvaluationContext => ({ context_type, key, parameters });

function served(flagKey: string, environment: string, input: EvaluationContext | EvaluationContext[]) {
  const env = environmentOf(environment);
  return evaluate(env.flags!.get(flagKey)!, input, env);
}

describe('LaunchDarkly import: flag definitions', () => {
  test('boolean flag: variant keys from names, tags, temporary, maintainer e-mail, client availability', () => {
    assert.deepEqual(flagOf('new-checkout').definition, {
      key: 'new-checkout',
      description: 'Rolls out the one-page checkout',
      value_type: 'bool',
      variants: [
        { key: 'On', value: true },
        { key: 'Off', value: false },
      ],
      tags: ['checkout', 'q3-launch'],
      lifetime: 'temporary',
      maintainer: 'ana@example.com',
      client_visible: true,
    });
  });

  test('variations without names take their values as keys; value types from the values', () => {
    const checkoutApi = flagOf('checkout-api').definition;
    assert.equal(checkoutApi.value_type, 'bool');
    assert.deepEqual(checkoutApi.variants, [
      { key: 'true', value: true },
      { key: 'false', value: false },
    ]);
    assert.equal(checkoutApi.lifetime, 'permanent');
    assert.equal(checkoutApi.maintainer, null);
    assert.equal(checkoutApi.client_visible, false);
    const maxItems = flagOf('max-items').definition;
    assert.equal(maxItems.value_type, 'int');
    assert.deepEqual(maxItems.variants.map((v) => v.key), ['10', '20', '50']);
    assert.deepEqual(maxItems.tags, ['cart']);
    assert.equal(flagOf('price-multiplier').definition.value_type, 'double');
    assert.deepEqual(flagOf('price-multiplier').definition.variants, [
      { key: 'half', value: 0.5 },
      { key: '1.5', value: 1.5 },
    ]);
    // "Dark theme" → "Dark-theme"; the second "Light theme" is taken, so "-2".
    assert.deepEqual(flagOf('ui-config').definition, {
      key: 'ui-config',
      description: 'UI config',
      value_type: 'json',
      variants: [
        { key: 'Dark-theme', value: { theme: 'dark' } },
        { key: 'Light-theme', value: { theme: 'light' } },
        { key: 'Light-theme-2', value: { theme: 'light', dense: true } },
      ],
      tags: [],
      lifetime: 'permanent',
      maintainer: null,
      client_visible: false,
    });
    assertReported({ severity: 'info', flag_key: 'ui-config' }, /variation 2 \("Light theme"\) is variant "Light-theme-2"/);
  });

  test('an archived flag is not imported, with a report entry', () => {
    assert.equal(converted.flags.some((f) => f.definition.key === 'legacy-banner'), false);
    assertReported({ severity: 'dropped', flag_key: 'legacy-banner' }, /archived/);
    assert.deepEqual(converted.flags.map((f) => f.definition.key), ['checkout-api', 'new-checkout', 'operator-matrix', 'max-items', 'ui-config', 'price-multiplier']);
  });

  test('variantKeysFor: sanitised, unique, value or index when there is no name', () => {
    assert.deepEqual(
      variantKeysFor([
        { value: 'a', name: 'Group A (control)' },
        { value: -1 },
        { value: 'x y' },
        { value: { nested: true } },
        { value: 'b', name: '  ' },
        { value: 'c', name: 'Group A (control)' },
      ]),
      ['Group-A-control', 'minus-1', 'x-y', 'variation-3', 'b', 'Group-A-control-2'],
    );
  });

  test('valueTypeFor: bool, string, int, double, json', () => {
    assert.equal(valueTypeFor('boolean', [true, false]), 'bool');
    assert.equal(valueTypeFor('multivariate', ['a', 'b']), 'string');
    assert.equal(valueTypeFor('multivariate', [1, 2, 3]), 'int');
    assert.equal(valueTypeFor('multivariate', [1, 2.5]), 'double');
    assert.equal(valueTypeFor('multivariate', ['a', 1]), 'json');
    assert.equal(valueTypeFor('multivariate', [{ a: 1 }, [1]]), 'json');
  });
});

describe('LaunchDarkly import: environments', () => {
  test('mapped environments only; on/off and off variation per environment', () => {
    assert.deepEqual(Object.keys(flagOf('checkout-api').environments), ['prod', 'stage']);
    assertReported({ severity: 'info', environment: 'test' }, /"test" is not mapped/);
    assert.equal(flagOf('checkout-api').environments.prod!.enabled, true);
    assert.equal(flagOf('checkout-api').environments.stage!.enabled, false);
    assert.equal(flagOf('checkout-api').environments.stage!.off_variant_key, 'false');
    assert.deepEqual(flagOf('checkout-api').environments.stage!.rules, [{ id: 'default', conditions: [], variant_key: 'true' }]);
    assert.deepEqual(flagOf('max-items').environments.stage!.rules, [{ id: 'default', conditions: [], variant_key: '20' }]);
    assert.equal(flagOf('max-items').environments.stage!.off_variant_key, '10');
  });

  test('offVariation null: no off variant, reported', () => {
    assert.equal(flagOf('ui-config').environments.prod!.off_variant_key, null);
    assertReported({ severity: 'info', flag_key: 'ui-config', environment: 'prod' }, /no off variation/);
    assertReported({ severity: 'info', flag_key: 'ui-config', environment: 'stage' }, /no off variation/);
  });

  test('prerequisites name the variant of the prerequisite flag; a missing prerequisite switches the flag off there', () => {
    assert.deepEqual(flagOf('new-checkout').environments.prod!.prerequisites, [{ flag_key: 'checkout-api', variant_keys: ['true'] }]);
    // staging: on in LaunchDarkly, but its prerequisite legacy-payments is not in the export.
    assert.equal(flagOf('new-checkout').environments.stage!.enabled, false);
    assert.deepEqual(flagOf('new-checkout').environments.stage!.prerequisites, []);
    assertReported({ severity: 'dropped', flag_key: 'new-checkout', environment: 'stage' }, /prerequisite "legacy-payments".*not imported.*switched off/);
  });
});

describe('LaunchDarkly import: targets, rules and rollouts', () => {
  test('targets come first, in contextTargets order (user entries take their values from targets), then rules, then the fallthrough', () => {
    assert.deepEqual(flagOf('new-checkout').environments.prod!.rules, [
      {
        id: 'targets-user-On',
        description: 'individual user targets (LaunchDarkly)',
        conditions: [{ context_type: 'user', attribute: 'key', op: 'in', values: ['alice', 'bob'] }],
        variant_key: 'On',
      },
      {
        id: 'targets-organization-On',
        description: 'individual organization targets (LaunchDarkly)',
        conditions: [{ context_type: 'organization', attribute: 'key', op: 'in', values: ['acme'] }],
        variant_key: 'On',
      },
      {
        id: 'targets-user-Off',
        description: 'individual user targets (LaunchDarkly)',
        conditions: [{ context_type: 'user', attribute: 'key', op: 'in', values: ['mallory'] }],
        variant_key: 'Off',
      },
      {
        id: '8f9d3c1e-0a4b-4c55-9e0e-1b2c3d4e5f60',
        description: 'Staff',
        conditions: [{ context_type: 'user', attribute: 'email', op: 'ends_with', values: ['@example.com'] }],
        variant_key: 'On',
      },
      { id: '2b7e1516-28ae-4d2a-a6ab-f7158809cf4f', conditions: [], segment_keys: ['beta-testers'], variant_key: 'On' },
      {
        id: 'default',
        conditions: [],
        // 33.333% / 66.667%: 333.33 and 666.67 tenths; the one tenth left goes to the larger remainder (.67).
        allocation: { context_hash_specs: { user: { parameter_names: [] } }, buckets: [{ variant_key: 'On', weight_milli: 333 }, { variant_key: 'Off', weight_milli: 667 }] },
      },
    ]);
    assertReported({ severity: 'changed', flag_key: 'new-checkout', environment: 'prod' }, /rounded to 0\.1%: On 33\.333% → 33\.3%, Off 66\.667% → 66\.7%/);
    assertReported({ severity: 'changed', flag_key: 'new-checkout', environment: 'prod' }, /re-bucketed/);
  });

  test('rollouts: bucketBy becomes the hash parameter; rule rollouts; exact weights are not reported as rounded', () => {
    assert.deepEqual(flagOf('max-items').environments.prod!.rules, [
      {
        id: 'tiered',
        conditions: [{ context_type: 'user', attribute: 'tier', op: 'in', values: [1, 2] }],
        allocation: { context_hash_specs: { user: { parameter_names: [] } }, buckets: [{ variant_key: '20', weight_milli: 600 }, { variant_key: '50', weight_milli: 400 }] },
      },
      {
        id: 'default',
        conditions: [],
        // 33.334 / 33.333 / 33.333 %: floors 333+333+333 = 999; the tenth left goes to .34, the first.
        allocation: {
          context_hash_specs: { user: { parameter_names: ['company'] } },
          buckets: [{ variant_key: '10', weight_milli: 334 }, { variant_key: '20', weight_milli: 333 }, { variant_key: '50', weight_milli: 333 }],
        },
      },
    ]);
    assert.equal(entries({ flag_key: 'max-items' }, /rule 1: rollout weights rounded/).length, 0);
    assertReported({ severity: 'changed', flag_key: 'max-items', environment: 'prod' }, /fallthrough\): rollout weights rounded to 0\.1%: 10 33\.334% → 33\.4%/);
    assertReported({ severity: 'changed', flag_key: 'max-items', environment: 'prod' }, /"company" of the user context.*without "company"/);
    // "in" with numbers: Switchyard's equality is broader on mixed types; said so.
    assertReported({ severity: 'changed', flag_key: 'max-items', environment: 'prod' }, /"in" on tier: Switchyard also equals a number to a numeric string/);
  });

  test('rolloutWeightsMilli: tenths of a percent summing to 1000', () => {
    assert.deepEqual(rolloutWeightsMilli([33333, 66667]), [333, 667]);
    assert.deepEqual(rolloutWeightsMilli([50000, 50000]), [500, 500]);
    // 0.05% and 99.95%: 0.5 and 999.5 tenths, floors 0 + 999; the tie goes to the earlier entry.
    assert.deepEqual(rolloutWeightsMilli([50, 99950]), [1, 999]);
    // 99.999% and 0.001%: 999.99 and 0.01 tenths: the weight below 0.1% rounds to 0.
    assert.deepEqual(rolloutWeightsMilli([99999, 1]), [1000, 0]);
    // Weights short of 100%: LaunchDarkly serves the rest the last variation.
    assert.deepEqual(rolloutWeightsMilli([25000, 25000, 25000]), [250, 250, 500]);
    // Over 100%: the cumulative walk never passes 100%, so the last loses what is over.
    assert.deepEqual(rolloutWeightsMilli([60000, 60000]), [600, 400]);
  });

  test('every clause operator: the condition each maps to (operator-matrix, production)', () => {
    const rules = flagOf('operator-matrix').environments.prod!.rules;
    const u = (attribute: string, op: Condition['op'], values: Condition['values'], negate?: boolean): Condition => ({ context_type: 'user', attribute, op, values, ...(negate ? { negate } : {}) });
    const expected: Rule[] = [
      { id: 'op-in', conditions: [u('plan', 'in', ['gold', 'platinum'])], variant_key: 'true' },
      { id: 'op-ends-with', conditions: [u('email', 'ends_with', ['@corp.example'])], variant_key: 'true' },
      { id: 'op-starts-with', conditions: [u('name', 'starts_with', ['Dr. '])], variant_key: 'true' },
      { id: 'op-matches', conditions: [u('phone', 'matches', ['^\\+49[0-9]+$'])], variant_key: 'true' },
      { id: 'op-contains', conditions: [u('userAgent', 'contains', ['Mobile'])], variant_key: 'true' },
      { id: 'op-lt', conditions: [u('age', 'lt', [18])], variant_key: 'true' },
      // "10" (a string) never matches LaunchDarkly's numeric lessThanOrEqual: removed.
      { id: 'op-lte', conditions: [u('seats', 'lte', [5])], variant_key: 'true' },
      { id: 'op-gt', conditions: [u('score', 'gt', [90])], variant_key: 'true' },
      { id: 'op-gte', conditions: [u('logins', 'gte', [100])], variant_key: 'true' },
      // "2020-01-01" is not RFC 3339 (no time): LaunchDarkly never matches it; removed.
      { id: 'op-before', conditions: [u('signupDate', 'before', ['2020-01-01T00:00:00Z'])], variant_key: 'true' },
      { id: 'op-after', conditions: [u('lastSeen', 'after', [1735689600000])], variant_key: 'true' },
      // LaunchDarkly reads "2.1" as 2.1.0 and "3" as 3.0.0.
      { id: 'op-semver-eq', conditions: [u('appVersion', 'semver_eq', ['2.1.0'])], variant_key: 'true' },
      { id: 'op-semver-lt', conditions: [u('appVersion', 'semver_lt', ['1.0.0'])], variant_key: 'true' },
      { id: 'op-semver-gt', conditions: [u('appVersion', 'semver_gt', ['3.0.0'])], variant_key: 'true' },
      // segmentMatch [beta-testers, mixed-accounts] is OR; mixed-accounts became three segments: four rules.
      { id: 'op-segment-1', conditions: [], segment_keys: ['beta-testers'], variant_key: 'true' },
      { id: 'op-segment-2', conditions: [], segment_keys: ['mixed-accounts'], variant_key: 'true' },
      { id: 'op-segment-3', conditions: [], segment_keys: ['mixed-accounts--organization'], variant_key: 'true' },
      { id: 'op-segment-4', conditions: [], segment_keys: ['mixed-accounts--rule-1'], variant_key: 'true' },
      { id: 'op-negate', conditions: [u('country', 'in', ['US', 'CA'], true)], variant_key: 'true' },
      // kind in [device]: "the input has a device context".
      { id: 'op-kind', conditions: [{ context_type: 'device', attribute: 'key', op: 'exists', values: [] }], variant_key: 'true' },
      { id: 'op-key', conditions: [{ context_type: 'organization', attribute: 'key', op: 'in', values: ['k-1'] }], variant_key: 'true' },
      { id: 'default', conditions: [], variant_key: 'false' },
    ];
    assert.deepEqual(rules, expected);
    assertReported({ severity: 'changed', flag_key: 'operator-matrix' }, /rule 15 became 4 rules/);
    assertReported({ severity: 'changed', flag_key: 'operator-matrix' }, /rule 7: 1 value\(s\) of the "lessThanOrEqual" clause on seats/);
    assertReported({ severity: 'changed', flag_key: 'operator-matrix' }, /rule 10: 1 value\(s\) of the "before" clause/);
    // "2025-02-30T00:00:00Z" is no date: LaunchDarkly never matches it; removed.
    assertReported({ severity: 'changed', flag_key: 'operator-matrix' }, /rule 11: 1 value\(s\) of the "after" clause/);
    assertReported({ severity: 'changed', flag_key: 'operator-matrix' }, /rule 12: "semVerEqual".*"2\.1"/);
  });

  test('what cannot be carried drops the whole rule, never a broader rule', () => {
    const filter = { severity: 'dropped' as const, flag_key: 'operator-matrix', environment: 'prod' };
    assertReported(filter, /rule 19 was dropped: .*nested attribute "\/address\/city"/);
    assertReported(filter, /rule 20 was dropped: .*"matches" clause with patterns RE2 does not accept/);
    assertReported(filter, /rule 21 was dropped: .*negated segmentMatch/);
    assertReported(filter, /rule 22 was dropped: .*unknown clause operator "fuzzyMatch"/);
    assertReported(filter, /rule 23 was dropped: .*big-spenders \(a big segment, not imported\)/);
    const ids = flagOf('operator-matrix').environments.prod!.rules.map((r) => r.id);
    for (const id of ['drop-nested', 'drop-lookahead', 'drop-negated-segment', 'drop-unknown-op', 'drop-big-segment']) assert.equal(ids.includes(id), false, id);
  });

  test('a kind clause listing two kinds becomes one rule per kind', () => {
    assert.deepEqual(flagOf('price-multiplier').environments.prod!.rules, [
      { id: 'org-or-device-1', conditions: [{ context_type: 'organization', attribute: 'key', op: 'exists', values: [] }], variant_key: 'half' },
      { id: 'org-or-device-2', conditions: [{ context_type: 'device', attribute: 'key', op: 'exists', values: [] }], variant_key: 'half' },
      { id: 'default', conditions: [], variant_key: '1.5' },
    ]);
  });
});

describe('LaunchDarkly import: segments', () => {
  test('production: list, rule, list+rules split in parts, big segment dropped', () => {
    assert.deepEqual(converted.segments.prod, [
      // dave is included and excluded: LaunchDarkly's included wins, so he leaves the excluded keys.
      { key: 'beta-testers', context_type: 'user', kind: 'list', description: 'Beta testers', included_keys: ['carol', 'dave'], excluded_keys: ['erin'] },
      {
        key: 'enterprise',
        context_type: 'user',
        kind: 'rule',
        description: 'Customers on the enterprise plan',
        conditions: [{ context_type: 'user', attribute: 'plan', op: 'in', values: ['enterprise'] }],
      },
      { key: 'mixed-accounts', context_type: 'user', kind: 'list', description: 'Mixed accounts', included_keys: ['frank'], excluded_keys: ['grace'] },
      { key: 'mixed-accounts--organization', context_type: 'organization', kind: 'list', description: 'Mixed accounts', included_keys: ['acme-corp'], excluded_keys: [] },
      {
        key: 'mixed-accounts--rule-1',
        context_type: 'user',
        kind: 'rule',
        description: 'Mixed accounts',
        // Excluded keys keep contexts out of the rules.
        conditions: [
          { context_type: 'user', attribute: 'email', op: 'ends_with', values: ['@partner.example'] },
          { context_type: 'user', attribute: 'key', op: 'in', values: ['grace'], negate: true },
        ],
      },
    ]);
    assertReported({ severity: 'info', segment_key: 'beta-testers', environment: 'prod' }, /both included and excluded/);
    assertReported({ severity: 'info', segment_key: 'beta-testers', environment: 'prod' }, /tags \(beta\)/);
    assertReported({ severity: 'dropped', segment_key: 'mixed-accounts', environment: 'prod' }, /segment rule 2 was dropped: it includes 25% of the matching contexts/);
    assertReported({ severity: 'changed', segment_key: 'mixed-accounts', environment: 'prod' }, /became 3 Switchyard segments \(mixed-accounts, mixed-accounts--organization, mixed-accounts--rule-1\)/);
    assertReported({ severity: 'dropped', segment_key: 'big-spenders', environment: 'prod' }, /big \(unbounded\) segment/);
  });

  test('staging has its own members', () => {
    assert.deepEqual(converted.segments.stage, [
      { key: 'beta-testers', context_type: 'user', kind: 'list', description: 'Beta testers', included_keys: ['carol'], excluded_keys: [] },
      {
        key: 'enterprise',
        context_type: 'user',
        kind: 'rule',
        description: 'Customers on the enterprise plan',
        conditions: [{ context_type: 'user', attribute: 'plan', op: 'in', values: ['enterprise'] }],
      },
    ]);
  });
});

describe('LaunchDarkly import: the documents are valid Switchyard documents', () => {
  test("every flag passes the flag validation, and every segment the segment checks", () => {
    for (const flag of converted.flags) {
      const { definition } = flag;
      checkKey(definition.key, 'key');
      const valueType = checkValueType(definition.value_type);
      const variants = checkVariants(valueType, definition.variants);
      const keys = new Set(variants.map((v) => v.key));
      for (const [name, env] of Object.entries(flag.environments)) {
        const at = `${definition.key}@${name}`;
        assert.doesNotThrow(() => checkRules(keys, env.rules), at);
        assert.doesNotThrow(() => checkOffVariant(keys, env.off_variant_key), at);
        assert.doesNotThrow(() => checkHashing(env.hashing), at);
        for (const p of env.prerequisites) {
          const target = converted.flags.find((f) => f.definition.key === p.flag_key);
          assert.ok(target?.environments[name], `${at}: prerequisite ${p.flag_key} imported in ${name}`);
          for (const v of p.variant_keys) assert.ok(target.definition.variants.some((x) => x.key === v), `${at}: ${p.flag_key} has ${v}`);
        }
        for (const rule of env.rules) {
          for (const s of rule.segment_keys ?? []) assert.ok(converted.segments[name]?.some((d) => d.key === s), `${at}: segment ${s} imported`);
        }
      }
    }
    for (const [name, docs] of Object.entries(converted.segments)) {
      for (const doc of docs) {
        checkKey(doc.key, `${name}.${doc.key}`);
        assert.doesNotThrow(() => checkConditions(doc.conditions ?? [], `${name}.${doc.key}.conditions`));
      }
    }
  });
});

describe("LaunchDarkly import: evaluation serves what LaunchDarkly serves", () => {
  test('new-checkout (production): targets, prerequisites, rules, segments', () => {
    // alice: checkout-api is on and (no target, fallthrough variation 0) serves true = its prerequisite variation
    // → alice is individually targeted to On (variation 0).
    assert.equal(served('new-checkout', 'prod', user('alice')).variant_key, 'On');
    // mallory: not in the user On targets, no organization context, in the user Off targets → Off.
    assert.equal(served('new-checkout', 'prod', user('mallory')).variant_key, 'Off');
    // zed with organization acme: the organization target (second contextTargets entry) → On.
    assert.equal(served('new-checkout', 'prod', [user('zed'), ctx('organization', 'acme')]).variant_key, 'On');
    // blocked-user: checkout-api targets blocked-user to false (variation 1), not the required variation 0
    // → prerequisite fails → offVariation 1 (Off).
    const blocked = served('new-checkout', 'prod', user('blocked-user'));
    assert.equal(blocked.variant_key, 'Off');
    assert.equal(blocked.reason, 'PREREQUISITE_FAILED');
    // x@example.com: rule 1 (email endsWith @example.com) → On.
    assert.equal(served('new-checkout', 'prod', user('x', { email: 'x@example.com' })).rule_id, '8f9d3c1e-0a4b-4c55-9e0e-1b2c3d4e5f60');
    // carol is in beta-testers; dave is included and excluded (LaunchDarkly: included wins) → rule 2 → On.
    assert.equal(served('new-checkout', 'prod', user('carol')).rule_id, '2b7e1516-28ae-4d2a-a6ab-f7158809cf4f');
    assert.equal(served('new-checkout', 'prod', user('dave')).rule_id, '2b7e1516-28ae-4d2a-a6ab-f7158809cf4f');
    // staging: imported off (its prerequisite was not in the export) → the off variation.
    assert.equal(served('new-checkout', 'stage', user('alice')).variant_key, 'Off');
  });

  test('operator-matrix (production): the rule LaunchDarkly matches first', () => {
    const cases: [string, EvaluationContext | EvaluationContext[], string][] = [
      ['plan in [gold, platinum]', user('u', { plan: 'gold' }), 'op-in'],
      ['email endsWith @corp.example', user('u', { email: 'a@corp.example' }), 'op-ends-with'],
      ['name startsWith "Dr. "', user('u', { name: 'Dr. Who' }), 'op-starts-with'],
      ['phone matches ^\\+49[0-9]+$ (a search)', user('u', { phone: '+4915112345' }), 'op-matches'],
      ['userAgent contains Mobile', user('u', { userAgent: 'Mozilla/5.0 Mobile Safari' }), 'op-contains'],
      ['17 < 18', user('u', { age: 17 }), 'op-lt'],
      ['5 <= 5', user('u', { seats: 5 }), 'op-lte'],
      ['95 > 90', user('u', { score: 95 }), 'op-gt'],
      ['100 >= 100', user('u', { logins: 100 }), 'op-gte'],
      ['2019-06-01T00:00:00Z before 2020-01-01T00:00:00Z', user('u', { signupDate: '2019-06-01T00:00:00Z' }), 'op-before'],
      ['1546300800000 ms (2019-01-01) before 2020', user('u', { signupDate: 1546300800000 }), 'op-before'],
      ['2025-06-01T12:00:00Z after 1735689600000 ms (2025-01-01)', user('u', { lastSeen: '2025-06-01T12:00:00Z' }), 'op-after'],
      ['2.1.0 semVerEqual 2.1', user('u', { appVersion: '2.1.0' }), 'op-semver-eq'],
      ['0.9.1 semVerLessThan 1.0.0', user('u', { appVersion: '0.9.1' }), 'op-semver-lt'],
      ['3.0.1 semVerGreaterThan 3', user('u', { appVersion: '3.0.1' }), 'op-semver-gt'],
      ['carol in beta-testers', user('carol'), 'op-segment-1'],
      ['frank included in mixed-accounts', user('frank'), 'op-segment-2'],
      ['organization acme-corp included in mixed-accounts', ctx('organization', 'acme-corp'), 'op-segment-3'],
      ['hank matches mixed-accounts rule 1', user('hank', { email: 'hank@partner.example' }), 'op-segment-4'],
      ['country FR not in [US, CA]', user('u', { country: 'FR' }), 'op-negate'],
      ['a device context (kind in [device])', [user('u'), ctx('device', 'd1')], 'op-kind'],
      ['organization key k-1', ctx('organization', 'k-1'), 'op-key'],
    ];
    for (const [why, input, ruleId] of cases) {
      const result = served('operator-matrix', 'prod', input);
      assert.equal(result.rule_id, ruleId, why);
      assert.equal(result.variant_key, 'true', why);
    }
    const fallthrough: [string, EvaluationContext | EvaluationContext[]][] = [
      // seats 10: 10 <= 5 fails; "10" (a string clause value) never matches in LaunchDarkly.
      ['seats 10', user('u', { seats: 10 })],
      // grace matches mixed-accounts rule 1 but is excluded; not included → not in the segment.
      ['grace excluded from mixed-accounts', user('grace', { email: 'grace@partner.example' })],
      // country US: in [US, CA], negated → false.
      ['country US', user('u', { country: 'US' })],
      // a missing attribute is false, negated or not (country absent).
      ['no attributes', user('u')],
      // erin is excluded from beta-testers (and not included): no segment.
      ['erin', user('erin')],
    ];
    for (const [why, input] of fallthrough) {
      const result = served('operator-matrix', 'prod', input);
      assert.equal(result.rule_id, 'default', why);
      assert.equal(result.variant_key, 'false', why);
    }
    // staging: off → offVariation 1.
    assert.equal(served('operator-matrix', 'stage', user('u', { plan: 'gold' })).variant_key, 'false');
  });

  test('kind clauses, off flags and missing off variations', () => {
    // price-multiplier: kind in [organization, device] → variation 0 (half); a user alone → fallthrough 1 (1.5).
    assert.equal(served('price-multiplier', 'prod', ctx('organization', 'o1')).variant_key, 'half');
    assert.equal(served('price-multiplier', 'prod', [user('u'), ctx('device', 'd')]).variant_key, 'half');
    assert.equal(served('price-multiplier', 'prod', user('u')).variant_key, '1.5');
    // checkout-api staging is off → offVariation 1 (false).
    assert.equal(served('checkout-api', 'stage', user('u')).value, false);
    // ui-config: fallthrough variation 0 / 1 per environment.
    assert.deepEqual(served('ui-config', 'prod', user('u')).value, { theme: 'dark' });
    assert.deepEqual(served('ui-config', 'stage', user('u')).value, { theme: 'light' });
  });
});

describe('LaunchDarkly import: options and inputs', () => {
  test('without environment mapping every LaunchDarkly environment is imported under its key; bare arrays are accepted', () => {
    const flags = (fixture('flags.json') as { items: unknown[] }).items;
    const result = convertLaunchDarkly({ flags: flags as never });
    assert.deepEqual(Object.keys(result.flags[0]!.environments), ['production', 'staging', 'test']);
    assert.deepEqual(result.segments, {});
    // Segments unknown: segmentMatch names the LaunchDarkly key as it is.
    const rule = result.flags.find((f) => f.definition.key === 'new-checkout')!.environments.production!.rules[4]!;
    assert.deepEqual(rule.segment_keys, ['beta-testers']);
    assert.ok(result.report.some((e) => e.severity === 'info' && e.flag_key === 'new-checkout' && e.environment === 'production' && /no segments of LaunchDarkly environment "production"/.test(e.message)));
  });

  test('context kinds can be renamed', () => {
    const result = convertLaunchDarkly(
      { flags: [{ key: 'f', kind: 'boolean', variations: [{ value: true }, { value: false }], environments: { production: { on: true, offVariation: 1, fallthrough: { variation: 1 }, contextTargets: [{ contextKind: 'organization', values: ['o1'], variation: 0 }], rules: [{ _id: 'r1', clauses: [{ attribute: 'plan', op: 'in', values: ['gold'] }], variation: 0 }] } } }] },
      { contextKinds: { user: 'person', organization: 'org' } },
    );
    assert.deepEqual(result.flags[0]!.environments.production!.rules, [
      { id: 'targets-org-true', description: 'individual organization targets (LaunchDarkly)', conditions: [{ context_type: 'org', attribute: 'key', op: 'in', values: ['o1'] }], variant_key: 'true' },
      // A clause without contextKind is on the user kind.
      { id: 'r1', conditions: [{ context_type: 'person', attribute: 'plan', op: 'in', values: ['gold'] }], variant_key: 'true' },
      { id: 'default', conditions: [], variant_key: 'false' },
    ]);
  });

  test('a negated clause whose values LaunchDarkly can never match becomes "exists"; the un-negated one drops the rule', () => {
    const result = convertLaunchDarkly({
      flags: [
        {
          key: 'f',
          kind: 'boolean',
          variations: [{ value: true }, { value: false }],
          environments: {
            production: {
              on: true,
              offVariation: 1,
              fallthrough: { variation: 1 },
              rules: [
                // startsWith with only a number: never true for a present attribute; negated → true when age is present.
                { _id: 'neg', clauses: [{ attribute: 'age', op: 'startsWith', values: [3], negate: true }], variation: 0 },
                { _id: 'pos', clauses: [{ attribute: 'age', op: 'startsWith', values: [3] }], variation: 0 },
              ],
            },
          },
        },
      ],
    });
    assert.deepEqual(result.flags[0]!.environments.production!.rules, [
      { id: 'neg', conditions: [{ context_type: 'user', attribute: 'age', op: 'exists', values: [] }], variant_key: 'true' },
      { id: 'default', conditions: [], variant_key: 'false' },
    ]);
    assert.ok(result.report.some((e) => e.severity === 'dropped' && /rule 2 was dropped: its "startsWith" clause on age has no value LaunchDarkly can match/.test(e.message)));
  });

  test("rules with patterns past Switchyard's per-flag budget are dropped from the last, so the flag can be written", () => {
    const rules = Array.from({ length: 20 }, (_, i) => ({ _id: `re-${i + 1}`, clauses: [{ attribute: 'email', op: 'matches', values: [`^[a-z]{40}@x${i}\\.example$`] }], variation: 0 }));
    const result = convertLaunchDarkly({
      flags: [{ key: 'f', kind: 'boolean', variations: [{ value: true }, { value: false }], environments: { production: { on: true, offVariation: 1, fallthrough: { variation: 1 }, rules } } }],
    });
    const kept = result.flags[0]!.environments.production!.rules;
    const size = kept.reduce((sum, rule) => sum + matchesProgramSize(rule.conditions), 0);
    assert.ok(size <= MAX_MATCHES_PROGRAM_SIZE, `kept patterns compile to ${size}`);
    assert.doesNotThrow(() => checkRules(new Set(['true', 'false']), kept));
    const ids = kept.map((r) => r.id);
    // A prefix of the rules is kept (the last ones go first), then the default rule.
    assert.ok(ids.length > 1 && ids.length < 21);
    assert.deepEqual(ids, [...rules.slice(0, ids.length - 1).map((r) => r._id), 'default']);
    const dropped = result.report.filter((e) => e.severity === 'dropped' && /exceed Switchyard's budget/.test(e.message));
    assert.equal(dropped.length, 20 - (ids.length - 1));
  });

  test('a segment of another kind: lists and a 100% rule split in parts, excluded keys kept out of the rule, a segmentMatch inside it dropped', () => {
    const result = convertLaunchDarkly({
      flags: [
        {
          key: 'f',
          kind: 'boolean',
          variations: [{ value: true }, { value: false }],
          environments: { production: { on: true, offVariation: 1, fallthrough: { variation: 1 }, rules: [{ _id: 'r', clauses: [{ attribute: 'segmentMatch', op: 'segmentMatch', values: ['orgs'] }], variation: 0 }] } },
        },
      ],
      segments: {
        production: [
          {
            key: 'orgs',
            name: 'Organisations',
            includedContexts: [{ contextKind: 'organization', values: ['o1'] }],
            excludedContexts: [{ contextKind: 'organization', values: ['o2'] }],
            rules: [
              // weight 100000 = every matching context: no weight at all.
              { clauses: [{ attribute: 'tier', op: 'in', values: ['gold'], contextKind: 'organization' }], weight: 100000 },
              { clauses: [{ attribute: '', op: 'segmentMatch', values: ['other'] }] },
            ],
          },
        ],
      },
    });
    const docs: ImportedSegment[] = result.segments.production ?? [];
    assert.deepEqual(result.segments, {
      production: [
        { key: 'orgs', context_type: 'organization', kind: 'list', description: 'Organisations', included_keys: ['o1'], excluded_keys: ['o2'] },
        {
          key: 'orgs--rule-1',
          context_type: 'organization',
          kind: 'rule',
          description: 'Organisations',
          conditions: [
            { context_type: 'organization', attribute: 'tier', op: 'in', values: ['gold'] },
            { context_type: 'organization', attribute: 'key', op: 'in', values: ['o2'], negate: true },
          ],
        },
      ],
    });
    assert.ok(result.report.some((e) => e.severity === 'dropped' && e.segment_key === 'orgs' && /segment rule 2 was dropped: .*segmentMatch clause inside a segment rule/.test(e.message)));
    assert.deepEqual(result.flags[0]!.environments.production!.rules, [
      { id: 'r-1', conditions: [], segment_keys: ['orgs'], variant_key: 'true' },
      { id: 'r-2', conditions: [], segment_keys: ['orgs--rule-1'], variant_key: 'true' },
      { id: 'default', conditions: [], variant_key: 'false' },
    ]);
    // o2 has tier gold but is excluded (LaunchDarkly: not included, excluded → not a member); o3 with tier gold is a member through the rule.
    const env: EvaluationEnvironment = {
      projectId: 'p',
      environmentId: 'e',
      segments: new Map(docs.map((d) => [d.key, toSegment(d)])),
      isListMember: (key, contextKey) => key === 'orgs' && contextKey === 'o1',
    };
    const flag = toFlag(result.flags[0]!, 'production');
    assert.equal(evaluate(flag, ctx('organization', 'o1'), env).variant_key, 'true');
    assert.equal(evaluate(flag, ctx('organization', 'o2', { tier: 'gold' }), env).variant_key, 'false');
    assert.equal(evaluate(flag, ctx('organization', 'o3', { tier: 'gold' }), env).variant_key, 'true');
    assert.equal(evaluate(flag, ctx('organization', 'o4', { tier: 'silver' }), env).variant_key, 'false');
  });
});
