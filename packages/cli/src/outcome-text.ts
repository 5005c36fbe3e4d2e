/** An import's answer (docs/flags-as-code.md "Import"), as the command reads it. */
export interface Outcome {
  dry_run: boolean;
  applied: boolean;
  created: Entry[];
  changed: Entry[];
  deleted: Entry[];
  refused: Array<Entry & { error: string; code: string }>;
}

interface Entry {
  kind: string;
  key: string;
  environment?: string;
  before?: Record<string, unknown>;
  after?: Record<string, unknown>;
}

const where = (entry: Entry): string => `${entry.kind} ${entry.environment === undefined ? '' : `${entry.environment}/`}${entry.key}`;

/**
 * The answer as lines a person reads in a terminal or a CI log, one per entry:
 * `+` created, `~` changed (with the fields), `-` deleted, `!` refused (with the reason), then a count.
 */
export function describeOutcome(outcome: Outcome): string {
  const lines: string[] = [];
  for (const entry of outcome.created) lines.push(`+ ${where(entry)}`);
  for (const entry of outcome.changed) lines.push(`~ ${where(entry)}: ${Object.keys({ ...entry.before, ...entry.after }).join(', ')}`);
  for (const entry of outcome.deleted) lines.push(`- ${where(entry)}`);
  for (const entry of outcome.refused) lines.push(`! ${where(entry)}: ${entry.error} (${entry.code})`);
  const counts = `${outcome.created.length} created, ${outcome.changed.length} changed, ${outcome.deleted.length} deleted, ${outcome.refused.length} refused`;
  const state = outcome.applied ? 'applied' : outcome.dry_run ? 'dry run: nothing was written' : 'refused: nothing was written';
  lines.push(`${counts} (${state})`);
  return `${lines.join('\n')}\n`;
}
