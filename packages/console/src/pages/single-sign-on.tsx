import type { Workspace } from '../app.tsx';
import { ErrorMessage, Loading, useLoad } from '../components/common.tsx';
import { consoleReturnAddress } from '../sso.tsx';

interface Provider {
  id: string;
  provider_type: 'oidc' | 'saml';
  display_name: string;
  enabled: boolean;
  redirect_uris: string[];
}

/**
 * The organisation's identity providers (managed over the API: docs/sso.md) and, for each, the
 * console sign-in link to give people. A provider signs people into the console only when the
 * console's own address is among its redirect_uris; the page says when it is not.
 */
export function SingleSignOnPage({ workspace }: { workspace: Workspace }) {
  const { api, session } = workspace;
  const providers = useLoad(() => api.get<Provider[]>(`/v1/management/orgs/${session.org_id}/auth-providers`), [session.org_id]);
  const returnAddress = consoleReturnAddress();
  return (
    <section>
      <h1>Single sign-on</h1>
      <p class="muted">
        Identity providers (OpenID Connect or SAML 2.0) are set up over the API (see the API docs at <a href="/docs">/docs</a>). To let people sign in to this console
        with one, add <code>{returnAddress}</code> to its redirect URIs. The organisation's sign-in page then offers it:
      </p>
      <p>
        Sign-in page: <code>{`${location.origin}/#/sign-in/${session.org_id}`}</code>
      </p>
      <ErrorMessage error={providers.error} />
      {providers.loading && !providers.data && <Loading what="identity providers" />}
      {providers.data?.length === 0 && <p>This organisation has no identity provider.</p>}
      <ul>
        {(providers.data ?? []).map((provider) => {
          const link = `${location.origin}/#/sso/${provider.id}`;
          return (
            <li>
              <strong>{provider.display_name}</strong> ({provider.provider_type === 'oidc' ? 'OpenID Connect' : 'SAML 2.0'}
              {provider.enabled ? '' : ', disabled'})
              <br />
              {provider.redirect_uris.includes(returnAddress) ? (
                <>
                  Console sign-in link: <code>{link}</code>
                </>
              ) : (
                <span class="error">Not usable from the console: its redirect URIs do not include {returnAddress}.</span>
              )}
            </li>
          );
        })}
      </ul>
    </section>
  );
}
