import { useEffect, useState } from 'preact/hooks';
import { apiPath, Api, type Session } from './api.ts';
import { AccountPage } from './pages/account.tsx';
import { AccountMenu } from './components/account-menu.tsx';
import { AdminPage } from './pages/admin.tsx';
import { ApiTokensPage } from './pages/api-tokens.tsx';
import { WebhooksPage } from './pages/webhooks.tsx';
import { ErrorMessage, Loading, useLoad } from './components/common.tsx';
import { ProtectedWriteDialog } from './components/protected-write-dialog.tsx';
import { CleanupPage } from './pages/cleanup.tsx';
import { ComparePage } from './pages/compare.tsx';
import { ChangeRequestsPage } from './pages/change-requests.tsx';
import { ExperimentPage } from './pages/experiment.tsx';
import { ExperimentsPage } from './pages/experiments.tsx';
import { FlagPage } from './pages/flag.tsx';
import { FlagsPage } from './pages/flags.tsx';
import { FlagsAsCodePage } from './pages/flags-as-code.tsx';
import { HistoryPage } from './pages/history.tsx';
import { MAILED_LINK_PAGES, MailedLinkPage } from './pages/mailed-link.tsx';
import { MembersPage } from './pages/members.tsx';
import { ProjectsPage } from './pages/projects.tsx';
import { SdkKeysPage } from './pages/sdk-keys.tsx';
import { SegmentsPage } from './pages/segments.tsx';
import { EventDefinitionsPage } from './pages/event-definitions.tsx';
import { SignInPage } from './pages/sign-in.tsx';
import { SingleSignOnPage } from './pages/single-sign-on.tsx';
import { SsoStart, useSsoReturn } from './sso.tsx';
import type { Environment, Org, Project } from './records.ts';
import { hrefOf, navigate, useRoute, type Route } from './router.ts';

/** What every page of a signed-in session gets. */
export interface Workspace {
  api: Api;
  session: Session;
  org: Org | undefined;
  projects: Project[];
  environments: Environment[];
  /** Reloads projects and environments (after creating one). */
  reloadWorkspace: () => void;
}

const api = new Api();

export function App() {
  const [session, setSession] = useState<Session | null>(api.current);
  useEffect(() => api.onSessionChange(setSession), []);
  const route = useRoute();
  const ssoReturn = useSsoReturn(api);
  if (MAILED_LINK_PAGES.has(route.page)) return <MailedLinkPage key={`${route.page}/${route.id ?? ''}`} api={api} route={route} />;
  if (route.page === 'sso' && route.id && !ssoReturn.busy && !session) return <SsoStart api={api} providerId={route.id} />;
  if (ssoReturn.busy) return <main class="sign-in" id="main"><p aria-busy="true">Signing you in…</p></main>;
  if (!session) return <SignInPage api={api} error={ssoReturn.error} orgId={route.page === 'sign-in' ? route.id : undefined} />;
  return <SignedIn session={session} />;
}

async function loadWorkspace(): Promise<{ orgs: Org[]; projects: Project[]; environments: Environment[]; systemAdmin: boolean }> {
  const session = api.current!;
  const { orgs } = await api.get<{ orgs: Org[] }>('/v1/auth/orgs');
  // The list leaves system orgs out: a session in none of the listed orgs is a system administrator's.
  if (!orgs.some((o) => o.org_id === session.org_id)) return { orgs, projects: [], environments: [], systemAdmin: true };
  const projects = await api.get<Project[]>(apiPath`/v1/management/orgs/${session.org_id}/projects`);
  const environments = (await Promise.all(projects.map((p) => api.get<Environment[]>(apiPath`/v1/management/projects/${p.project_id}/environments`)))).flat();
  // Which environments are protected: a write there asks first (protected-writes.ts).
  api.setEnvironments(environments);
  return { orgs, projects, environments, systemAdmin: false };
}

const ENVIRONMENT_PAGES: Array<[string, string]> = [
  ['flags', 'Flags'],
  ['segments', 'Segments'],
  ['compare', 'Compare and copy'],
  ['change-requests', 'Change requests'],
  ['experiments', 'Experiments'],
  ['events', 'Event definitions'],
  ['sdk-keys', 'SDK keys'],
  ['flags-as-code', 'Import and export'],
];
const ORG_PAGES: Array<[string, string]> = [
  ['projects', 'Projects'],
  ['members', 'Members'],
  ['history', 'Change history'],
  ['single-sign-on', 'Single sign-on'],
];
/** Org settings only org admins can use (the API refuses others anyway). */
const ORG_ADMIN_PAGES: Array<[string, string]> = [
  ['api-tokens', 'API tokens'],
  ['webhooks', 'Webhooks'],
];

function SignedIn({ session }: { session: Session }) {
  const route = useRoute();
  const workspace = useLoad(loadWorkspace, [session.org_id]);
  if (workspace.error) return <main class="page"><ErrorMessage error={workspace.error} /></main>;
  if (!workspace.data) return <main class="page"><Loading what="your organisation" /></main>;
  const { orgs, projects, environments, systemAdmin } = workspace.data;
  if (systemAdmin) {
    return route.page === 'account' ? (
      <main class="page" id="main">
        <p>
          <a href="#/">Back to administration</a>
        </p>
        <AccountPage api={api} session={session} />
      </main>
    ) : (
      <AdminPage api={api} />
    );
  }
  const org = orgs.find((o) => o.org_id === session.org_id);
  // The Cleanup page is a project's: the header and menu then name that project's first environment.
  const cleanupEnvironment = route.page === 'cleanup' && route.id ? environments.find((e) => e.project_id === route.id) : undefined;
  const envId = route.envId ?? cleanupEnvironment?.environment_id ?? environments[0]?.environment_id;
  const envProjectId = environments.find((e) => e.environment_id === envId)?.project_id;
  const context: Workspace = { api, session, org, projects, environments, reloadWorkspace: workspace.reload };
  const isEnvPage = route.envId !== undefined || route.page === 'home';
  return (
    <div class="shell">
      <a class="skip" href="#main">Skip to content</a>
      <header class="top">
        <strong class="brand">Switchyard</strong>
        <label>
          <span class="visually-hidden">Organisation</span>
          <select
            aria-label="Organisation"
            value={session.org_id}
            onChange={async (event) => {
              await api.switchOrg((event.target as HTMLSelectElement).value);
              navigate({ page: 'projects' });
            }}
          >
            {orgs.map((o) => (
              <option value={o.org_id}>{o.org_name}</option>
            ))}
          </select>
        </label>
        {environments.length > 0 && (
          <label>
            <span class="visually-hidden">Environment</span>
            <select
              aria-label="Environment"
              value={envId}
              onChange={(event) => {
                const next = (event.target as HTMLSelectElement).value;
                // On a project's Cleanup page: the other environment's project's.
                if (route.page === 'cleanup') return navigate({ page: 'cleanup', id: environments.find((e) => e.environment_id === next)?.project_id });
                // The same page in the other environment; a flag or experiment page keeps its id
                // only for flags (the same key exists in every environment of a project).
                const page = isEnvPage && route.envId ? route.page : 'flags';
                navigate({ envId: next, page, id: page === 'flags' ? route.id : undefined, tab: page === 'flags' ? route.tab : undefined });
              }}
            >
              {projects.map((p) => (
                <optgroup label={p.project_name}>
                  {environments
                    .filter((e) => e.project_id === p.project_id)
                    .map((e) => (
                      <option value={e.environment_id}>{`${p.project_name} / ${e.environment_name}`}</option>
                    ))}
                </optgroup>
              ))}
            </select>
          </label>
        )}
        <AccountMenu api={api} session={session} />
        <button type="button" class="link" onClick={() => api.logout()}>
          Sign out
        </button>
      </header>
      <nav class="side" aria-label="Pages">
        {envId && (
          <ul>
            {ENVIRONMENT_PAGES.map(([page, label]) => (
              <li>
                <a href={hrefOf({ envId, page })} aria-current={route.envId && route.page === page ? 'page' : undefined}>
                  {label}
                </a>
              </li>
            ))}
            {envProjectId && (
              <li>
                <a href={hrefOf({ page: 'cleanup', id: envProjectId })} aria-current={route.page === 'cleanup' ? 'page' : undefined}>
                  Flag cleanup
                </a>
              </li>
            )}
          </ul>
        )}
        <ul>
          {[...ORG_PAGES, ...(org?.role === 'org_admin' ? ORG_ADMIN_PAGES : [])].map(([page, label]) => (
            <li>
              <a href={hrefOf({ page })} aria-current={!route.envId && route.page === page ? 'page' : undefined}>
                {label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" class="page" tabIndex={-1}>
        <Page route={route} envId={envId} workspace={context} />
      </main>
      <ProtectedWriteDialog api={api} />
    </div>
  );
}

function Page({ route, envId, workspace }: { route: Route; envId: string | undefined; workspace: Workspace }) {
  const environment = workspace.environments.find((e) => e.environment_id === envId);
  if (route.page === 'projects' || ((route.page === 'home' || route.page === 'sign-in') && !environment)) return <ProjectsPage workspace={workspace} />;
  if (route.page === 'members') return <MembersPage workspace={workspace} />;
  if (route.page === 'api-tokens') return <ApiTokensPage workspace={workspace} />;
  if (route.page === 'webhooks') return <WebhooksPage workspace={workspace} />;
  if (route.page === 'account') return <AccountPage api={workspace.api} session={workspace.session} />;
  if (route.page === 'history') return <HistoryPage workspace={workspace} />;
  if (route.page === 'cleanup') return <CleanupPage key={route.id ?? ''} workspace={workspace} projectId={route.id} />;
  if (route.page === 'single-sign-on' || route.page === 'sso') return <SingleSignOnPage workspace={workspace} />;
  if (!environment) return <p class="error" role="alert">This environment does not exist or is not in this organisation.</p>;
  // No flag key or experiment id is "." or "..": as a path segment the browser would resolve them.
  if (route.id === '.' || route.id === '..') return <p class="error" role="alert">There is no such flag or experiment.</p>;
  const project = workspace.projects.find((p) => p.project_id === environment.project_id)!;
  const props = { workspace, environment, project };
  switch (route.page) {
    case 'flags':
    case 'home':
    case 'sign-in':
      return route.id ? <FlagPage {...props} flagKey={route.id} tab={route.tab} /> : <FlagsPage {...props} />;
    case 'segments':
      return <SegmentsPage {...props} />;
    case 'compare':
      return <ComparePage {...props} fromId={route.id} />;
    case 'change-requests':
      return <ChangeRequestsPage {...props} requestId={route.id} />;
    case 'experiments':
      return route.id ? <ExperimentPage {...props} experimentId={route.id} /> : <ExperimentsPage {...props} />;
    case 'events':
      return <EventDefinitionsPage {...props} />;
    case 'flags-as-code':
      return <FlagsAsCodePage {...props} />;
    case 'sdk-keys':
      // Keyed by environment: a key shown once in one environment is not shown on another's page.
      return <SdkKeysPage key={environment.environment_id} {...props} />;
    default:
      return <p>There is no page here. Choose one from the menu.</p>;
  }
}

/** Props of a page of one environment. */
export interface EnvironmentPageProps {
  workspace: Workspace;
  environment: Environment;
  project: Project;
}
