/**
 * A set of allowed-origin patterns (origin-patterns.ts) asked "is this origin allowed?" in a few
 * hash lookups, however many patterns it holds: CORS preflights are answered from the union of
 * every active client key's origins (docs/client-side.md "CORS and origins"), which may be
 * thousands of entries. It answers exactly as `originAllowed(patterns, origin)` does.
 */

/** An origin as browsers send it: scheme, lower-case host (a name or a bracketed IPv6 address), optional port. */
const ORIGIN = /^(https?:\/\/)([a-z0-9-]+(?:\.[a-z0-9-]+)*|\[[0-9a-f:.]+\])((?::\d{1,5})?)$/;

export class OriginPatternSet {
  static readonly EMPTY = new OriginPatternSet([]);

  /** Exact origins. */
  private readonly exact = new Set<string>();
  /** Wildcard patterns, as written: `https://*.example.com[:port]`. */
  private readonly wildcards = new Set<string>();

  constructor(patterns: Iterable<string>) {
    for (const pattern of patterns) {
      if (pattern.includes('://*.')) this.wildcards.add(pattern);
      else this.exact.add(pattern);
    }
  }

  /** How many distinct patterns the set holds. */
  get size(): number {
    return this.exact.size + this.wildcards.size;
  }

  /** Whether some pattern allows `origin` (a request's `Origin` header, unchecked). */
  allows(origin: string): boolean {
    if (this.exact.has(origin)) return true;
    if (this.wildcards.size === 0) return false;
    const match = ORIGIN.exec(origin);
    if (match === null) return false;
    const [, scheme, host, port] = match as unknown as [string, string, string, string];
    // https://a.b.example.com:8443 is allowed by https://*.b.example.com:8443 and
    // https://*.example.com:8443: a wildcard stands for one or more whole labels, never for none.
    for (let dot = host.indexOf('.'); dot >= 0; dot = host.indexOf('.', dot + 1)) {
      if (this.wildcards.has(`${scheme}*${host.slice(dot)}${port}`)) return true;
    }
    return false;
  }
}
