/**
 * One line per failed test, read from a file's spec-reporter output, for the run's closing summary.
 * CI keeps only the end of a long log: without these lines a flaky failure's cause scrolls away
 * with the file's output, and only its name is left.
 */

/** Starts what run-tests.ts appends of a failed file's run again: the first run is what failed. */
export const RETRY_SEPARATOR = '\n# ---- ';
const CANCELLED = 'test did not finish before its parent and was cancelled';
const MAX_REASONS = 5;

export function failureReasons(output: string): string[] {
  const firstRun = output.split(RETRY_SEPARATOR)[0]!;
  const reasons: string[] = [];
  const section = firstRun.lastIndexOf('✖ failing tests:');
  if (section >= 0) {
    const lines = firstRun.slice(section).split('\n').slice(1);
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]!;
      if (!line.startsWith('✖ ')) continue;
      const name = line.slice(2).replace(/ \([\d.]+ms\)$/, '');
      const reason = lines.slice(i + 1).find((next) => next.trim() !== '')?.trim() ?? '';
      // A cancelled test says only that its parent failed; the parent's own line says why.
      if (reason.includes(CANCELLED)) continue;
      reasons.push(`${name}: ${reason}`);
    }
  }
  if (reasons.length === 0) {
    // No failed test named (the process ended, was killed or failed outside a test): its last words.
    reasons.push(...firstRun.split('\n').map((line) => line.trim()).filter((line) => line !== '').slice(-3));
  }
  return reasons.slice(0, MAX_REASONS).map((reason) => (reason.length > 300 ? `${reason.slice(0, 300)}…` : reason));
}
