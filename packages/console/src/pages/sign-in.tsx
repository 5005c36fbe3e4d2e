import { useState } from 'preact/hooks';
import type { Api } from '../api.ts';
import { ActionForm } from '../components/common.tsx';

export function SignInPage({ api }: { api: Api }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  return (
    <main class="sign-in" id="main">
      <h1>Sign in to Switchyard</h1>
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
        A fresh server prints its administrator's email and password when it starts. The API is documented at <a href="/docs">/docs</a>.
      </p>
    </main>
  );
}
