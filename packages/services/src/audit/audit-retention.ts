/**
 * How much change history is kept (docs/contract.md "Change history"); the Pruner enforces both.
 *
 * Retention: a year. Long enough to answer "who changed this flag, and when" across a yearly
 * review or audit cycle, the same order as hosted flag services keep theirs, while an org that
 * writes steadily still reaches a bound. Operators who must keep more (or less) set
 * AUDIT_RETENTION_DAYS.
 *
 * Per-org cap: 100,000 entries. A team making a hundred changes every day keeps its whole year
 * (36,500 entries) well under it, so the cap only bites an org writing without pause; an entry is
 * typically a few KB (up to about twice its resource), so a full org holds some hundreds of MB.
 */
export const DEFAULT_AUDIT_RETENTION_DAYS = 365;
export const DEFAULT_AUDIT_MAX_ENTRIES_PER_ORG = 100_000;
