import { useState } from 'preact/hooks';
import type { Api } from '../api.ts';
import { ActionForm, ErrorMessage, useLoad } from '../components/common.tsx';
import { consoleReturnAddress, startSso } from '../sso.tsx';

interface SignInOption {
  provider_id: string;
  display_name: string;
  provider_type: 'oidc' | 'saml';
}

/**
 * Email and password; on an organisation's sign-in link (`#/sign-in/{org_id}`) also that org's
 * identity providers that return to this console (GET /v1/auth/sso/options, no credential).
 */
export function SignInPage({ api, error, orgId }: { api: Api; error?: unknown; orgId?: string }) {
  const options = useLoad(
    () => (orgId ? api.get<{ providers: SignInOption[] }>(`/v1/auth/sso/options?${new URLSearchParams({ org_id: orgId, redirect_uri: consoleReturnAddress() })}`) : Promise.resolve({ providers: [] })),
    [orgId],
  );
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  return (
    <main class="sign-in" id="main">
      <h1>Sign in to Switchyard</h1>
      <ErrorMessage error={error ?? options.error} />
      {(options.data?.providers ?? []).map((provider) => (
        <p>
          <button type="button" class="wide" onClick={() => startSso(provider.provider_id)}>
            Sign in with {provider.display_name}
          </button>
        </p>
      ))}
      {(options.data?.providers.length ?? 0) > 0 && <p class="muted">Or with your email and password:</p>}
      <ActionForm label="Sign in" onSubmit={async () => void (await api.login(email, password))}>
        <label>
          Email
          <input type="email" name="email" autocomplete="username" required value={email} onInput={(e) => setEmail((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          Password
          <input type="password" name="password" autocomplete="current-password" required value={password} onInput={(e) => setPassword((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit">Sign in</button>
      </ActionForm>
      <p>
        <a href="#/reset-password">Forgot your password?</a>
      </p>
      <p class="hint">
        A fresh server prints its administrator's email and password when it starts. If your organisation signs in with single sign-on, use its sign-in link (your
        administrator finds it on the console's Single sign-on page). The API is documented at <a href="/docs">/docs</a>.
      </p>
    </main>
  );
}
