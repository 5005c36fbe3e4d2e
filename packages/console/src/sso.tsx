import { useEffect, useState } from 'preact/hooks';
import { apiPath, type Api } from './api.ts';
import { Loading, useLoad } from './components/common.tsx';

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

interface ProviderOption {
  provider_id: string;
  display_name: string;
  provider_type: 'oidc' | 'saml';
  org_id: string;
  org_name: string;
}

/**
 * A provider's own link (`#/sso/{provider_id}`): names the provider and its organisation and
 * starts only on a click. Starting by itself would let any page that opens the link sign the
 * visitor in with an account of someone else's choosing (login CSRF: the attacker's own sign-in
 * at an identity provider the attacker controls).
 */
export function SsoStart({ api, providerId }: { api: Api; providerId: string }) {
  const option = useLoad(
    () => api.get<ProviderOption>(`${apiPath`/v1/auth/sso/${providerId}/option`}?${new URLSearchParams({ redirect_uri: consoleReturnAddress() })}`),
    [providerId],
  );
  return (
    <main class="sign-in" id="main">
      <h1>Sign in to Switchyard</h1>
      {option.loading && <Loading what="the identity provider" />}
      {option.error !== undefined && <p class="error" role="alert">This single sign-on link is not valid here (the provider is unknown, disabled or does not return to this console).</p>}
      {option.data && (
        <>
          <p>
            Sign in to the organisation <strong>{option.data.org_name}</strong> with its identity provider <strong>{option.data.display_name}</strong> (
            {option.data.provider_type === 'oidc' ? 'OpenID Connect' : 'SAML'}).
          </p>
          <p>
            <button type="button" class="wide" onClick={() => startSso(option.data!.provider_id)}>
              Continue to {option.data.display_name}
            </button>
          </p>
          <p class="hint">Only continue if you meant to sign in to {option.data.org_name}.</p>
        </>
      )}
      <p>
        <a href="#/">Sign in another way</a>
      </p>
    </main>
  );
}
