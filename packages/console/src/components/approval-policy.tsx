import { apiPath } from '../api.ts';
import { useState } from 'preact/hooks';
import type { Workspace } from '../app.tsx';
import type { ApprovalPolicy, Environment } from '../records.ts';
import { ErrorMessage, useLoad } from './common.tsx';

type Flag = 'required' | 'allow_self_approval' | 'kill_switch_exempt';
const LABELS: Record<Flag, string> = {
  required: 'Require approval',
  allow_self_approval: 'Authors may approve their own',
  kill_switch_exempt: 'Turning a flag off needs no approval',
};

/**
 * An environment's approval policy (docs/workflow.md "Change requests and approvals"): with "Require approval", changes
 * of its flags and segments go through change requests. Read with GET and saved with PUT
 * /v1/management/environments/{id}/approval-policy (admins of the environment).
 */
export function ApprovalPolicyControls({ workspace, environment, projectName }: { workspace: Workspace; environment: Environment; projectName: string }) {
  const path = apiPath`/v1/management/environments/${environment.environment_id}/approval-policy`;
  const policy = useLoad(() => workspace.api.get<ApprovalPolicy>(path), [environment.environment_id]);
  const [error, setError] = useState<unknown>(undefined);
  const [done, setDone] = useState('');
  const [busy, setBusy] = useState(false);
  const save = async (change: Partial<ApprovalPolicy>) => {
    setBusy(true);
    setError(undefined);
    setDone('');
    try {
      const saved = await workspace.api.put<ApprovalPolicy>(path, change);
      policy.set(saved);
      setDone(`${environment.environment_name}: ${saved.required ? `changes need ${saved.min_approvals} approval${saved.min_approvals === 1 ? '' : 's'}` : 'changes need no approval'}.`);
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
  const current = policy.data;
  return (
    <div class="row" data-testid={`approval-policy-${environment.environment_id}`}>
      {current &&
        (['required', 'allow_self_approval', 'kill_switch_exempt'] as Flag[]).map((flag) => (
          <label class="switch">
            <input
              type="checkbox"
              role="switch"
              checked={current[flag]}
              disabled={busy || (flag !== 'required' && !current.required)}
              aria-label={`${LABELS[flag]}: ${projectName} / ${environment.environment_name}`}
              onChange={() => save({ [flag]: !current[flag] })}
            />
            <span aria-hidden="true">{LABELS[flag]}</span>
          </label>
        ))}
      {current?.required && (
        <label>
          Approvals needed
          <select
            aria-label={`Approvals needed: ${projectName} / ${environment.environment_name}`}
            value={String(current.min_approvals)}
            disabled={busy}
            onChange={(event) => save({ min_approvals: Number((event.target as HTMLSelectElement).value) })}
          >
            {[1, 2, 3, 4, 5].map((n) => (
              <option value={String(n)}>{n}</option>
            ))}
          </select>
        </label>
      )}
      <span role="status">{done}</span>
      <ErrorMessage error={error ?? policy.error} />
    </div>
  );
}
