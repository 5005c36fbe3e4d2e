/**
 * In-process evaluation speed of the Node SDK (docs/sdk.md), same run as @openfeature/flagd-core
 * (the in-process evaluation core of flagd's providers) on the same flag.
 *
 * Run through bench/sdk/evaluation.bench.ts (`npm run bench:sdk`), which compiles it to plain
 * JavaScript first, or under tsx as it is (`--source`).
 *
 * The flag: a boolean, `country in [DE, FR, NL, AT] AND plan == "pro"` → a 50/50 split, everyone
 * else "off". Switchyard: one rule (conditions + allocation); flagd: targeting JsonLogic with
 * `fractional`. 1,024 rotating users, three in four match the conditions (so they hash), the rest
 * fall through. The SDK runs from a TestData source (no server, no network, no events), so only
 * evaluation is timed. Rows:
 *   - baseline: flagd-core `resolveBooleanEvaluation` (synchronous);
 *   - core `evaluate()` alone (reference: the engine under the SDK);
 *   - SDK `client.boolVariation` (synchronous);
 *   - SDK `client.variationDetail` (synchronous, with variant and reason);
 *   - SDK provider through the stock OpenFeature client (`getBooleanValue`, awaited);
 *   - flagd-core behind a minimal provider through the same OpenFeature client (reference: what
 *     the OpenFeature layer costs on flagd's side);
 *   - a provider that answers a constant through the same client (reference: the floor of any
 *     OpenFeature evaluation, the client's own work: context merging, hooks, promises).
 * Targets (issue 35): core evaluate() and the SDK's boolVariation and variationDetail each ≥ 3× flagd-core in
 * the same run (the "vs flagd-core" column); the OpenFeature path ≥ 1× flagd-core.
 */
import { loadavg } from 'node:os';
import { FlagdCore } from '@openfeature/flagd-core';
import { OpenFeature, type EvaluationContext as OfContext, type JsonValue, type Provider, type ResolutionDetails } from '@openfeature/server-sdk';
import { evaluate, type EvaluationContext, type EvaluationEnvironment, type Flag } from '@switchyard/core';
import { SwitchyardClient, TestData, silentLogger, type SdkContext } from '@switchyard/sdk';
import { SwitchyardProvider } from '@switchyard/sdk/openfeature';
import { runBenchmark, type Workload } from '../support/measure.ts';

const FLAG_KEY = 'new-checkout';
const COUNTRIES = ['DE', 'FR', 'NL', 'AT'];

const FLAG: Flag = {
  key: FLAG_KEY,
  description: 'benchmark flag: country in [...] and plan == pro, then a 50/50 split',
  value_type: 'bool',
  variants: [
    { key: 'on', value: true },
    { key: 'off', value: false },
  ],
  enabled: true,
  off_variant_key: 'off',
  rules: [
    {
      id: 'eu-pro',
      conditions: [
        { attribute: 'country', op: 'in', values: COUNTRIES },
        { attribute: 'plan', op: 'eq', values: ['pro'] },
      ],
      allocation: {
        context_hash_specs: { user: { parameter_names: [] } },
        buckets: [
          { variant_key: 'on', weight_milli: 500 },
          { variant_key: 'off', weight_milli: 500 },
        ],
      },
    },
  ],
  hashing: [],
  version: 1,
  archived: false,
  client_visible: false,
  created_at_ms: 0,
  updated_at_ms: 0,
};

/** The same flag in flagd's flag definition format. */
const FLAGD_CONFIG = JSON.stringify({
  flags: {
    [FLAG_KEY]: {
      state: 'ENABLED',
      variants: { on: true, off: false },
      defaultVariant: 'off',
      targeting: {
        if: [
          { and: [{ in: [{ var: 'country' }, COUNTRIES] }, { '==': [{ var: 'plan' }, 'pro'] }] },
          { fractional: [['on', 50], ['off', 50]] },
          'off',
        ],
      },
    },
  },
});

// 1,024 users: three in four match (DE/FR/NL + pro), every fourth is from the US on the free plan.
const USERS = Array.from({ length: 1024 }, (_, i) => {
  const matches = i % 4 !== 3;
  return { key: `user-${100_000 + i}`, country: matches ? COUNTRIES[i % 3]! : 'US', plan: matches ? 'pro' : 'free' };
});
const MASK = USERS.length - 1;
const SDK_CONTEXTS: SdkContext[] = USERS.map((u) => ({ key: u.key, attributes: { country: u.country, plan: u.plan } }));
const CORE_CONTEXTS: EvaluationContext[] = USERS.map((u) => ({ context_type: 'user', key: u.key, parameters: { country: u.country, plan: u.plan } }));
const OF_CONTEXTS: OfContext[] = USERS.map((u) => ({ targetingKey: u.key, country: u.country, plan: u.plan }));

const testData = new TestData().setFlag(FLAG);
const client = new SwitchyardClient({ testData, logger: silentLogger });
// The same SDK with evaluation counts on (docs/sdk.md "Evaluation counts"; off by default with
// testData): every evaluation also counted; summaries go to a fetch that answers 202 (none is sent
// during the timing: one an hour).
const countingClient = new SwitchyardClient({
  testData,
  logger: silentLogger,
  baseUrl: 'http://127.0.0.1:9',
  evaluationCounts: { enabled: true, intervalMs: 3_600_000 },
  fetch: async () => new Response('{"received_count":1}', { status: 202 }),
});
const ENV: EvaluationEnvironment = { projectId: TestData.PROJECT_ID, environmentId: TestData.ENVIRONMENT_ID };

const flagd = new FlagdCore();
flagd.setConfigurations(FLAGD_CONFIG);

/** flagd-core behind the least a provider can be: what OpenFeature itself adds on flagd's side. */
class FlagdCoreProvider implements Provider {
  readonly metadata = { name: 'flagd-core (minimal)' } as const;
  readonly runsOn = 'server' as const;
  constructor(private readonly core: FlagdCore) {}
  resolveBooleanEvaluation(key: string, fallback: boolean, context: OfContext): Promise<ResolutionDetails<boolean>> {
    return Promise.resolve(this.core.resolveBooleanEvaluation(key, fallback, context));
  }
  resolveStringEvaluation(key: string, fallback: string, context: OfContext): Promise<ResolutionDetails<string>> {
    return Promise.resolve(this.core.resolveStringEvaluation(key, fallback, context));
  }
  resolveNumberEvaluation(key: string, fallback: number, context: OfContext): Promise<ResolutionDetails<number>> {
    return Promise.resolve(this.core.resolveNumberEvaluation(key, fallback, context));
  }
  resolveObjectEvaluation<T extends JsonValue>(key: string, fallback: T, context: OfContext): Promise<ResolutionDetails<T>> {
    return Promise.resolve(this.core.resolveObjectEvaluation(key, fallback, context));
  }
}

/** Answers a constant: what the OpenFeature client costs with no evaluation at all. */
class ConstantProvider implements Provider {
  readonly metadata = { name: 'constant' } as const;
  readonly runsOn = 'server' as const;
  resolveBooleanEvaluation(): Promise<ResolutionDetails<boolean>> {
    return Promise.resolve({ value: true, variant: 'on', reason: 'STATIC' });
  }
  resolveStringEvaluation(): Promise<ResolutionDetails<string>> {
    return Promise.resolve({ value: '', reason: 'STATIC' });
  }
  resolveNumberEvaluation(): Promise<ResolutionDetails<number>> {
    return Promise.resolve({ value: 0, reason: 'STATIC' });
  }
  resolveObjectEvaluation<T extends JsonValue>(_key: string, fallback: T): Promise<ResolutionDetails<T>> {
    return Promise.resolve({ value: fallback, reason: 'STATIC' });
  }
}

await OpenFeature.setProviderAndWait('constant', new ConstantProvider());
await OpenFeature.setProviderAndWait('switchyard', new SwitchyardProvider({ testData, logger: silentLogger }));
await OpenFeature.setProviderAndWait('flagd', new FlagdCoreProvider(flagd));
const ofSwitchyard = OpenFeature.getClient('switchyard');
const ofFlagd = OpenFeature.getClient('flagd');
const ofConstant = OpenFeature.getClient('constant');

// Sanity: all paths agree on who matches, and both split about 50/50 among those who do (their
// hashes differ, so not the same users get "on").
{
  let sdkOn = 0;
  let flagdOn = 0;
  for (let i = 0; i < USERS.length; i++) {
    const ours = client.variationDetail(FLAG_KEY, SDK_CONTEXTS[i]!, false);
    const core = evaluate(FLAG, CORE_CONTEXTS[i]!, ENV);
    const theirs = flagd.resolveBooleanEvaluation(FLAG_KEY, false, OF_CONTEXTS[i]!);
    const viaOf = await ofSwitchyard.getBooleanDetails(FLAG_KEY, false, OF_CONTEXTS[i]!);
    const matches = i % 4 !== 3;
    if (ours.reason !== (matches ? 'SPLIT' : 'DEFAULT')) throw new Error(`SDK reason ${ours.reason} for ${USERS[i]!.key}`);
    if (core.variant_key !== ours.variant_key || viaOf.value !== ours.value) throw new Error(`paths disagree for ${USERS[i]!.key}`);
    if (theirs.reason !== 'TARGETING_MATCH' || (!matches && theirs.value !== false)) throw new Error(`flagd ${JSON.stringify(theirs)} for ${USERS[i]!.key}`);
    if (matches && ours.value) sdkOn++;
    if (matches && theirs.value) flagdOn++;
  }
  const matched = (USERS.length * 3) / 4;
  for (const [name, on] of [['SDK', sdkOn], ['flagd-core', flagdOn]] as const) {
    if (Math.abs(on / matched - 0.5) > 0.06) throw new Error(`${name} split ${on}/${matched} is not about 50/50`);
  }
}

const workloads: Workload[] = [
  {
    name: 'baseline: flagd-core resolveBooleanEvaluation',
    run: (n) => {
      let sink = 0;
      for (let i = 0; i < n; i++) sink += flagd.resolveBooleanEvaluation(FLAG_KEY, false, OF_CONTEXTS[i & MASK]!).value ? 1 : 0;
      return sink;
    },
  },
  {
    name: 'reference: core evaluate() alone',
    run: (n) => {
      let sink = 0;
      for (let i = 0; i < n; i++) sink += evaluate(FLAG, CORE_CONTEXTS[i & MASK]!, ENV).value ? 1 : 0;
      return sink;
    },
  },
  {
    name: 'SDK client.boolVariation (sync)',
    run: (n) => {
      let sink = 0;
      for (let i = 0; i < n; i++) sink += client.boolVariation(FLAG_KEY, SDK_CONTEXTS[i & MASK]!, false) ? 1 : 0;
      return sink;
    },
  },
  {
    name: 'SDK client.boolVariation, evaluation counts on (sync)',
    run: (n) => {
      let sink = 0;
      for (let i = 0; i < n; i++) sink += countingClient.boolVariation(FLAG_KEY, SDK_CONTEXTS[i & MASK]!, false) ? 1 : 0;
      return sink;
    },
  },
  {
    name: 'SDK client.variationDetail (sync)',
    run: (n) => {
      let sink = 0;
      for (let i = 0; i < n; i++) sink += client.variationDetail(FLAG_KEY, SDK_CONTEXTS[i & MASK]!, false).variant_key.length;
      return sink;
    },
  },
  {
    name: 'OpenFeature client → SwitchyardProvider',
    phase: 1,
    run: async (n) => {
      let sink = 0;
      for (let i = 0; i < n; i++) sink += (await ofSwitchyard.getBooleanValue(FLAG_KEY, false, OF_CONTEXTS[i & MASK]!)) ? 1 : 0;
      return sink;
    },
  },
  {
    name: 'reference: OpenFeature client → flagd-core',
    phase: 1,
    run: async (n) => {
      let sink = 0;
      for (let i = 0; i < n; i++) sink += (await ofFlagd.getBooleanValue(FLAG_KEY, false, OF_CONTEXTS[i & MASK]!)) ? 1 : 0;
      return sink;
    },
  },
  {
    name: 'reference: OpenFeature client → constant',
    phase: 1,
    run: async (n) => {
      let sink = 0;
      for (let i = 0; i < n; i++) sink += (await ofConstant.getBooleanValue(FLAG_KEY, false, OF_CONTEXTS[i & MASK]!)) ? 1 : 0;
      return sink;
    },
  },
];

const loadBefore = loadavg()[0] ?? 0;
const mode = process.env.SDK_BENCH_MODE ?? 'source under tsx';
console.log(`sdk evaluation (${mode}): 1,024 rotating users (3 in 4 reach the split), load average before: ${loadBefore.toFixed(2)}`);
const results = await runBenchmark('sdk-evaluation', workloads, { ratio: 'vs flagd-core', interleaved: true });
const rate = (name: string): number => results.find((r) => r.name.startsWith(name))!.median;
// Each ratio to flagd-core is the median of the rounds' own ratios (interleaved rounds, CPU time).
const ratioOf = (name: string): number => results.find((r) => r.name.startsWith(name))!.ratio;
const coreRatio = ratioOf('reference: core evaluate()');
const sdkRatio = ratioOf('SDK client.boolVariation (sync)');
// Issue 40: counting adds at most 3% to the SDK's evaluation (same run: counts on vs off).
const countingCost = rate('SDK client.boolVariation (sync)') / rate('SDK client.boolVariation, evaluation counts on') - 1;
const detailRatio = ratioOf('SDK client.variationDetail');
const ofRatio = ratioOf('OpenFeature client → SwitchyardProvider');
const ofVsFlagdOf = rate('OpenFeature client → SwitchyardProvider') / rate('reference: OpenFeature client → flagd-core');
const ofFloor = ratioOf('reference: OpenFeature client → constant');
const TARGET = 3;
for (const [what, ratio] of [['core evaluate()', coreRatio], ['SDK boolVariation', sdkRatio], ['SDK variationDetail', detailRatio]] as const) {
  console.log(`target ${what} ≥ ${TARGET}x flagd-core (same run): ${ratio.toFixed(2)}x — ${ratio >= TARGET ? 'met' : 'NOT met'}`);
}
console.log(`target evaluation counts add ≤ 3% to boolVariation (same run): ${(countingCost * 100).toFixed(1)}% — ${countingCost <= 0.03 ? 'met' : 'NOT met'}`);
console.log(`target OpenFeature path ≥ 1x flagd-core: ${ofRatio.toFixed(2)}x — ${ofRatio >= 1 ? 'met' : 'NOT met'}`);
console.log(
  `  (the OpenFeature client answering a constant reaches ${ofFloor.toFixed(2)}x flagd-core: the floor of any provider; through the same client, Switchyard is ${ofVsFlagdOf.toFixed(2)}x flagd-core)`,
);
if (loadBefore > 1) console.log(`NOTE: the machine was busy (load ${loadBefore.toFixed(2)}): compare the ratios, not the absolute figures`);
console.log(JSON.stringify({ bench: 'sdk-evaluation-targets', mode, load_average_before: Number(loadBefore.toFixed(2)), load_average_after: Number((loadavg()[0] ?? 0).toFixed(2)), target_vs_flagd: TARGET, core_vs_flagd: Number(coreRatio.toFixed(3)), sdk_vs_flagd: Number(sdkRatio.toFixed(3)), sdk_detail_vs_flagd: Number(detailRatio.toFixed(3)), openfeature_vs_flagd: Number(ofRatio.toFixed(3)), openfeature_vs_flagd_via_openfeature: Number(ofVsFlagdOf.toFixed(3)), openfeature_floor_vs_flagd: Number(ofFloor.toFixed(3)), evaluation_counts_cost: Number(countingCost.toFixed(4)) }));

await OpenFeature.close();
await client.close();
await countingClient.close();
