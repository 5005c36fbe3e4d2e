import { useEffect, useState } from 'preact/hooks';
import { apiPath, ApiError, describeError } from '../api.ts';
import type { Workspace } from '../app.tsx';
import { ErrorMessage, Loading, useLoad } from '../components/common.tsx';
import { LastEvaluated, StatusBadge } from '../components/flag-status.tsx';
import { groupByStage, lastEvaluatedIn, STAGE_ORDER, STAGE_WORDS, stageCounts, THRESHOLD_FIELDS, thresholdDraft, thresholdNamedBy, thresholdsBody, type StageFilter, type ThresholdDraft, type ThresholdName } from '../components/lifecycle-reading.ts';
import type { FlagLifecycle, LifecycleThresholds, Project } from '../records.ts';
import { hrefOf, navigate } from '../router.ts';

/**
 * A project's flag cleanup (`#/cleanup/{project_id}`, docs/insights.md "Lifecycle stages"): the
 * flags ready for code removal and ready to archive (or one stage), each with its status in every
 * environment that counts, its lifetime and its last evaluation there; the thresholds, which org
 * admins change here.
 */
export function CleanupPage({ workspace, projectId }: { workspace: Workspace; projectId: string | undefined }) {
  const { api, projects, environments } = workspace;
  const project = projects.find((p) => p.project_id === projectId) ?? (projectId === undefined ? projects[0] : undefined);
  const [filter, setFilter] = useState<StageFilter>('cleanup');
  const lifecycle = useLoad(async () => (project ? api.get<FlagLifecycle>(apiPath`/v1/projects/${project.project_id}/flag-lifecycle`) : undefined), [project?.project_id]);
  if (!project) return <p class="error" role="alert">This project does not exist or is not in this organisation.</p>;
  const answer = lifecycle.data;
  const counted = answer?.environments.filter((e) => e.counted) ?? [];
  // A flag's link opens it in the first environment that counts (the same key exists in every one).
  const linkEnvironment = counted[0]?.id ?? environments.find((e) => e.project_id === project.project_id)?.environment_id;
  const counts = answer ? stageCounts(answer.flags) : undefined;
  return (
    <section>
      <h1>Flag cleanup in {project.project_name}</h1>
      {projects.length > 1 && (
        <label class="search">
          Project
          <select value={project.project_id} onChange={(e) => navigate({ page: 'cleanup', id: (e.target as HTMLSelectElement).value })}>
            {projects.map((p) => (
              <option value={p.project_id}>{p.project_name}</option>
            ))}
          </select>
        </label>
      )}
      <p class="muted">
        Which flags can go, from their evaluations and configuration in the environments that count. Temporary flags launched or unused everywhere that counts are ready for code removal; flags not evaluated for long are ready to archive.
      </p>
      <ErrorMessage error={lifecycle.error} />
      {!answer && !lifecycle.error && <Loading what="the flags' lifecycle" />}
      {answer && (
        <>
          <p data-testid="counted-environments">
            {counted.length === 0 ? 'No environment counts.' : `Environments that count: ${counted.map((e) => e.name).join(', ')}`}
            {answer.environments.some((e) => e.critical) ? ' (the critical ones).' : ' (all of them: none is critical).'}
            {counted
              .filter((e) => !e.reports_evaluations)
              .map((e) => (
                <span class="muted"> {e.name} reports no evaluations: its flags' configuration decides there.</span>
              ))}
          </p>
          {answer.truncated && (
            <p class="warning" role="note">
              This project has more than 10,000 flags: only the first 10,000 by key are listed here.
            </p>
          )}
          <label class="search">
            Show
            <select value={filter} onChange={(e) => setFilter((e.target as HTMLSelectElement).value as StageFilter)}>
              <option value="cleanup">Ready for code removal and ready to archive</option>
              {STAGE_ORDER.map((stage) => (
                <option value={stage}>{`${STAGE_WORDS[stage].word} (${counts![stage]})`}</option>
              ))}
            </select>
          </label>
          {groupByStage(answer.flags, filter).map((group) => (
            <section aria-labelledby={`stage-${group.stage}`}>
              <h2 id={`stage-${group.stage}`}>
                {STAGE_WORDS[group.stage].word} ({group.flags.length})
              </h2>
              <p class="muted">{STAGE_WORDS[group.stage].meaning}.</p>
              {group.flags.length === 0 ? (
                <p>No flag.</p>
              ) : (
                <table class="list" aria-label={STAGE_WORDS[group.stage].word}>
                  <thead>
                    <tr>
                      <th scope="col">Flag</th>
                      <th scope="col">Lifetime</th>
                      {counted.map((e) => (
                        <th scope="col">Status in {e.name}</th>
                      ))}
                      <th scope="col">Last evaluated</th>
                    </tr>
                  </thead>
                  <tbody>
                    {group.flags.map((flag) => (
                      <tr>
                        <th scope="row">
                          {linkEnvironment ? <a href={hrefOf({ envId: linkEnvironment, page: 'flags', id: flag.key, tab: 'insights' })}>{flag.key}</a> : flag.key}
                          {flag.archived && group.stage !== 'archived' ? ' (archived)' : ''}
                        </th>
                        <td>{flag.lifetime}</td>
                        {counted.map((e) => (
                          <td>
                            <StatusBadge status={flag.environments[e.id]?.status} />
                          </td>
                        ))}
                        <td>
                          <LastEvaluated at={lastEvaluatedIn(flag, counted.map((e) => e.id))} />
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
            </section>
          ))}
          <Thresholds workspace={workspace} project={project} saved={answer.thresholds} onSaved={lifecycle.reload} />
        </>
      )}
    </section>
  );
}

/** The project's thresholds: shown to everyone, a form for org admins (the API refuses others). */
function Thresholds({ workspace, project, saved, onSaved }: { workspace: Workspace; project: Project; saved: LifecycleThresholds; onSaved: () => void }) {
  const admin = workspace.org?.role === 'org_admin';
  const [draft, setDraft] = useState<ThresholdDraft>(() => thresholdDraft(saved));
  const [errors, setErrors] = useState<Partial<Record<ThresholdName, string>>>({});
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState('');
  const savedKey = JSON.stringify(saved);
  useEffect(() => setDraft(thresholdDraft(saved)), [savedKey]);
  if (!admin) {
    return (
      <section aria-labelledby="thresholds">
        <h2 id="thresholds">Thresholds</h2>
        <dl class="thresholds">
          {THRESHOLD_FIELDS.map((field) => (
            <>
              <dt>{field.label}</dt>
              <dd>{saved[field.name]}</dd>
            </>
          ))}
        </dl>
        <p class="muted">Org admins change them.</p>
      </section>
    );
  }
  return (
    <section aria-labelledby="thresholds">
      <h2 id="thresholds">Thresholds</h2>
      <form
        aria-label="Lifecycle thresholds"
        class="thresholds-form"
        noValidate
        onSubmit={async (event) => {
          event.preventDefault();
          setError(undefined);
          setDone('');
          const { body, errors: found, nothing } = thresholdsBody(draft, saved);
          setErrors(found);
          if (nothing) return setDone('Nothing changed.');
          if (!body) return;
          setBusy(true);
          try {
            await workspace.api.patch(apiPath`/v1/management/projects/${project.project_id}`, body);
            setDone('Thresholds saved.');
            onSaved();
          } catch (caught) {
            // A refusal naming a threshold is shown at its field; any other under the form.
            const field = caught instanceof ApiError ? thresholdNamedBy(caught.message) : undefined;
            if (field) setErrors({ [field]: describeError(caught) });
            else setError(caught);
          } finally {
            setBusy(false);
          }
        }}
      >
        <fieldset disabled={busy}>
          {THRESHOLD_FIELDS.map((field) => (
            <div class="field">
              <label>
                {field.label}
                <input
                  type="number"
                  inputMode="numeric"
                  name={field.name}
                  value={draft[field.name]}
                  aria-invalid={errors[field.name] !== undefined}
                  aria-describedby={`${field.name}-help${errors[field.name] ? ` ${field.name}-error` : ''}`}
                  onInput={(e) => {
                    const value = (e.target as HTMLInputElement).value;
                    setDraft((previous) => ({ ...previous, [field.name]: value }));
                  }}
                />
              </label>
              <div class="muted" id={`${field.name}-help`}>
                {field.help}
              </div>
              {errors[field.name] && (
                <div class="error" id={`${field.name}-error`} role="alert">
                  {errors[field.name]}
                </div>
              )}
            </div>
          ))}
          <button type="submit">Save thresholds</button>
        </fieldset>
        <ErrorMessage error={error} />
        <p role="status">{done}</p>
      </form>
    </section>
  );
}
