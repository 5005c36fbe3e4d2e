import { useState } from 'preact/hooks';
import type { Api } from '../api.ts';
import { ActionForm } from '../components/common.tsx';
import type { Route } from '../router.ts';
import { AcceptInvitationPage } from './accept-invitation.tsx';

/** The pages a mail links to (docs/security.md "Email delivery"), reachable without a session. */
export const MAILED_LINK_PAGES = new Set(['reset-password', 'verify-email', 'accept-invitation']);

/** The org ids a holder keeps, typed as the mail lists them (comma or space separated). */
const orgIdsOf = (text: string): string[] => text.split(/[\s,]+/).filter((id) => id !== '');

/**
 * `#/reset-password` asks for a reset link; `#/reset-password/{token}`, `#/verify-email/{token}`
 * and `#/accept-invitation/{token}` are where the mails' links land: the holder sets its password
 * and, for an account someone else made for the address, names the organisations it keeps.
 */
export function MailedLinkPage({ api, route }: { api: Api; route: Route }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [keep, setKeep] = useState('');
  const [done, setDone] = useState('');
  const token = route.id;
  const keepField = (
    <label>
      Organisations to stay in (ids from the mail; empty: none)
      <input name="keep_org_ids" value={keep} onInput={(e) => setKeep((e.target as HTMLInputElement).value)} />
    </label>
  );
  const passwordField = (
    <label>
      New password
      <input type="password" name="new_password" required minLength={8} autocomplete="new-password" value={password} onInput={(e) => setPassword((e.target as HTMLInputElement).value)} />
    </label>
  );
  let form;
  if (route.page === 'reset-password' && !token) {
    form = (
      <ActionForm label="Request a password reset" onSubmit={async () => setDone((await api.post<{ status: string }>('/v1/auth/password-reset', { email })).status)}>
        <label>
          Email
          <input type="email" name="email" required value={email} onInput={(e) => setEmail((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit">Send me a link</button>
      </ActionForm>
    );
  } else if (route.page === 'accept-invitation') {
    form = token ? <AcceptInvitationPage api={api} token={token} /> : <p class="error" role="alert">This invitation link has no token: copy the whole link you were sent.</p>;
  } else {
    const path = route.page === 'verify-email' ? '/v1/auth/email-verification/confirm' : '/v1/auth/password-reset/confirm';
    form = (
      <ActionForm
        label="Set your password"
        onSubmit={async () => {
          const outcome = await api.post<{ account_removed: boolean }>(path, { token, new_password: password, keep_org_ids: orgIdsOf(keep) });
          setDone(outcome.account_removed ? 'Done. The account was in no organisation you kept, so it is gone and the address is free: ask your organisation for an invitation.' : 'Done. Sign in with your new password.');
        }}
      >
        {passwordField}
        {keepField}
        <button type="submit">Set password</button>
      </ActionForm>
    );
  }
  return (
    <main class="sign-in" id="main">
      <h1>{route.page === 'accept-invitation' ? 'Accept your invitation' : route.page === 'verify-email' ? 'Confirm your account' : 'Reset your password'}</h1>
      {done ? <p role="status">{done}</p> : form}
      <p>
        <a href="#/sign-in">Back to sign in</a>
      </p>
    </main>
  );
}
