/**
 * What the linear-time `matches` engine (re2js) costs an evaluation, next to native RegExp.
 *
 *   npx tsx bench/regex/regex.bench.ts [--rounds 7] [--round-ms 300]      # or: npm run bench:regex
 *
 * Prints a table and one JSON line (bench/support/measure.ts). Core's evaluate() now runs `matches`
 * on re2js only, so the native-RegExp baseline is composed in the same run: evaluate() of the same
 * flag without its `matches` condition, plus `RegExp.test` of the same pattern on the same value,
 * which is what an evaluation cost when `matches` ran on RegExp (the condition's attribute lookup
 * aside, a few nanoseconds). A flag without any `matches` rule is measured for reference.
 */
import { RE2JS } from 're2js';
import { runBenchmark, type Workload } from '../support/measure.ts';
import { evaluate } from '../../packages/core/src/evaluation/index.ts';
import type { EvaluationEnvironment } from '../../packages/core/src/evaluation/index.ts';
import type { EvaluationContext } from '../../packages/core/src/model/context.ts';
import type { Condition, Flag } from '../../packages/core/src/model/definitions.ts';

/** A typical targeting pattern: staff e-mail addresses of two domains, anchored on both sides. */
const PATTERN = '^[a-z0-9._%+-]+@(example|corp)\\.com$';
const NATIVE = new RegExp(PATTERN);
const RE2 = RE2JS.compile(PATTERN);

// 1,024 users rotating; every one passes the country condition, half have a matching address.
const SIZE = 1024;
const MASK = SIZE - 1;
const emailOf = (i: number): string => `user.${100_000 + i}@${i % 2 === 0 ? 'example.com' : 'example.org'}`;
const contextsWith = (email: (i: number) => string): EvaluationContext[][] =>
  Array.from({ length: SIZE }, (_, i) => [{ context_type: 'user', key: `user-${i}`, parameters: { country: ['DE', 'FR', 'NL'][i % 3]!, email: email(i) } }]);
const SHORT = contextsWith(emailOf);
// Values at the attribute cap (4096 characters): the longest input an evaluation entry point accepts.
const LONG = contextsWith((i) => `${'a'.repeat(4096 - emailOf(i).length)}${emailOf(i)}`);
// The ReDoS input of docs/security.md: 4095 'a's and a '!' (RegExp would not finish on it).
const REDOS = contextsWith((i) => `${'a'.repeat(4095 - (i % 8))}!${'b'.repeat(i % 8)}`.slice(0, 4096));

const COUNTRY: Condition = { attribute: 'country', op: 'in', values: ['DE', 'FR', 'NL', 'AT'] };
const flagWith = (conditions: Condition[]): Flag => ({
  key: 'staff-preview',
  description: 'benchmark flag: one targeting rule',
  value_type: 'bool',
  variants: [
    { key: 'on', value: true },
    { key: 'off', value: false },
  ],
  enabled: true,
  off_variant_key: 'off',
  rules: [{ id: 'staff', conditions, variant_key: 'on' }],
  hashing: [],
  version: 1,
  archived: false,
  client_visible: false,
  created_at_ms: 0,
  updated_at_ms: 0,
});
const WITH_MATCHES = flagWith([COUNTRY, { attribute: 'email', op: 'matches', values: [PATTERN] }]);
const WITHOUT_MATCHES = flagWith([COUNTRY]);
const REDOS_FLAG = flagWith([COUNTRY, { attribute: 'email', op: 'matches', values: ['^(a+)+$'] }]);
const ENV: EvaluationEnvironment = { projectId: 'proj-1', environmentId: 'env-prod' };

const emailAt = (contexts: EvaluationContext[][], i: number): string => contexts[i & MASK]![0]!.parameters!.email as string;

/** evaluate() with the matches condition done by native RegExp: the rule holds when both hold. */
const nativeEvaluation = (contexts: EvaluationContext[][]) => (n: number) => {
  let sink = 0;
  for (let i = 0; i < n; i++) {
    const countryHolds = evaluate(WITHOUT_MATCHES, contexts[i & MASK]!, ENV).variant_key === 'on';
    sink += countryHolds && NATIVE.test(emailAt(contexts, i)) ? 1 : 0;
  }
  return sink;
};
const re2Evaluation = (flag: Flag, contexts: EvaluationContext[][]) => (n: number) => {
  let sink = 0;
  for (let i = 0; i < n; i++) sink += evaluate(flag, contexts[i & MASK]!, ENV).variant_key === 'on' ? 1 : 0;
  return sink;
};

const workloads: Workload[] = [
  { name: 'baseline: evaluate, matches on native RegExp', run: nativeEvaluation(SHORT) },
  { name: 'evaluate, matches on re2js', run: re2Evaluation(WITH_MATCHES, SHORT) },
  { name: 'evaluate, no matches rule (reference)', run: re2Evaluation(WITHOUT_MATCHES, SHORT) },
  {
    name: 'RegExp.test alone',
    run: (n) => {
      let sink = 0;
      for (let i = 0; i < n; i++) sink += NATIVE.test(emailAt(SHORT, i)) ? 1 : 0;
      return sink;
    },
  },
  {
    name: 're2js test alone',
    run: (n) => {
      let sink = 0;
      for (let i = 0; i < n; i++) sink += RE2.test(emailAt(SHORT, i)) ? 1 : 0;
      return sink;
    },
  },
  { name: '4096-char value: evaluate, native RegExp', run: nativeEvaluation(LONG) },
  { name: '4096-char value: evaluate, re2js', run: re2Evaluation(WITH_MATCHES, LONG) },
  { name: '4096-char ReDoS ^(a+)+$: evaluate, re2js', run: re2Evaluation(REDOS_FLAG, REDOS) },
];

// Sanity: both engines agree on every context, and half the users match, or the figures would
// compare different work.
for (const contexts of [SHORT, LONG]) {
  let matched = 0;
  for (let i = 0; i < SIZE; i++) {
    const re2 = evaluate(WITH_MATCHES, contexts[i]!, ENV).variant_key === 'on';
    if (re2 !== NATIVE.test(emailAt(contexts, i))) throw new Error(`engines disagree on ${emailAt(contexts, i).slice(-40)}`);
    if (re2) matched++;
  }
  if (matched !== SIZE / 2) throw new Error(`expected half the users to match, got ${matched}`);
}
if (evaluate(REDOS_FLAG, REDOS[0]!, ENV).reason !== 'DEFAULT') throw new Error('the ReDoS input must not match');

await runBenchmark('regex', workloads);
console.log('(native RegExp on the 4096-char ReDoS input is not measured: about 2^4095 steps, it would never finish)');

// Linear is not cheap for every pattern. A pattern whose automaton has very many states (the n-th
// character from the end is an 'a') makes re2js's lazy DFA build a new state for nearly every
// input character and throw its cache away when it fills, so the cost per character grows with
// the pattern. These rows show the worst cases found: a few evaluations each, median milliseconds
// per evaluation of one `matches` condition on a 4096-character value (docs/security.md,
// "Cost budget per definition").
const ADVERSARIAL = ['^(a|b)*a(a|b){14}$', '^(a|b)*a(a|b){200}$', '^(?:[ab]*a[ab]{30}){1,30}$', `${'[ab]{1000}'.repeat(90)}!`];
const AB = Array.from({ length: 5 }, (_, i) => {
  let state = 12345 + i;
  let text = '';
  for (let j = 0; j < 4095; j++) {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    text += state & 0x10000 ? 'a' : 'b';
  }
  return [{ context_type: 'user', key: `ab-${i}`, parameters: { country: 'DE', email: `${text}!` } }] as EvaluationContext[];
});
const adversarial = ADVERSARIAL.map((pattern) => {
  const flag = flagWith([COUNTRY, { attribute: 'email', op: 'matches', values: [pattern] }]);
  evaluate(flag, AB[0]!, ENV); // compiles the pattern
  const ms = AB.map((contexts) => {
    const started = performance.now();
    if (evaluate(flag, contexts, ENV).reason !== 'DEFAULT') throw new Error(`${pattern} must not match`);
    return performance.now() - started;
  }).sort((x, y) => x - y);
  return { pattern: pattern.length > 40 ? `${pattern.slice(0, 30)}… (${pattern.length} chars)` : pattern, program_size: RE2JS.compile(pattern).programSize(), ms_per_evaluation: Number(ms[ms.length >> 1]!.toFixed(1)) };
});
console.log('');
console.log('adversarial patterns, 4096-character a/b value: median ms per evaluation (re2js)');
for (const row of adversarial) console.log(`${row.pattern.padEnd(46)}  program size ${String(row.program_size).padStart(6)}  ${row.ms_per_evaluation.toFixed(1).padStart(8)} ms`);
console.log(JSON.stringify({ bench: 'regex-adversarial', node: process.version, value_length: 4096, results: adversarial }));
