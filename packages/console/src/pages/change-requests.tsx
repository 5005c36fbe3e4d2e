import { apiPath } from '../api.ts';
import { useState } from 'preact/hooks';
import type { EnvironmentPageProps } from '../app.tsx';
import { ErrorMessage, Loading, formatTime, useLoad } from '../components/common.tsx';
import { BothTimes } from '../components/flag-schedules.tsx';
import { BeforeAfter } from '../components/history-list.tsx';
import type { ChangeRequest, ChangeRequestPreview } from '../records.ts';
import { hrefOf } from '../router.ts';

const STATUS_WORDS: Record<ChangeRequest['status'], string> = {
  draft: 'Draft',
  open: 'Waiting for review',
  rejected: 'Rejected',
  applied: 'Applied',
  cancelled: 'Cancelled',
  conflicted: 'Conflicted: edit it against the current versions',
  scheduled: 'Scheduled',
};

/**
 * Change requests of an environment (docs/workflow.md "Change requests and approvals"): the list, newest first, and one
 * request (`#/env/{env}/change-requests/{id}`) with the diff of each change (the preview: the state
 * now and after its operations), the reviews, approve / reject / comment, apply (now, or at a
 * time: "Apply at…", the time in local time and UTC side by side) and cancel.
 */
export function ChangeRequestsPage(props: EnvironmentPageProps & { requestId: string | undefined }) {
  return props.requestId ? <ChangeRequestView {...props} requestId={props.requestId} /> : <ChangeRequestList {...props} />;
}

function ChangeRequestList({ workspace, environment }: EnvironmentPageProps) {
  const list = useLoad(() => workspace.api.get<{ change_requests: ChangeRequest[] }>(apiPath`/v1/environments/${environment.environment_id}/change-requests`), [environment.environment_id]);
  return (
    <section>
      <h1>Change requests in {environment.environment_name}</h1>
      {list.loading && !list.data && <Loading what="change requests" />}
      <ErrorMessage error={list.error} />
      {list.data && list.data.change_requests.length === 0 && <p>No change requests yet. In an environment that requires approval, "Request change" on a flag's page opens one.</p>}
      <ul>
        {list.data?.change_requests.map((request) => (
          <li>
            <a href={hrefOf({ envId: environment.environment_id, page: 'change-requests', id: request.id })}>{request.title}</a> — {STATUS_WORDS[request.status]} · {request.approvals.length}/
            {request.approvals_needed} approvals · by {request.author.email ?? request.author.id} · {formatTime(request.created_at_ms)}
            {request.status === 'scheduled' && request.execute_at_ms !== null && (
              <>
                {' '}
                · applies at <BothTimes ms={request.execute_at_ms} />
              </>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}

function ChangeRequestView({ workspace, environment, requestId }: EnvironmentPageProps & { requestId: string }) {
  const base = apiPath`/v1/environments/${environment.environment_id}/change-requests/${requestId}`;
  const request = useLoad(() => workspace.api.get<ChangeRequest>(base), [base]);
  const preview = useLoad(() => workspace.api.get<ChangeRequestPreview>(`${base}/preview`), [base, request.data?.revision, request.data?.status]);
  const [comment, setComment] = useState('');
  const [error, setError] = useState<unknown>(undefined);
  const [done, setDone] = useState('');
  const [busy, setBusy] = useState(false);
  // `YYYY-MM-DDTHH:MM` of the datetime-local input, read as the viewer's local time.
  const [when, setWhen] = useState('');
  const whenMs = when === '' ? Number.NaN : new Date(when).getTime();
  const act = async (what: string, run: () => Promise<ChangeRequest>) => {
    setBusy(true);
    setError(undefined);
    setDone('');
    try {
      request.set(await run());
      setDone(what);
      setComment('');
    } catch (caught) {
      setError(caught);
      // An apply that found a conflict marked the request: show it as it is now.
      request.reload();
    } finally {
      setBusy(false);
    }
  };
  const data = request.data;
  if (!data) return request.error ? <ErrorMessage error={request.error} /> : <Loading what="the change request" />;
  const review = (verdict: 'approve' | 'reject' | 'comment', what: string) =>
    act(what, () => workspace.api.post<ChangeRequest>(`${base}/reviews`, { verdict, content_hash: data.content_hash, ...(comment.trim() === '' ? {} : { comment: comment.trim() }) }));
  const open = data.status === 'open' || data.status === 'rejected';
  return (
    <section>
      <p>
        <a href={hrefOf({ envId: environment.environment_id, page: 'change-requests' })}>All change requests</a>
      </p>
      <h1>{data.title}</h1>
      <p data-testid="change-request-status">
        {STATUS_WORDS[data.status]} · {data.approvals.length} of {data.approvals_needed} approvals · by {data.author.email ?? data.author.id}
      </p>
      {data.description && <p>{data.description}</p>}
      {data.conflict && (
        <p class="error" role="alert">
          {data.conflict}
        </p>
      )}
      {data.status === 'scheduled' && data.execute_at_ms !== null && (
        <p data-testid="change-request-scheduled">
          Scheduled to apply at <BothTimes ms={data.execute_at_ms} />
          {data.scheduled_by ? ` by ${data.scheduled_by.email ?? data.scheduled_by.name ?? data.scheduled_by.id}` : ''}. Cancel it to change or review it again.
        </p>
      )}
      {data.status !== 'scheduled' && data.execute_at_ms !== null && (
        <p class="muted">
          It was scheduled for <BothTimes ms={data.execute_at_ms} />.
        </p>
      )}
      {data.applied_by && <p>Applied; approved by {data.applied_by.approvers.join(', ') || 'nobody (no approval required)'}.</p>}
      <h2>Changes</h2>
      {preview.data?.changes.map((change) => (
        <article class="card" data-testid={`change-${change.flag_key ?? change.segment_key}`}>
          <h3>
            {change.flag_key ? `Flag ${change.flag_key}` : `Segment ${change.segment_key}`} (made against version {change.version_made_against}, now {change.current_version})
          </h3>
          {change.problem && <p class="error">{change.problem}</p>}
          <BeforeAfter before={change.before} after={change.after} />
        </article>
      ))}
      <ErrorMessage error={preview.error} />
      <h2>Reviews</h2>
      <ul>
        {data.reviews.map((r) => (
          <li>
            {r.reviewer_email ?? r.reviewer_id}: {r.verdict}
            {r.comment ? ` — ${r.comment}` : ''} · {formatTime(r.at_ms)}
            {r.content_hash !== data.content_hash ? ' (of earlier content)' : ''}
          </li>
        ))}
      </ul>
      {open && (
        <div class="row">
          <label>
            Review comment
            <input value={comment} onInput={(event) => setComment((event.target as HTMLInputElement).value)} maxLength={2000} />
          </label>
          <button type="button" disabled={busy} onClick={() => review('approve', 'Approved.')}>
            Approve
          </button>
          <button type="button" disabled={busy} onClick={() => review('reject', 'Rejected.')}>
            Reject
          </button>
          <button type="button" disabled={busy || comment.trim() === ''} onClick={() => review('comment', 'Comment added.')}>
            Comment
          </button>
          <button type="button" disabled={busy} onClick={() => act('Applied.', () => workspace.api.post<ChangeRequest>(`${base}/apply`))}>
            Apply
          </button>
        </div>
      )}
      {open && (
        <form
          class="row"
          aria-label="Apply at a time"
          onSubmit={(event) => {
            event.preventDefault();
            void act('Scheduled.', () => workspace.api.post<ChangeRequest>(`${base}/apply`, { execute_at_ms: whenMs }));
          }}
        >
          <label>
            Apply at… (your local time) <input type="datetime-local" required value={when} onInput={(event) => setWhen((event.target as HTMLInputElement).value)} />
          </label>
          {!Number.isNaN(whenMs) && (
            <span class="muted">
              That is <BothTimes ms={whenMs} />.
            </span>
          )}
          <button type="submit" disabled={busy || Number.isNaN(whenMs)}>
            Schedule
          </button>
        </form>
      )}
      {(open || data.status === 'draft' || data.status === 'conflicted' || data.status === 'scheduled') && (
        <button type="button" disabled={busy} onClick={() => act('Cancelled.', () => workspace.api.post<ChangeRequest>(`${base}/cancel`))}>
          Cancel request
        </button>
      )}
      <span role="status">{done}</span>
      <ErrorMessage error={error} />
    </section>
  );
}
