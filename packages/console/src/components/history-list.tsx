import type { ComponentChildren } from 'preact';
import type { Api } from '../api.ts';
import { apiPath } from '../api.ts';
import type { AuditEntry, Environment, User } from '../records.ts';
import { formatTime, useLoad } from './common.tsx';
import { lineDiff } from './line-diff.ts';

/** Fields every write changes: left out of "Changed: …" and of the action's words. */
const BOOKKEEPING = new Set(['version', 'updated_at_ms', 'created_at_ms']);

/** Top-level fields whose values differ between before and after. */
function changedFields(before: unknown, after: unknown): string[] {
  if (typeof before !== 'object' || before === null || typeof after !== 'object' || after === null) return [];
  const b = before as Record<string, unknown>;
  const a = after as Record<string, unknown>;
  return [...new Set([...Object.keys(b), ...Object.keys(a)])].filter((key) => !BOOKKEEPING.has(key) && JSON.stringify(b[key]) !== JSON.stringify(a[key]));
}

/** The actions of docs/contract.md "Change history", in words. */
const ACTION_WORDS: Record<string, string> = {
  'flag.create': 'Created the flag',
  'flag.delete': 'Deleted the flag',
  'flag.archive': 'Archived the flag',
  'flag.unarchive': 'Unarchived the flag',
  'flag.variants': 'Changed variants',
  'flag.rules': 'Changed rules',
  'flag.hashing': 'Changed hashing',
  'flag.copy': 'Copied from another environment',
  'segment.create': 'Created the segment',
  'segment.update': 'Changed the segment',
  'segment.members': "Changed the segment's keys",
  'segment.delete': 'Deleted the segment',
  'segment.copy': 'Copied the segment from another environment',
  'event_definition.create': 'Created the event definition',
  'event_definition.update': 'Changed the event definition',
  'event_definition.delete': 'Deleted the event definition',
  'experiment.create': 'Created the experiment',
  'experiment.update': 'Changed the experiment',
  'experiment.delete': 'Deleted the experiment',
  'experiment.transition': "Changed the experiment's status",
  'org.create': 'Created the organisation',
  'project.create': 'Created the project',
  'environment.create': 'Created the environment',
  'environment.update': "Changed the environment's protection",
  'api_token.create': 'Created an API token',
  'api_token.revoke': 'Revoked an API token',
  'user.bindings_change': "Changed a member's access",
  'sdk_key.create': 'Created an SDK key',
  'sdk_key.update': 'Changed an SDK key',
  'sdk_key.delete': 'Revoked an SDK key',
  'invitation.create': 'Invited someone',
  'invitation.delete': 'Withdrew an invitation',
  'invitation.accept': 'Accepted an invitation',
  'user.create': 'Added a member',
  'user.role_change': "Changed a member's role",
  'user.remove': 'Removed a member',
  'sso.account_created': 'Signed up by single sign-on',
  'sso.account_linked': 'Linked an account to single sign-on',
  'auth_provider.create': 'Created an identity provider',
  'auth_provider.update': 'Changed an identity provider',
  'auth_provider.confirm': 'Confirmed an identity provider',
  'auth_provider.disable': 'Disabled an identity provider',
  'auth_provider.delete': 'Deleted an identity provider',
};

/** What a flag.update did, from the fields it changed: "Turned on", "Changed the description", … */
function flagUpdateWords(before: unknown, after: unknown): string {
  const a = (after ?? {}) as Record<string, unknown>;
  const words = changedFields(before, after).map((field) => {
    switch (field) {
      case 'enabled':
        return a.enabled ? 'Turned on' : 'Turned off';
      case 'description':
        return 'Changed the description';
      case 'off_variant_key':
        return 'Changed the off variant';
      case 'client_visible':
        return a.client_visible ? 'Made visible to client keys' : 'Hid from client keys';
      case 'variants':
        return 'Changed variants';
      case 'rules':
        return 'Changed rules';
      case 'hashing':
        return 'Changed hashing';
      case 'value_type':
        return 'Changed the type';
      case 'tags':
        return 'Changed tags';
      case 'lifetime':
        return a.lifetime === 'temporary' ? 'Marked temporary' : 'Marked permanent';
      case 'maintainer':
        return a.maintainer ? `Made ${String(a.maintainer)} the maintainer` : 'Removed the maintainer';
      case 'bucket_by':
        return a.bucket_by === 'project' ? 'Bucketed users by project' : 'Bucketed users by environment';
      default:
        return `Changed ${field.replace(/_/g, ' ')}`;
    }
  });
  if (words.length === 0) return 'Saved the flag unchanged';
  return [words[0], ...words.slice(1).map((w) => w.charAt(0).toLowerCase() + w.slice(1))].join(', ');
}

/** The action of an entry in words; the stable code is shown beside it. */
export function actionWords(entry: AuditEntry): string {
  if (entry.action === 'flag.update') return flagUpdateWords(entry.before, entry.after);
  // A copy names its source (details.copied_from_environment_name, docs/contract.md "Change history").
  const source = entry.details?.copied_from_environment_name;
  if ((entry.action === 'flag.copy' || entry.action === 'segment.copy') && typeof source === 'string') {
    return entry.action === 'flag.copy' ? `Copied from ${source}` : `Copied the segment from ${source}`;
  }
  return ACTION_WORDS[entry.action] ?? entry.action;
}

/** Names the console can put in place of ids: people by user id, environments by id. */
export interface HistoryNames {
  people: Map<string, string>;
  environments: Map<string, string>;
}

/**
 * The org's members by user id ("Name <email>"), for the history's "who". A member whose list the
 * API refuses (or an old entry's user who has left) is shown as the entry names them.
 */
export function useHistoryNames(api: Api, orgId: string, environments: Environment[]): HistoryNames {
  const users = useLoad(() => api.get<User[]>(apiPath`/v1/management/orgs/${orgId}/users`).catch(() => [] as User[]), [orgId]);
  return {
    people: new Map((users.data ?? []).map((u) => [u.user_id, u.display_name && u.display_name !== u.email ? `${u.display_name} (${u.email})` : u.email])),
    environments: new Map(environments.map((e) => [e.environment_id, e.environment_name])),
  };
}

function actorName(entry: AuditEntry, names: HistoryNames | undefined): string {
  // A token is named by its name as it was when it wrote (it may since be revoked).
  if (entry.actor.type === 'api_token') return `API token ${entry.actor.name ?? entry.actor.id}`;
  const known = names?.people.get(entry.actor.id);
  if (known) return known;
  if (entry.actor.email) return entry.actor.email;
  return `${entry.actor.type.replace(/_/g, ' ')} ${entry.actor.id}`;
}

/** Before and after as JSON, each line that differs marked (− gone from before, + new in after). */
export function BeforeAfter({ before, after }: { before: unknown; after: unknown }) {
  const diff = lineDiff(JSON.stringify(before ?? null, null, 2).split('\n'), JSON.stringify(after ?? null, null, 2).split('\n'));
  return (
    <div class="diff">
      <pre aria-label="Before">
        {diff.before.map((line) => (line.changed ? <del>{`- ${line.text}\n`}</del> : `  ${line.text}\n`))}
      </pre>
      <pre aria-label="After">
        {diff.after.map((line) => (line.changed ? <ins>{`+ ${line.text}\n`}</ins> : `  ${line.text}\n`))}
      </pre>
    </div>
  );
}

/** Change-history entries, newest first: who did what, when, and the fields that changed. */
export function HistoryList({ entries, names, action }: { entries: AuditEntry[]; names?: HistoryNames; action?: (entry: AuditEntry) => ComponentChildren }) {
  if (entries.length === 0) return <p>No changes recorded yet.</p>;
  return (
    <ol class="history">
      {entries.map((entry) => {
        const fields = changedFields(entry.before, entry.after);
        const environment = entry.environment_id ? (names?.environments.get(entry.environment_id) ?? entry.environment_id) : undefined;
        return (
          <li>
            <p>
              <strong>{actorName(entry, names)}</strong>: {actionWords(entry)}
              {environment ? ` in ${environment}` : ''} — {entry.resource_type.replace(/_/g, ' ')} <code>{entry.resource_id}</code>{' '}
              <time dateTime={new Date(entry.at_ms).toISOString()}>{formatTime(entry.at_ms)}</time> <span class="muted">{entry.action}</span>
            </p>
            {entry.comment && (
              <p class="comment" data-testid="history-comment">
                <span class="muted">Comment:</span> {entry.comment}
              </p>
            )}
            {fields.length > 0 && <p class="muted">Changed: {fields.join(', ')}</p>}
            {(entry.before !== undefined || entry.after !== undefined) && (
              <details>
                <summary>Before and after</summary>
                <BeforeAfter before={entry.before} after={entry.after} />
              </details>
            )}
            {action?.(entry)}
          </li>
        );
      })}
    </ol>
  );
}
