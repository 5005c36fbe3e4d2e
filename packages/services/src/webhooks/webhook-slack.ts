import type { AuditEntryRecord } from '../audit/audit-log-service.ts';

/** The standard payload (docs/workflow.md "Webhooks"): what every format is rendered from. */
export interface WebhookPayload {
  type: string;
  /** ISO 8601, the entry's time. */
  timestamp: string;
  data: AuditEntryRecord;
}

/** Slack's mrkdwn escapes (&, <, >): names and keys are the writers' text. */
const escape = (text: string): string => text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');

const actorText = (actor: AuditEntryRecord['actor']): string => actor.email ?? actor.name ?? `${actor.type} ${actor.id}`;

/**
 * Where a reader sees the change in the console: the flag's History tab in the entry's environment
 * for a flag entry, else the org's change history. `publicUrl`: PUBLIC_URL (no trailing slash).
 */
export function consoleLinkOf(entry: AuditEntryRecord, publicUrl: string): string {
  const base = publicUrl.replace(/\/+$/, '');
  if (entry.resource_type === 'flag' && entry.environment_id !== undefined) {
    return `${base}/#/env/${encodeURIComponent(entry.environment_id)}/flags/${encodeURIComponent(entry.resource_id)}/history`;
  }
  return `${base}/#/history`;
}

/**
 * A Slack message for an entry (`format: "slack"`, for Slack's incoming webhooks): a one-line
 * `text` (notifications, clients without blocks) and blocks with who did what to which resource,
 * the comment when there is one, and a link to the console's history.
 */
export function slackMessage(payload: WebhookPayload, publicUrl: string): { text: string; blocks: unknown[] } {
  const entry = payload.data;
  const link = consoleLinkOf(entry, publicUrl);
  const what = `*${escape(entry.action)}* on ${escape(entry.resource_type)} \`${escape(entry.resource_id)}\``;
  const who = escape(actorText(entry.actor));
  const text = `${who}: ${entry.action} on ${entry.resource_type} ${entry.resource_id}`;
  const context = [`by ${who}`, payload.timestamp, ...(entry.environment_id === undefined ? [] : [`environment ${escape(entry.environment_id)}`])];
  const blocks: unknown[] = [
    { type: 'section', text: { type: 'mrkdwn', text: `${what}\n<${link}|View the history in Switchyard>` } },
    { type: 'context', elements: [{ type: 'mrkdwn', text: context.join(' · ') }] },
  ];
  if (entry.comment !== undefined) blocks.push({ type: 'section', text: { type: 'mrkdwn', text: `> ${escape(entry.comment).slice(0, 2_000)}` } });
  return { text: escape(text), blocks };
}
