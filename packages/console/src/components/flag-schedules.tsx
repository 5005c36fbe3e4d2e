import { useState } from 'preact/hooks';
import type { Api } from '../api.ts';
import { ConfirmDialog, ErrorMessage, Loading, useLoad } from './common.tsx';
import type { AuditEntry, Flag } from '../records.ts';
import { hrefOf } from '../router.ts';

/** A scheduled change as GET .../scheduled-changes answers it (docs/workflow.md "Scheduled changes"). */
export interface ScheduledChangeRecord {
  id: string;
  flag_key: string;
  execute_at_ms: number;
  operations: Array<Record<string, unknown> & { op: string }>;
  comment: string;
  status: 'pending' | 'applied' | 'failed' | 'cancelled';
  reason: string | null;
  created_by: { type: string; id: string; email?: string; name?: string };
  applied_at_ms: number | null;
  version: number;
}

type ScheduleApi = Pick<Api, 'get' | 'post' | 'delete'>;

/** A time in the viewer's local time and in UTC, side by side. */
export function BothTimes({ ms }: { ms: number }) {
  const date = new Date(ms);
  const utc = date.toISOString().replace('T', ' ').slice(0, 16);
  return (
    <time dateTime={date.toISOString()}>
      {date.toLocaleString()} <span class="muted">({utc} UTC)</span>
    </time>
  );
}

/** What an operation does, in words. */
function operationWords(operation: ScheduledChangeRecord['operations'][number]): string {
  switch (operation.op) {
    case 'set_enabled':
      return operation.enabled ? 'turn on' : 'turn off';
    case 'set_off_variant':
      return `serve ${String(operation.variant_key ?? 'nothing')} when off`;
    case 'set_rule_serve': {
      const allocation = operation.allocation as { buckets?: Array<{ variant_key: string; weight_milli: number }> } | undefined;
      const split = allocation?.buckets?.map((bucket) => `${bucket.variant_key} ${bucket.weight_milli / 1000}%`).join(', ');
      return `rule ${String(operation.rule_id)} serves ${split ?? String(operation.variant_key)}`;
    }
    case 'add_rule':
      return `add rule ${String((operation.rule as { id?: string } | undefined)?.id ?? '')}`;
    case 'remove_rule':
      return `remove rule ${String(operation.rule_id)}`;
    case 'set_prerequisites': {
      const prerequisites = Array.isArray(operation.prerequisites) ? (operation.prerequisites as Array<{ flag_key?: string }>) : [];
      return prerequisites.length === 0 ? 'no prerequisites' : `prerequisites ${prerequisites.map((p) => String(p.flag_key)).join(', ')}`;
    }
    default:
      return 'replace the rules';
  }
}

/** `YYYY-MM-DDTHH:MM` of a datetime-local input, read as local time. */
const fromLocalInput = (value: string): number => new Date(value).getTime();

/**
 * The flag page's Schedule tab: the flag's scheduled changes in this environment (times in local
 * time and UTC side by side), a form for the common ones (turn on or off at a time, change a
 * rule's rollout), and cancel for pending ones.
 */
export function FlagSchedules({ path, flag, api, environmentName }: { path: string; flag: Flag; api: ScheduleApi; environmentName: string }) {
  const schedules = useLoad(() => api.get<ScheduledChangeRecord[]>(`${path}/scheduled-changes?limit=200`), [path]);
  const [kind, setKind] = useState<'on' | 'off' | 'rollout'>('on');
  const [when, setWhen] = useState('');
  const [ruleId, setRuleId] = useState('');
  const [percent, setPercent] = useState('50');
  const [comment, setComment] = useState('');
  const [error, setError] = useState<unknown>(undefined);
  const [status, setStatus] = useState('');
  const [cancelling, setCancelling] = useState<string | null>(null);
  const split = flag.rules.filter((rule) => rule.allocation);
  const [first, second] = flag.variants;

  const operations = (): unknown[] => {
    if (kind !== 'rollout') return [{ op: 'set_enabled', enabled: kind === 'on' }];
    const rule = split.find((r) => r.id === ruleId) ?? split[0];
    const share = Math.round(Number(percent) * 1000);
    const existing = rule?.allocation?.buckets ?? [];
    const onKey = existing[0]?.variant_key ?? first?.key ?? '';
    const offKey = existing[1]?.variant_key ?? second?.key ?? '';
    return [
      {
        op: 'set_rule_serve',
        rule_id: rule?.id ?? '',
        allocation: { ...(rule?.allocation ?? {}), buckets: [{ variant_key: onKey, weight_milli: share }, { variant_key: offKey, weight_milli: 100_000 - share }] },
      },
    ];
  };

  return (
    <>
      <h2>Scheduled changes</h2>
      <p class="muted">Changes to this flag in {environmentName} that the server applies at a set time, checked now and again when they apply.</p>
      <form
        aria-label="Schedule a change"
        onSubmit={async (event) => {
          event.preventDefault();
          setError(undefined);
          setStatus('');
          try {
            const made = await api.post<ScheduledChangeRecord & { contending: ScheduledChangeRecord[] }>(`${path}/scheduled-changes`, { execute_at_ms: fromLocalInput(when), operations: operations(), comment });
            setStatus(made.contending.length > 0 ? `Scheduled. It contends with ${made.contending.length} other pending change(s) of this flag.` : 'Scheduled.');
            schedules.reload();
          } catch (failure) {
            setError(failure);
          }
        }}
      >
        <label>
          Change{' '}
          <select value={kind} onChange={(event) => setKind((event.target as HTMLSelectElement).value as typeof kind)}>
            <option value="on">Turn on</option>
            <option value="off">Turn off</option>
            {split.length > 0 && <option value="rollout">Change a rule's rollout</option>}
          </select>
        </label>
        {kind === 'rollout' && (
          <>
            <label>
              Rule{' '}
              <select value={ruleId} onChange={(event) => setRuleId((event.target as HTMLSelectElement).value)}>
                {split.map((rule) => (
                  <option value={rule.id}>{rule.id}</option>
                ))}
              </select>
            </label>
            <label>
              Percent to the first variant <input type="number" min="0" max="100" step="0.001" value={percent} onInput={(event) => setPercent((event.target as HTMLInputElement).value)} />
            </label>
          </>
        )}
        <label>
          At (your local time) <input type="datetime-local" required value={when} onInput={(event) => setWhen((event.target as HTMLInputElement).value)} />
        </label>
        {when && !Number.isNaN(fromLocalInput(when)) && (
          <p class="muted">
            That is <BothTimes ms={fromLocalInput(when)} />.
          </p>
        )}
        <label>
          Comment <input type="text" maxLength={2000} value={comment} onInput={(event) => setComment((event.target as HTMLInputElement).value)} />
        </label>
        <button type="submit">Schedule</button>
        <ErrorMessage error={error} />
        <p role="status">{status}</p>
      </form>

      <ErrorMessage error={schedules.error} />
      {!schedules.data && !schedules.error && <Loading what="the scheduled changes" />}
      {schedules.data && schedules.data.length === 0 && <p>No scheduled changes.</p>}
      {schedules.data && schedules.data.length > 0 && (
        <table aria-label="Scheduled changes">
          <thead>
            <tr>
              <th>When</th>
              <th>Change</th>
              <th>Status</th>
              <th>By</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {schedules.data.map((change) => (
              <tr data-status={change.status}>
                <td>
                  <BothTimes ms={change.execute_at_ms} />
                  {change.applied_at_ms !== null && change.applied_at_ms > change.execute_at_ms + 60_000 && (
                    <p class="muted">
                      applied late, at <BothTimes ms={change.applied_at_ms} />
                    </p>
                  )}
                </td>
                <td>
                  {change.operations.map(operationWords).join('; ')}
                  {change.comment && <p class="muted">{change.comment}</p>}
                </td>
                <td>
                  {change.status}
                  {change.reason && <p class="muted">{change.reason}</p>}
                </td>
                <td>{change.created_by.email ?? change.created_by.name ?? change.created_by.id}</td>
                <td>
                  {change.status === 'pending' &&
                    (cancelling === change.id ? (
                      <ConfirmDialog
                        key={change.id}
                        titleId={`cancel-${change.id}`}
                        question="Cancel this scheduled change?"
                        confirmLabel="Cancel the change"
                        onConfirm={async () => {
                          await api.delete(`${path}/scheduled-changes/${change.id}`);
                          setCancelling(null);
                          schedules.reload();
                        }}
                        onCancel={() => setCancelling(null)}
                      />
                    ) : (
                      <button type="button" onClick={() => setCancelling(change.id)}>
                        Cancel
                      </button>
                    ))}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

/**
 * The History tab's Revert on an entry of this flag in this environment: after a confirmation, the
 * entry's before state (enabled, off variant, rules, prerequisites) is applied as a new version. In
 * an environment that requires approval the server opens a change request instead (202): the
 * button then says so and links to it.
 */
export function RevertButton({ entry, path, environmentId, api, onReverted }: { entry: AuditEntry; path: string; environmentId: string; api: Pick<Api, 'post'>; onReverted: (flag: Flag) => void }) {
  const [asking, setAsking] = useState(false);
  const [opened, setOpened] = useState<{ id: string; title: string } | undefined>(undefined);
  if (entry.resource_type !== 'flag' || entry.environment_id !== environmentId || entry.before === undefined || entry.before === null) return null;
  if (opened) {
    return (
      <p role="status">
        This environment requires approval: a change request was opened,{' '}
        <a href={hrefOf({ envId: environmentId, page: 'change-requests', id: opened.id })}>{opened.title}</a>.
      </p>
    );
  }
  if (!asking) {
    return (
      <button type="button" onClick={() => setAsking(true)}>
        Revert
      </button>
    );
  }
  return (
    <ConfirmDialog
      key={entry.id}
      titleId={`revert-${entry.id}`}
      question="Put this flag's targeting here (on/off, off variant, rules, prerequisites) back to how it was before this change?"
      confirmLabel="Revert"
      onConfirm={async () => {
        const answer = await api.post<Flag | { change_request: { id: string; title: string } }>(`${path}/revert`, { audit_entry_id: entry.id });
        setAsking(false);
        if ('change_request' in answer) setOpened({ id: answer.change_request.id, title: answer.change_request.title });
        else onReverted(answer);
      }}
      onCancel={() => setAsking(false)}
    />
  );
}
