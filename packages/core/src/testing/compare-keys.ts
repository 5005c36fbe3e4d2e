/**
 * Orders keys by Unicode code point, which is the byte order of their UTF-8 encoding and so the
 * order PostgreSQL gives under COLLATE "C". Plain `<` compares UTF-16 code units instead, which
 * puts characters above U+FFFF (surrogate pairs) before U+E000–U+FFFF; the fakes must page and
 * list in exactly the order the PostgreSQL adapter does.
 */
export function compareKeys(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

/** Moves surrogates (D800–DFFF, i.e. code points above FFFF) after E000–FFFF; keeps the rest in order. */
function codePointRank(unit: number): number {
  if (unit >= 0xd800 && unit <= 0xdfff) return unit + 0x2000;
  if (unit >= 0xe000) return unit - 0x800;
  return unit;
}
