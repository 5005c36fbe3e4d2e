/**
 * Evaluation counts' cost in the Node SDK, timed alternately (bench/README.md "sdk", "Evaluation
 * counts"): two clients over one TestData flag, one with `evaluationCounts` on, each round running
 * both (order swapped every round), median of 15 rounds of 300,000 boolVariation calls, and the
 * median of the rounds' own ratios.
 *
 *   npx tsx bench/sdk/evaluation-counts-ab.ts
 */
import { SwitchyardClient, TestData, silentLogger } from '../../packages/sdk/src/index.ts';
const testData = new TestData().setFlag({
  key: 'f', value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }], enabled: true, off_variant_key: 'off',
  // Three in four users reach a 50/50 split (on/SPLIT, off/SPLIT), the rest off/DEFAULT: three keys, as in bench:sdk.
  rules: [{ id: 'pro', conditions: [{ attribute: 'plan', op: 'eq', values: ['pro'] }], allocation: { context_hash_specs: { user: { parameter_names: [] } }, buckets: [{ variant_key: 'on', weight_milli: 500 }, { variant_key: 'off', weight_milli: 500 }] } }],
  hashing: [], version: 1, archived: false, client_visible: false, created_at_ms: 0, updated_at_ms: 0,
} as any);
// The same client but for counting: with a baseUrl too, so both deliver exposures (an experiment
// flag check per evaluation) and only the counter differs.
const plain = new SwitchyardClient({ testData, logger: silentLogger, baseUrl: 'http://127.0.0.1:9', evaluationCounts: { enabled: false }, fetch: async () => new Response('{}', { status: 202 }) });
const counting = new SwitchyardClient({ testData, logger: silentLogger, baseUrl: 'http://127.0.0.1:9', evaluationCounts: { enabled: true, intervalMs: 3_600_000 }, fetch: async () => new Response('{}', { status: 202 }) });
// Many short rounds: the machine's drift (shared cores, clock changes) moves both runs of a round alike.
const ROUNDS = Number(process.env.ROUNDS ?? 61);
const CALLS = Number(process.env.CALLS ?? 100_000);
const ctx = Array.from({ length: 1024 }, (_, i) => ({ key: `u${i}`, attributes: { plan: i % 4 === 3 ? 'free' : 'pro' } }));
// The process's CPU time (user + system), not wall-clock time: on a shared, busy machine the wall
// clock also counts the time this process waited for a CPU, which the CPU time leaves out.
const run = (c: SwitchyardClient) => { const n = CALLS; const t = process.cpuUsage(); let s = 0; for (let i = 0; i < n; i++) s += c.boolVariation('f', ctx[i & 1023]!, false) ? 1 : 0; const u = process.cpuUsage(t); return ((u.user + u.system) * 1000) / n; };
const a: number[] = [], b: number[] = [];
for (let r = 0; r < ROUNDS; r++) { if (r % 2) { a.push(run(plain)); b.push(run(counting)); } else { b.push(run(counting)); a.push(run(plain)); } }
const med = (x: number[]) => x.sort((p, q) => p - q)[x.length >> 1]!;
// Also the median of each round's own ratio (the two runs of a round are a fraction of a second apart).
const paired = a.map((x, i) => b[i]! / x);
console.log(`plain ${med([...a]).toFixed(0)} ns, counting ${med([...b]).toFixed(0)} ns, +${((med([...b]) / med([...a]) - 1) * 100).toFixed(1)}%; per round: median +${((med(paired) - 1) * 100).toFixed(1)}%`);
console.log('answer:', counting.variationDetail('f', ctx[0]!, false), 'keys counted:', (counting as any).counter.size);
process.exit(0);
