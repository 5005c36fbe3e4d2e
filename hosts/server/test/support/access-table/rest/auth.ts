import { unique } from '../../rest-client.ts';
import { freshSession } from '../world.ts';
import { OWN_ORG, PUBLIC, SESSION, rest, type RestDescriptor, type RowContext } from '../rest-descriptor.ts';

/**
 * /v1/auth, the probes and the sign-in routes. Public routes take no credential: every caller gets
 * the same answer (for some a refusal of the request itself, e.g. an unknown reset link). Session
 * routes act on the caller's own session; those that end it run on a fresh one.
 */

const fresh = async ({ world, principal }: RowContext) => ({ bearer: await freshSession(world, principal) });
const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';
const REDIRECT = 'http://127.0.0.1/';

export const authDescriptors: RestDescriptor[] = [
  rest('GET /healthz', PUBLIC, OWN_ORG, 200, () => ({ path: '/healthz' })),
  rest('GET /readyz', PUBLIC, OWN_ORG, 200, () => ({ path: '/readyz' })),
  rest('GET /metrics', PUBLIC, OWN_ORG, 200, () => ({ path: '/metrics' })),
  rest('POST /v1/auth/login', PUBLIC, OWN_ORG, 200, ({ world }) => ({ path: '/v1/auth/login', body: { email: world.secondAdmin.email, password: world.secondAdmin.password } }), { checksPassword: true }),
  // The refresh token is the credential; an unknown one is 401 for every caller.
  rest('POST /v1/auth/refresh', PUBLIC, OWN_ORG, 401, () => ({ path: '/v1/auth/refresh', body: { refresh_token: `unknown-${unique()}` } })),
  rest('POST /v1/auth/password-reset', PUBLIC, OWN_ORG, 202, () => ({ path: '/v1/auth/password-reset', body: { email: `nobody-${unique()}@example.com` } })),
  rest('POST /v1/auth/password-reset/confirm', PUBLIC, OWN_ORG, 404, () => ({ path: '/v1/auth/password-reset/confirm', body: { token: `unknown-${unique()}`, new_password: 'a-new-password-123' } })),
  rest('POST /v1/auth/email-verification/confirm', PUBLIC, OWN_ORG, 404, () => ({ path: '/v1/auth/email-verification/confirm', body: { token: `unknown-${unique()}`, new_password: 'a-new-password-123' } })),
  // A bearer or nothing (then the new account's fields); an unknown invitation is 404 either way.
  rest('POST /v1/auth/invitations/accept', { kind: 'public', tokens: 401 }, OWN_ORG, 404, () => ({
    path: '/v1/auth/invitations/accept',
    body: { token: `inv_unknown${unique()}`, display_name: 'newcomer', password: `pw-${unique()}-secret` },
  })),
  rest('GET /v1/auth/sso/options', PUBLIC, OWN_ORG, 200, ({ world }) => ({ path: `/v1/auth/sso/options?org_id=${world.orgId}&redirect_uri=${encodeURIComponent(REDIRECT)}` })),
  // The shared provider waits for nothing but is not asked for this address: 404 for everyone.
  rest('GET /v1/auth/sso/{provider_id}/option', PUBLIC, OWN_ORG, 404, () => ({ path: `/v1/auth/sso/${UNKNOWN_ID}/option?redirect_uri=${encodeURIComponent(REDIRECT)}` })),
  rest('GET /v1/auth/sso/{provider_id}/start', PUBLIC, OWN_ORG, 404, () => ({ path: `/v1/auth/sso/${UNKNOWN_ID}/start?redirect_uri=${encodeURIComponent(REDIRECT)}` })),
  rest('GET /v1/auth/oidc/callback', PUBLIC, OWN_ORG, 401, () => ({ path: `/v1/auth/oidc/callback?code=c&state=s-${unique()}` })),
  rest('POST /v1/auth/sso/exchange', PUBLIC, OWN_ORG, 401, () => ({ path: '/v1/auth/sso/exchange', body: { code: `unknown-${unique()}` } })),
  rest('GET /v1/auth/saml/{provider_id}/metadata', PUBLIC, OWN_ORG, 404, () => ({ path: `/v1/auth/saml/${UNKNOWN_ID}/metadata` })),
  rest('POST /v1/auth/saml/acs', PUBLIC, OWN_ORG, 401, () => ({ path: '/v1/auth/saml/acs', body: { SAMLResponse: 'x', RelayState: `r-${unique()}` } })),

  rest('GET /v1/auth/orgs', SESSION, OWN_ORG, 200, () => ({ path: '/v1/auth/orgs' })),
  rest('GET /v1/auth/me', SESSION, OWN_ORG, 200, () => ({ path: '/v1/auth/me' })),
  rest('GET /v1/auth/sessions', SESSION, OWN_ORG, 200, () => ({ path: '/v1/auth/sessions' })),
  // "Any signed-in user" (docs/contract.md): not a session route, so a token reads it too.
  rest('GET /v1/console/settings', { kind: 'credential' }, OWN_ORG, 200, () => ({ path: '/v1/console/settings' })),
  rest('POST /v1/auth/switch-org', SESSION, OWN_ORG, 200, async ({ world, principal }) => {
    // Switching to the org the caller is in (the system admin: its system org, from /v1/auth/me).
    const me = principal.bearer ? await world.client.get('/v1/auth/me', { token: principal.bearer }) : undefined;
    return { path: '/v1/auth/switch-org', body: { org_id: me?.body?.org_id ?? world.orgId } };
  }),
  rest('POST /v1/auth/logout', SESSION, OWN_ORG, 204, async (context) => ({ path: '/v1/auth/logout', ...(await fresh(context)) })),
  rest('DELETE /v1/auth/sessions/{session_id}', SESSION, OWN_ORG, 204, async (context) => {
    // The caller ends a fresh session of its own (the current one of that fresh bearer).
    const { bearer } = await fresh(context);
    const listed = bearer ? await context.world.client.get('/v1/auth/sessions', { token: bearer }) : undefined;
    const current = (listed?.body?.sessions ?? []).find((session: { current: boolean }) => session.current);
    return { path: `/v1/auth/sessions/${current?.session_id ?? UNKNOWN_ID}`, bearer };
  }),
  // A new password ends the other sessions: run last, on a fresh session.
  rest(
    'POST /v1/auth/password',
    SESSION,
    OWN_ORG,
    204,
    async (context) => {
      const { bearer } = await fresh(context);
      // The change ends every other session, the principal's own included: the fresh one goes on.
      if (context.principal.caller.kind !== 'token') context.principal.bearer = bearer;
      const person = context.principal.person;
      const body = person ? { current_password: person.password, new_password: `${person.password}-2` } : { current_password: 'x', new_password: 'a-new-password-123' };
      return { path: '/v1/auth/password', body, bearer };
    },
    { last: true, checksPassword: true },
  ),
  // Ends every other session of the account (the principal's included): the very last row.
  rest('POST /v1/auth/sessions/revoke-others', SESSION, OWN_ORG, 200, async (context) => ({ path: '/v1/auth/sessions/revoke-others', ...(await fresh(context)) }), { last: true }),
];
