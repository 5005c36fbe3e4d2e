/**
 * The console's client of the REST API (same origin). Holds the session in sessionStorage (one
 * tab's sign-in; closing the tab ends it), refreshes the access token once on a 401, turns
 * every error answer into an ApiError carrying the API's `{error, code}`, and asks before a write
 * in a protected environment (protected-writes.ts).
 */
import type { Environment } from './records.ts';
import { environmentIdOfPath, intentHeaders, protectionAskedBy, protectionOf, type ProtectedWrite, type WriteGuard, type WriteIntent } from './protected-writes.ts';

export interface Session {
  token: string;
  refresh_token: string;
  user_id: string;
  org_id: string;
  expires_at: string;
}

/**
 * An API path whose interpolated values are each one percent-encoded path segment. Ids can come
 * from the address bar (`#/env/{env}/experiments/{id}`), where `/`, `?`, `#` or `..` would
 * otherwise lead the request, with the person's token, to another route. `.` and `..` cannot be
 * encoded away (the URL parser reads `%2e` as a dot too), so they are refused.
 */
export function apiPath(strings: TemplateStringsArray, ...segments: Array<string | number>): string {
  return strings.reduce((path, text, index) => {
    if (index >= segments.length) return path + text;
    const segment = String(segments[index]);
    if (segment === '.' || segment === '..') throw new Error(`"${segment}" is not a valid id`);
    return path + text + encodeURIComponent(segment);
  }, '');
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }

  /** An optimistic-locking conflict: someone else changed the thing since it was read. */
  get isConflict(): boolean {
    return this.status === 409 && this.code === 'ABORTED';
  }
}

const SESSION_KEY = 'switchyard.session';

type Listener = (session: Session | null) => void;

export class Api {
  private session: Session | null;
  private readonly listeners = new Set<Listener>();
  /** The org's environments as the console last read them, by id: which ones are protected. */
  private environments = new Map<string, Environment>();
  private guard: WriteGuard | undefined;

  constructor(private readonly storage: Storage = sessionStorage) {
    const saved = storage.getItem(SESSION_KEY);
    this.session = saved ? (JSON.parse(saved) as Session) : null;
  }

  get current(): Session | null {
    return this.session;
  }

  /** The environments the console shows (after each load of the workspace). */
  setEnvironments(environments: Environment[]): void {
    this.environments = new Map(environments.map((e) => [e.environment_id, e]));
  }

  /** One environment as a write answered with it (its protection changed), before the workspace reloads. */
  rememberEnvironment(environment: Environment): void {
    this.environments.set(environment.environment_id, environment);
  }

  /** Who asks the person before a write in a protected environment (the console's dialog). */
  setWriteGuard(guard: WriteGuard | undefined): void {
    this.guard = guard;
  }

  onSessionChange(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  setSession(session: Session | null): void {
    this.session = session;
    if (session) this.storage.setItem(SESSION_KEY, JSON.stringify(session));
    else this.storage.removeItem(SESSION_KEY);
    for (const listener of this.listeners) listener(session);
  }

  async login(email: string, password: string): Promise<Session> {
    const session = await this.request<Session>('POST', '/v1/auth/login', { email, password }, false);
    this.setSession(session);
    return session;
  }

  /** Turns the one-time code of a single sign-on return into a session (docs/sso.md). */
  async exchangeSsoCode(code: string): Promise<Session> {
    const session = await this.request<Session>('POST', '/v1/auth/sso/exchange', { code }, false);
    this.setSession(session);
    return session;
  }

  async switchOrg(orgId: string): Promise<Session> {
    const session = await this.request<Session>('POST', '/v1/auth/switch-org', { org_id: orgId });
    this.setSession(session);
    return session;
  }

  /**
   * Signs out at once, then ends the session on the server with the token it had. (Clearing only
   * after the server answered let a quick sign-in in between be undone by that late clearing.)
   */
  async logout(): Promise<void> {
    const token = this.session?.token;
    this.setSession(null);
    if (token === undefined) return;
    try {
      await fetch('/v1/auth/logout', { method: 'POST', headers: { authorization: `Bearer ${token}` } });
    } catch {
      // The tab has forgotten the session; the server's copy ends with its expiry.
    }
  }

  get<T>(path: string): Promise<T> {
    return this.request<T>('GET', path);
  }

  post<T>(path: string, body?: unknown): Promise<T> {
    return this.write<T>('POST', path, body);
  }

  /**
   * A POST that changes nothing (a calculation such as `…/experiments/power`): sent as a read, so
   * a protected environment does not ask the person to confirm a change that is not one.
   */
  query<T>(path: string, body: unknown): Promise<T> {
    return this.request<T>('POST', path, body);
  }

  put<T>(path: string, body?: unknown): Promise<T> {
    return this.write<T>('PUT', path, body);
  }

  patch<T>(path: string, body?: unknown): Promise<T> {
    return this.write<T>('PATCH', path, body);
  }

  delete<T>(path: string): Promise<T> {
    return this.write<T>('DELETE', path);
  }

  /**
   * Writes in one environment that make one change together (a CSV upload in chunks): the person
   * is asked once, here, and every write of the returned client carries that answer. Only paths
   * of that environment are accepted.
   */
  async confirmedWrites(environmentId: string): Promise<Pick<Api, 'post' | 'put' | 'patch' | 'delete'>> {
    const protection = protectionOf(this.environments.get(environmentId));
    const shared: { intent?: WriteIntent } = protection ? { intent: await this.ask(protection) } : {};
    const send = <T>(method: string, path: string, body?: unknown): Promise<T> => {
      if (environmentIdOfPath(path) !== environmentId) throw new Error(`${path} is not a path of environment ${environmentId}`);
      return this.write<T>(method, path, body, shared);
    };
    return {
      post: <T>(path: string, body?: unknown) => send<T>('POST', path, body),
      put: <T>(path: string, body?: unknown) => send<T>('PUT', path, body),
      patch: <T>(path: string, body?: unknown) => send<T>('PATCH', path, body),
      delete: <T>(path: string) => send<T>('DELETE', path),
    };
  }

  /**
   * A write: in a protected environment the person confirms (and comments) first, and the
   * request carries that intent. A refusal asking for it (the environment was protected after
   * the console read it) asks once and sends again. `shared`: an answer already given for a
   * batch of writes (confirmedWrites), kept up to date for the writes after this one.
   */
  private async write<T>(method: string, path: string, body?: unknown, shared?: { intent?: WriteIntent }): Promise<T> {
    const environmentId = environmentIdOfPath(path);
    const known = environmentId === undefined ? undefined : this.environments.get(environmentId);
    const protection = protectionOf(known);
    const intent = shared ? shared.intent : protection ? await this.ask(protection) : undefined;
    try {
      return await this.request<T>(method, path, body, true, false, intent);
    } catch (error) {
      const asked = error instanceof ApiError && error.status === 409 && error.code === 'FAILED_PRECONDITION' ? protectionAskedBy(error.message) : undefined;
      const missing = asked !== undefined && ((asked.confirm && intent?.confirmEnvironmentId === undefined) || (asked.comment && intent?.comment === undefined));
      if (!missing || environmentId === undefined) throw error;
      const environment = known ?? { environment_id: environmentId, environment_name: environmentId, project_id: '' };
      // Protected since the console read it: the next writes there ask before sending.
      if (known) this.environments.set(environmentId, { ...known, critical: known.critical === true || asked.confirm, require_comment: known.require_comment === true || asked.comment });
      const again = await this.ask({ environment, confirm: asked.confirm || protection?.confirm === true, comment: asked.comment || protection?.comment === true });
      if (shared) shared.intent = again;
      return this.request<T>(method, path, body, true, false, again);
    }
  }

  /** The person's confirmation as headers; throws (nothing sent) when they cancel or no one can ask. */
  private async ask(write: ProtectedWrite): Promise<WriteIntent> {
    const answer = this.guard ? await this.guard(write) : null;
    if (!answer) throw new ApiError(0, 'CANCELLED', `Nothing was changed: the change in ${write.environment.environment_name} was not confirmed.`);
    return { ...(write.confirm ? { confirmEnvironmentId: write.environment.environment_id } : {}), ...(answer.comment !== undefined ? { comment: answer.comment } : {}) };
  }

  private async request<T>(method: string, path: string, body?: unknown, authenticated = true, retried = false, intent?: WriteIntent): Promise<T> {
    const headers: Record<string, string> = intentHeaders(intent);
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (authenticated && this.session) headers.authorization = `Bearer ${this.session.token}`;
    let response: Response;
    try {
      response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    } catch {
      throw new ApiError(0, 'UNAVAILABLE', 'The server could not be reached. Check your connection and try again.');
    }
    if (response.status === 401 && authenticated && !retried && this.session && (await this.refresh())) {
      return this.request<T>(method, path, body, authenticated, true, intent);
    }
    const text = await response.text();
    const parsed: unknown = text === '' ? undefined : safeParse(text);
    if (!response.ok) {
      const error = parsed as { error?: string; code?: string } | undefined;
      if (response.status === 401 && authenticated) this.setSession(null);
      throw new ApiError(response.status, error?.code ?? 'UNKNOWN', error?.error ?? `The server answered ${response.status}.`);
    }
    return parsed as T;
  }

  /** One refresh of the access token; false (and signed out) when the session has ended. */
  private async refresh(): Promise<boolean> {
    const refreshToken = this.session?.refresh_token;
    if (!refreshToken) return false;
    try {
      const response = await fetch('/v1/auth/refresh', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ refresh_token: refreshToken }) });
      if (!response.ok) return false;
      this.setSession((await response.json()) as Session);
      return true;
    } catch {
      return false;
    }
  }
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return { error: text.slice(0, 200) };
  }
}

/** Plain words for an error, for showing in place. */
export function describeError(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.isConflict) return 'Someone else changed this since you opened it. Reload to see their change, then make yours again.';
    if (error.status === 403) return `You are not allowed to do this: ${error.message}`;
    return error.message;
  }
  return error instanceof Error ? error.message : String(error);
}
