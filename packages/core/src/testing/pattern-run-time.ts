import { RE2JS } from 're2js';

/**
 * How long one run of `pattern` on `value` takes on this machine right now, in milliseconds: the
 * unit the evaluation-budget tests state their time bounds in ("the budget plus about one pattern
 * run", not "under 3 s"), so a bound follows the machine's load instead of failing on a busy CI
 * runner. Measured with RE2JS directly, not through the evaluation under test: the slowest of
 * `runs` runs.
 */
export function patternRunMs(pattern: string, value: string, runs = 2): number {
  const re = RE2JS.compile(pattern);
  let slowest = 0;
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    re.test(value);
    slowest = Math.max(slowest, performance.now() - started);
  }
  return slowest;
}
