/**
 * The longest piece of literal text that every match of a `matches` pattern contains, found by
 * reading the pattern's top level only; undefined when it has none or when the pattern uses
 * anything this reading does not follow. A `matches` condition then answers "no" for an input
 * without that text without running the regular-expression engine: most inputs of a typical
 * pattern (an e-mail domain, a user-agent token) lack its literal text, and a native substring
 * search costs a small part of a match (docs/decisions.md "Evaluate route performance").
 *
 * Sound by construction: a piece is kept only when it is a run of literal characters in the
 * pattern's top-level concatenation, none of them under a quantifier that allows zero (`?`, `*`,
 * `{0,...}`) and none inside a group or class; a top-level alternation, a case-folding flag, a
 * `\Q...\E` quote, a non-ASCII character or a repeat that does not read as `{n}`, `{n,}` or
 * `{n,m}` gives up on the whole pattern. Any match is a substring of the input that spells the
 * concatenation's items in order, so it holds every such run, and so does the input.
 */

/**
 * Characters with a meaning of their own outside a class (RE2 syntax) that the reading below does
 * not handle on its own: anchors, any character, and brackets out of place. Each ends a run.
 */
const NOT_LITERAL = new Set(['^', '$', '.', ']', '}']);
const ALPHANUMERIC = /^[A-Za-z0-9]$/;
/** A repeat `{n}`, `{n,}` or `{n,m}` where the pattern's `lastIndex` points. */
const REPEAT = /\{(\d+)(,\d*)?\}/y;

/** The index just past a class starting at `pattern[at] === '['`, or -1 when it is not followed plainly. */
function classEnd(pattern: string, at: number): number {
  let i = at + 1;
  if (pattern[i] === '^') i++;
  // A `]` first in the class is a literal.
  if (pattern[i] === ']') i++;
  for (; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\') i++;
    else if (c === '[') return -1; // [[:alpha:]] and the like: not followed here
    else if (c === ']') return i + 1;
  }
  return -1;
}

export function requiredLiteral(pattern: string): string | undefined {
  if (/[^\x00-\x7f]/.test(pattern) || pattern.includes('\\Q') || /\(\?[^:)]*i/.test(pattern)) return undefined;
  let best = '';
  let run = '';
  let depth = 0;
  /** Whether the item just read at the top level is the last character of `run`. */
  let lastIsLiteral = false;
  const endRun = (): void => {
    if (run.length > best.length) best = run;
    run = '';
    lastIsLiteral = false;
  };
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '(') {
      if (depth === 0) endRun();
      depth++;
      continue;
    }
    if (c === ')') {
      depth--;
      if (depth < 0) return undefined;
      continue;
    }
    if (c === '[') {
      const end = classEnd(pattern, i);
      if (end < 0) return undefined;
      if (depth === 0) endRun();
      i = end - 1;
      continue;
    }
    if (c === '\\') {
      const next = pattern[i + 1];
      if (next === undefined) return undefined;
      i++;
      if (depth > 0) continue;
      // An escaped punctuation character is that character; `\d`, `\b`, `\x41`, `\pL`... are not plain text here.
      if (ALPHANUMERIC.test(next)) endRun();
      else {
        run += next;
        lastIsLiteral = true;
      }
      continue;
    }
    // Inside a group (perhaps optional, perhaps one of alternatives): nothing there is required.
    if (depth > 0) continue;
    if (c === '|') return undefined;
    if (c === '?' || c === '*' || c === '+' || c === '{') {
      let atLeastOnce = c === '+';
      if (c === '{') {
        REPEAT.lastIndex = i;
        const repeat = REPEAT.exec(pattern);
        if (repeat === null) return undefined;
        atLeastOnce = Number(repeat[1]) > 0;
        i += repeat[0].length - 1;
      }
      // A lazy mark (`??`, `*?`, `+?`, `{n,m}?`) changes nothing here.
      if (pattern[i + 1] === '?') i++;
      // The quantifier repeats the last item: when that is the run's last character, it is
      // required only if the repeat is at least once, and the run cannot go on past it either way.
      if (lastIsLiteral && !atLeastOnce) run = run.slice(0, -1);
      endRun();
      continue;
    }
    if (NOT_LITERAL.has(c)) {
      endRun();
      continue;
    }
    run += c;
    lastIsLiteral = true;
  }
  if (depth !== 0) return undefined;
  endRun();
  return best === '' ? undefined : best;
}
