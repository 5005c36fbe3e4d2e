import { apiPath } from '../api.ts';
import { useState } from 'preact/hooks';
import type { Workspace } from '../app.tsx';
import { ActionForm, ErrorMessage } from '../components/common.tsx';
import { EnvironmentProtection } from '../components/environment-protection.tsx';
import { ApprovalPolicyControls } from '../components/approval-policy.tsx';
import type { Environment, Project } from '../records.ts';
import { hrefOf, navigate } from '../router.ts';

/** The environments the new-project form offers (peers create these two; the names are editable). */
const DEFAULT_ENVIRONMENTS = ['development', 'production'] as const;

export function ProjectsPage({ workspace }: { workspace: Workspace }) {
  const { api, projects, environments, session } = workspace;
  const [name, setName] = useState('');
  const [environmentNames, setEnvironmentNames] = useState<string[]>([...DEFAULT_ENVIRONMENTS]);
  return (
    <section>
      <h1>Projects</h1>
      {projects.length === 0 && <p>No project yet. Create one: it comes with its environments (development and production unless you rename them); flags live in environments.</p>}
      {projects.map((project) => (
        <ProjectCard workspace={workspace} project={project} environments={environments.filter((e) => e.project_id === project.project_id)} />
      ))}
      <h2>New project</h2>
      <ActionForm
        label="New project"
        onSubmit={async () => {
          // The API makes a project and each environment with its own call; a failure after the
          // project exists leaves it listed above, where "Add environment" finishes the job.
          const project = await api.post<Project>(apiPath`/v1/management/orgs/${session.org_id}/projects`, { name });
          const made: Environment[] = [];
          try {
            for (const environmentName of environmentNames.map((entry) => entry.trim()).filter((entry) => entry !== '')) {
              made.push(await api.post<Environment>(apiPath`/v1/management/projects/${project.project_id}/environments`, { name: environmentName }));
            }
          } finally {
            setName('');
            setEnvironmentNames([...DEFAULT_ENVIRONMENTS]);
            workspace.reloadWorkspace();
          }
          // Straight to the first environment's flags: the next thing to do there.
          if (made[0]) navigate({ envId: made[0].environment_id, page: 'flags' });
        }}
      >
        <label>
          Project name
          <input required value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
        </label>
        <fieldset class="inline">
          <legend>Environments it starts with (leave a name empty to skip it)</legend>
          {environmentNames.map((environmentName, index) => (
            <label>
              {`Environment ${index + 1}`}
              <input
                value={environmentName}
                onInput={(e) => {
                  const value = (e.target as HTMLInputElement).value;
                  setEnvironmentNames((previous) => previous.map((entry, at) => (at === index ? value : entry)));
                }}
              />
            </label>
          ))}
        </fieldset>
        <button type="submit">Create project</button>
      </ActionForm>
    </section>
  );
}

function ProjectCard({ workspace, project, environments }: { workspace: Workspace; project: Project; environments: Environment[] }) {
  const [name, setName] = useState('');
  return (
    <article class="card">
      <h2>{project.project_name}</h2>
      <p>
        <a href={hrefOf({ page: 'cleanup', id: project.project_id })}>Flag cleanup</a>: flags ready for code removal or to archive, and the thresholds that decide it.
      </p>
      <ClientVisibleDefault workspace={workspace} project={project} />
      <ul>
        {environments.map((e) => (
          <li>
            <a href={hrefOf({ envId: e.environment_id, page: 'flags' })}>{e.environment_name}</a>
            <EnvironmentProtection workspace={workspace} environment={e} projectName={project.project_name} />
            <ApprovalPolicyControls workspace={workspace} environment={e} projectName={project.project_name} />
          </li>
        ))}
      </ul>
      <ActionForm
        label={`New environment in ${project.project_name}`}
        class="inline"
        onSubmit={async () => {
          const created = await workspace.api.post<Environment>(apiPath`/v1/management/projects/${project.project_id}/environments`, { name });
          setName('');
          workspace.reloadWorkspace();
          // Straight to the new environment's flags: the next thing to do there.
          navigate({ envId: created.environment_id, page: 'flags' });
        }}
      >
        <label>
          Environment name
          <input required value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit">Add environment</button>
      </ActionForm>
    </article>
  );
}

/**
 * The project's `client_visible_default` (docs/client-side.md "What a client sees"): whether a new
 * flag starts visible to client keys. Flags that exist keep their own setting.
 */
function ClientVisibleDefault({ workspace, project }: { workspace: Workspace; project: Project }) {
  const [saved, setSaved] = useState<boolean | undefined>(undefined);
  const [pending, setPending] = useState<boolean | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [done, setDone] = useState('');
  const current = saved ?? project.client_visible_default === true;
  return (
    <>
      <label class="switch">
        <input
          type="checkbox"
          role="switch"
          checked={pending ?? current}
          aria-busy={pending !== undefined}
          aria-label={`New flags in ${project.project_name} start visible to client keys`}
          onChange={async () => {
            if (pending !== undefined) return;
            const target = !current;
            setPending(target);
            setError(undefined);
            setDone('');
            try {
              const updated = await workspace.api.patch<Project | undefined>(apiPath`/v1/management/projects/${project.project_id}`, { client_visible_default: target });
              setSaved(typeof updated?.client_visible_default === 'boolean' ? updated.client_visible_default : target);
              setDone(target ? 'New flags will start visible to client keys.' : 'New flags will start hidden from client keys.');
              workspace.reloadWorkspace();
            } catch (caught) {
              setError(caught);
            } finally {
              setPending(undefined);
            }
          }}
        />
        <span aria-hidden="true">New flags start visible to client keys</span>
        <span role="status">{done}</span>
      </label>
      <ErrorMessage error={error} />
    </>
  );
}
