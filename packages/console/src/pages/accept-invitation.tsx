import { useState } from 'preact/hooks';
import type { Api, Session } from '../api.ts';
import { ActionForm, ErrorMessage, useLoad } from '../components/common.tsx';
import type { Me } from './account.tsx';

/** The org ids a holder keeps, typed as the mail lists them (comma or space separated). */
const orgIdsOf = (text: string): string[] => text.split(/[\s,]+/).filter((id) => id !== '');

/**
 * Opens the org's projects in place of this page's history entry: the spent invitation token in
 * its address is not left for the Back button (or anyone with the browser's history) to find.
 */
const leaveForProjects = (): void => location.replace('#/projects');

/**
 * `#/accept-invitation/{token}`: where an invitation's link lands (copied from the Members page or
 * mailed). Three ways in (POST /v1/auth/invitations/accept):
 * - this tab is signed in: accept as that account (the API checks the invitation is for its address);
 * - an account exists: sign in with it here, then accept with its session;
 * - no account yet: a name and a password create it, signed in.
 * The accepted org is then opened (a session in it: POST /v1/auth/switch-org).
 */
export function AcceptInvitationPage({ api, token }: { api: Api; token: string }) {
  const signedIn = api.current;
  const me = useLoad(() => (signedIn ? api.get<Me>('/v1/auth/me').catch(() => null) : Promise.resolve(null)), [signedIn?.user_id, signedIn?.org_id]);
  const [error, setError] = useState<unknown>(undefined);
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [newPassword, setNewPassword] = useState('');
  const [displayName, setDisplayName] = useState('');
  const [keep, setKeep] = useState('');

  /** Accepts with the tab's session and opens the org; a refusal stays on this page, in place. */
  const acceptSignedIn = async () => {
    setError(undefined);
    try {
      const joined = await api.post<{ org_id: string }>('/v1/auth/invitations/accept', { token });
      await api.switchOrg(joined.org_id);
      leaveForProjects();
    } catch (caught) {
      setError(caught);
    }
  };

  let body;
  if (signedIn && me.data) {
    body = (
      <>
        <p>
          You are signed in as <strong data-testid="accepting-as">{me.data.email}</strong>. The invitation must be for this address.
        </p>
        <p>
          <button type="button" class="wide" onClick={acceptSignedIn}>
            Accept as {me.data.email}
          </button>
        </p>
        <p>
          <button type="button" class="link" onClick={() => void api.logout()}>
            Not you? Sign out and use another account
          </button>
        </p>
      </>
    );
  } else if (signedIn && me.loading) {
    body = <p aria-busy="true">Loading your account…</p>;
  } else {
    body = (
      <>
        <h2>New to Switchyard?</h2>
        <ActionForm
          label="Create your account and accept"
          onSubmit={async () => {
            setError(undefined);
            const session = await api.post<Session>('/v1/auth/invitations/accept', { token, display_name: displayName, password: newPassword, keep_org_ids: orgIdsOf(keep) });
            setNewPassword('');
            api.setSession(session);
            leaveForProjects();
          }}
        >
          <label>
            Your name
            <input name="display_name" required value={displayName} onInput={(e) => setDisplayName((e.target as HTMLInputElement).value)} />
          </label>
          <label>
            Choose a password (at least 8 characters)
            <input type="password" name="new_password" required minLength={8} autocomplete="new-password" value={newPassword} onInput={(e) => setNewPassword((e.target as HTMLInputElement).value)} />
          </label>
          <details>
            <summary>Someone else made an account for your address?</summary>
            <label>
              Organisations to stay in (ids from the mail; empty: none)
              <input name="keep_org_ids" value={keep} onInput={(e) => setKeep((e.target as HTMLInputElement).value)} />
            </label>
          </details>
          <button type="submit">Create my account and join</button>
        </ActionForm>
        <h2>Already have an account?</h2>
        <ActionForm
          label="Sign in and accept"
          onSubmit={async () => {
            await api.login(email, password);
            setPassword('');
            // Signed in now: a refusal (an invitation for another address, already a member) is shown on the signed-in view.
            await acceptSignedIn();
          }}
        >
          <label>
            Email
            <input type="email" name="email" autocomplete="username" required value={email} onInput={(e) => setEmail((e.target as HTMLInputElement).value)} />
          </label>
          <label>
            Password
            <input type="password" name="password" autocomplete="current-password" required value={password} onInput={(e) => setPassword((e.target as HTMLInputElement).value)} />
          </label>
          <button type="submit">Sign in and join</button>
        </ActionForm>
      </>
    );
  }
  return (
    <>
      <p>You were invited to join an organisation on Switchyard.</p>
      <ErrorMessage error={error} />
      {body}
    </>
  );
}
