import { useState } from 'preact/hooks';
import { apiPath, type Api, type Session } from '../api.ts';
import { ActionForm, ErrorMessage, Loading, formatTime, useLoad } from '../components/common.tsx';

/** GET /v1/auth/me: the signed-in account, the session's org and the role there now. */
export interface Me {
  user_id: string;
  email: string;
  display_name: string;
  org_id: string;
  org_name: string;
  org_role: 'org_admin' | 'org_member';
  system_org: boolean;
  single_sign_on: boolean;
}

/** One live session of the account (GET /v1/auth/sessions). */
interface AccountSession {
  session_id: string;
  org_id: string;
  org_name: string | null;
  created_at: string;
  expires_at: string;
  single_sign_on: boolean;
  current: boolean;
}

/** Reads the signed-in account once per session and org (the header and the account page). */
export const useMe = (api: Api, session: Session) => useLoad(() => api.get<Me>('/v1/auth/me'), [session.user_id, session.org_id]);

/**
 * "My account" (`#/account`): who is signed in, a password change (POST /v1/auth/password, which
 * signs out every other session of the account), and the account's sessions: each one ended on
 * its own, or every one but this tab's at once ("Sign out everywhere else").
 */
export function AccountPage({ api, session }: { api: Api; session: Session }) {
  const me = useMe(api, session);
  const sessions = useLoad(() => api.get<{ sessions: AccountSession[] }>('/v1/auth/sessions'), [session.user_id, session.org_id]);
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [repeat, setRepeat] = useState('');
  const [done, setDone] = useState('');
  const [error, setError] = useState<unknown>(undefined);
  const others = (sessions.data?.sessions ?? []).filter((s) => !s.current);
  const act = async (work: () => Promise<string>) => {
    setError(undefined);
    setDone('');
    try {
      setDone(await work());
    } catch (caught) {
      setError(caught);
    }
    sessions.reload();
  };
  return (
    <section>
      <h1>My account</h1>
      <ErrorMessage error={me.error} />
      {me.loading && !me.data && <Loading what="your account" />}
      {me.data && (
        <dl>
          <dt>Name</dt>
          <dd data-testid="account-name">{me.data.display_name}</dd>
          <dt>Email</dt>
          <dd data-testid="account-email">{me.data.email}</dd>
          <dt>Organisation</dt>
          <dd>
            {me.data.org_name} ({me.data.system_org ? 'system administrator' : me.data.org_role === 'org_admin' ? 'admin' : 'member'})
          </dd>
        </dl>
      )}
      {done && (
        <p class="notice" role="status">
          {done}
        </p>
      )}
      <ErrorMessage error={error} />

      <h2>Change your password</h2>
      {me.data?.single_sign_on && <p class="muted">You signed in with single sign-on: your identity provider keeps your password. A password here is only for signing in with your email.</p>}
      <ActionForm
        label="Change your password"
        onSubmit={async () => {
          setDone('');
          if (next !== repeat) throw new Error('The two new passwords differ: type the same one twice.');
          await api.post('/v1/auth/password', { current_password: current, new_password: next });
          // Secrets do not stay on the page once used.
          setCurrent('');
          setNext('');
          setRepeat('');
          setDone('Password changed. Every other session of your account was signed out; this one goes on.');
          sessions.reload();
        }}
      >
        <label>
          Current password
          <input type="password" name="current_password" autocomplete="current-password" required value={current} onInput={(e) => setCurrent((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          New password (8 to 72 bytes)
          <input type="password" name="new_password" autocomplete="new-password" required minLength={8} value={next} onInput={(e) => setNext((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          New password again
          <input type="password" name="repeat_password" autocomplete="new-password" required minLength={8} value={repeat} onInput={(e) => setRepeat((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit">Change password</button>
      </ActionForm>

      <h2>Sessions</h2>
      <p class="muted">
        Each sign-in (and each switch to another organisation) is a session; it lasts 30 days from sign-in unless it is signed out. Devices and addresses are not recorded.
      </p>
      <ErrorMessage error={sessions.error} />
      {sessions.loading && !sessions.data && <Loading what="your sessions" />}
      <table class="list" aria-label="Sessions">
        <thead>
          <tr>
            <th scope="col">Signed in</th>
            <th scope="col">Organisation</th>
            <th scope="col">With</th>
            <th scope="col">Ends at the latest</th>
            <th scope="col">
              <span class="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {(sessions.data?.sessions ?? []).map((s) => (
            <tr data-testid="session-row">
              <td>{formatTime(s.created_at)}</td>
              <td>{s.org_name ?? s.org_id}</td>
              <td>{s.single_sign_on ? 'single sign-on' : 'password'}</td>
              <td>{formatTime(s.expires_at)}</td>
              <td>
                {s.current ? (
                  <strong>This session</strong>
                ) : (
                  <button
                    type="button"
                    class="link"
                    onClick={() =>
                      act(async () => {
                        await api.delete(apiPath`/v1/auth/sessions/${s.session_id}`);
                        return `Signed out the session of ${formatTime(s.created_at)}.`;
                      })
                    }
                  >
                    Sign out the session of {formatTime(s.created_at)}
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <p>
        <button
          type="button"
          disabled={others.length === 0}
          onClick={() =>
            act(async () => {
              const { ended } = await api.post<{ ended: number }>('/v1/auth/sessions/revoke-others');
              return ended === 1 ? 'Signed out 1 other session.' : `Signed out ${ended} other sessions.`;
            })
          }
        >
          Sign out everywhere else
        </button>{' '}
        {others.length === 0 && sessions.data && <span class="muted">This is your only session.</span>}
      </p>
    </section>
  );
}
