import type { AuditEntry } from '../records.ts';
import { formatTime } from './common.tsx';

/** Top-level fields whose values differ between before and after. */
function changedFields(before: unknown, after: unknown): string[] {
  if (typeof before !== 'object' || before === null || typeof after !== 'object' || after === null) return [];
  const b = before as Record<string, unknown>;
  const a = after as Record<string, unknown>;
  return [...new Set([...Object.keys(b), ...Object.keys(a)])].filter((key) => JSON.stringify(b[key]) !== JSON.stringify(a[key]));
}

/** Change-history entries, newest first: who did what, when, and the fields that changed. */
export function HistoryList({ entries }: { entries: AuditEntry[] }) {
  if (entries.length === 0) return <p>No changes recorded yet.</p>;
  return (
    <ol class="history">
      {entries.map((entry) => {
        const fields = changedFields(entry.before, entry.after);
        return (
          <li>
            <p>
              <strong>{entry.actor.email ?? `${entry.actor.type} ${entry.actor.id}`}</strong> {entry.action} {entry.resource_type} <code>{entry.resource_id}</code>{' '}
              <time dateTime={new Date(entry.at_ms).toISOString()}>{formatTime(entry.at_ms)}</time>
            </p>
            {fields.length > 0 && <p class="muted">Changed: {fields.join(', ')}</p>}
            {(entry.before !== undefined || entry.after !== undefined) && (
              <details>
                <summary>Before and after</summary>
                <div class="diff">
                  <pre aria-label="Before">{JSON.stringify(entry.before ?? null, null, 2)}</pre>
                  <pre aria-label="After">{JSON.stringify(entry.after ?? null, null, 2)}</pre>
                </div>
              </details>
            )}
          </li>
        );
      })}
    </ol>
  );
}
