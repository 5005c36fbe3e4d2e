/** One line of a before/after pair: `changed` when it is not in the longest common subsequence. */
export interface DiffLine {
  text: string;
  changed: boolean;
}

/**
 * Marks the lines of `before` that are gone and the lines of `after` that are new, by the longest
 * common subsequence of the two (the lines both keep in order). Quadratic in lines: an audit entry's
 * JSON is a few hundred lines at most, and above 2,000 lines on a side every line is marked
 * changed instead of spending the browser's time on it.
 */
export function lineDiff(before: string[], after: string[]): { before: DiffLine[]; after: DiffLine[] } {
  const n = before.length;
  const m = after.length;
  if (n > 2000 || m > 2000) {
    return { before: before.map((text) => ({ text, changed: true })), after: after.map((text) => ({ text, changed: true })) };
  }
  // lcs[i][j]: the length of the longest common subsequence of before[i..] and after[j..].
  const lcs: Uint16Array[] = Array.from({ length: n + 1 }, () => new Uint16Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i]![j] = before[i] === after[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
    }
  }
  const keptBefore = new Array<boolean>(n).fill(false);
  const keptAfter = new Array<boolean>(m).fill(false);
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (before[i] === after[j]) {
      keptBefore[i++] = true;
      keptAfter[j++] = true;
    } else if (lcs[i + 1]![j]! >= lcs[i]![j + 1]!) i++;
    else j++;
  }
  return {
    before: before.map((text, k) => ({ text, changed: !keptBefore[k] })),
    after: after.map((text, k) => ({ text, changed: !keptAfter[k] })),
  };
}
