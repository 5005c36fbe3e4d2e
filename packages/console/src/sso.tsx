import { useEffect, useState } from 'preact/hooks';
import type { Api } from './api.ts';

const STATE_KEY = 'switchyard.sso-state';

/** Where the identity provider sends the browser back: the console itself (its provider must list it in redirect_uris). */
export const consoleReturnAddress = (): string => `${location.origin}/`;

/**
 * Starts single sign-on with one provider (the console's `#/sso/{provider_id}` link, which an
 * org admin shares): a random state kept in this tab, then the API's start route, which sends the
 * browser to the identity provider (docs/sso.md).
 */
export function startSso(providerId: string): void {
  const state = crypto.randomUUID();
  sessionStorage.setItem(STATE_KEY, state);
  const query = new URLSearchParams({ redirect_uri: consoleReturnAddress(), state });
  location.assign(`/v1/auth/sso/${encodeURIComponent(providerId)}/start?${query}`);
}

/**
 * The browser's return from the identity provider: `?code=…&state=…` (or `?error=…`) on the
 * console's address. The state must be the one this tab sent; the one-time code becomes a session
 * through POST /v1/auth/sso/exchange. The query is removed from the address either way.
 */
export function useSsoReturn(api: Api): { busy: boolean; error: unknown } {
  const [result, setResult] = useState<{ busy: boolean; error: unknown }>({ busy: false, error: undefined });
  useEffect(() => {
    const query = new URLSearchParams(location.search);
    const code = query.get('code');
    const failure = query.get('error');
    if (code === null && failure === null) return;
    history.replaceState(null, '', location.pathname + location.hash);
    const expected = sessionStorage.getItem(STATE_KEY);
    sessionStorage.removeItem(STATE_KEY);
    if (failure !== null) {
      setResult({ busy: false, error: new Error(`Single sign-on did not complete: ${query.get('error_description') ?? failure}`) });
      return;
    }
    if (expected === null || query.get('state') !== expected) {
      setResult({ busy: false, error: new Error('This sign-in was not started from this browser tab. Start it again.') });
      return;
    }
    setResult({ busy: true, error: undefined });
    api.exchangeSsoCode(code!).then(
      () => setResult({ busy: false, error: undefined }),
      (error: unknown) => setResult({ busy: false, error }),
    );
  }, []);
  return result;
}

export function SsoStart({ providerId }: { providerId: string }) {
  useEffect(() => startSso(providerId), [providerId]);
  return <p aria-busy="true">Taking you to your identity provider…</p>;
}
