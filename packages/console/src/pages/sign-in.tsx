import { useState } from 'preact/hooks';
import type { Api } from '../api.ts';
import { ActionForm, ErrorMessage } from '../components/common.tsx';

export function SignInPage({ api, error }: { api: Api; error?: unknown }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  return (
    <main class="sign-in" id="main">
      <h1>Sign in to Switchyard</h1>
      <ErrorMessage error={error} />
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
      <p class="hint">
        A fresh server prints its administrator's email and password when it starts. If your organisation signs in with single sign-on, use the sign-in link your
        administrator gave you. The API is documented at <a href="/docs">/docs</a>.
      </p>
    </main>
  );
}
