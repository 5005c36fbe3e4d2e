import type { Api, Session } from '../api.ts';
import { useMe } from '../pages/account.tsx';

/**
 * The header's "who is signed in, where": the account's name and email and the session's org,
 * linking to My account (`#/account`). Until GET /v1/auth/me answers it shows only the link.
 */
export function AccountMenu({ api, session }: { api: Api; session: Session }) {
  const me = useMe(api, session);
  return (
    <a href="#/account" class="account-link" data-testid="account-link" title="My account: password and sessions">
      {me.data ? (
        <>
          <span data-testid="signed-in-user">
            {me.data.display_name} ({me.data.email})
          </span>{' '}
          in <span data-testid="signed-in-org">{me.data.org_name}</span>
        </>
      ) : (
        'My account'
      )}
    </a>
  );
}
