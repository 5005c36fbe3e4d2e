import type { FastifyInstance, FastifyReply } from 'fastify';
import { browserLoginCookieName, type AuthProviderBody } from '@switchyard/services';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticate } from '../../http/credentials.ts';
import { sessionResponse } from '../auth/rest-session-response.ts';
import { clearLoginCookie, readCookie, setLoginCookie } from './rest-login-cookies.ts';
import {
  authProviderBody,
  confirmProviderBody,
  oidcCallbackQuery,
  samlAcsBody,
  signInOptionParams,
  signInOptionQuery,
  signInOptionResponse,
  signInOptionsQuery,
  signInOptionsResponse,
  ssoExchangeBody,
  ssoStartQuery,
} from './rest-schemas.ts';

/** The largest ACS form accepted: a SAML response of 256 KiB in base64, and the relay state. */
const MAX_ACS_FORM_BYTES = 512 * 1024;

/** A redirect nobody may cache: each carries a one-time state or code. */
const redirect = (reply: FastifyReply, location: string) =>
  reply.code(302).header('cache-control', 'no-store').header('referrer-policy', 'no-referrer').header('location', location).send();

/** Single sign-on (docs/sso.md): provider management, the browser flow, the SAML SP metadata. */
export function registerSsoRoutes(app: FastifyInstance, services: GatewayServices): void {
  const { authProviders, sso, verifier } = services;

  // --- providers (org_admin) ---
  app.post<{ Params: { org_id: string }; Body: AuthProviderBody }>(
    '/v1/management/orgs/:org_id/auth-providers',
    { schema: { body: { ...authProviderBody, required: ['provider_type', ...authProviderBody.required] } } },
    async (request, reply) => {
      const principal = await authenticate(verifier, request, 'bearer');
      return reply.code(201).send(await authProviders.create(principal, request.params.org_id, request.body));
    },
  );
  app.get<{ Params: { org_id: string } }>('/v1/management/orgs/:org_id/auth-providers', async (request) => {
    const principal = await authenticate(verifier, request, 'bearer');
    return authProviders.list(principal, request.params.org_id);
  });
  app.get<{ Params: { org_id: string; provider_id: string } }>('/v1/management/orgs/:org_id/auth-providers/:provider_id', async (request) => {
    const principal = await authenticate(verifier, request, 'bearer');
    return authProviders.get(principal, request.params.org_id, request.params.provider_id);
  });
  app.put<{ Params: { org_id: string; provider_id: string }; Body: AuthProviderBody }>(
    '/v1/management/orgs/:org_id/auth-providers/:provider_id',
    { schema: { body: authProviderBody } },
    async (request) => {
      const principal = await authenticate(verifier, request, 'bearer');
      return authProviders.update(principal, request.params.org_id, request.params.provider_id, request.body);
    },
  );
  app.post<{ Params: { org_id: string; provider_id: string }; Body: { updated_at?: string | null } | null }>(
    '/v1/management/orgs/:org_id/auth-providers/:provider_id/confirm',
    { schema: { body: confirmProviderBody } },
    async (request) => {
      const principal = await authenticate(verifier, request, 'bearer');
      return authProviders.confirm(principal, request.params.org_id, request.params.provider_id, request.body ?? {});
    },
  );
  app.delete<{ Params: { org_id: string; provider_id: string } }>(
    '/v1/management/orgs/:org_id/auth-providers/:provider_id',
    async (request, reply) => {
      const principal = await authenticate(verifier, request, 'bearer');
      await authProviders.delete(principal, request.params.org_id, request.params.provider_id);
      return reply.code(204).send();
    },
  );

  // --- what a sign-in page may offer (no credential: it is shown before anyone signs in) ---
  app.get<{ Querystring: { org_id: string; redirect_uri: string } }>(
    '/v1/auth/sso/options',
    {
      schema: {
        summary: "An org's enabled identity providers that return to redirect_uri (for a sign-in page)",
        querystring: signInOptionsQuery,
        response: { 200: signInOptionsResponse },
      },
    },
    async (request) => sso.signInOptions(request.query.org_id, request.query.redirect_uri),
  );
  app.get<{ Params: { provider_id: string }; Querystring: { redirect_uri: string } }>(
    '/v1/auth/sso/:provider_id/option',
    {
      schema: {
        summary: "One identity provider's name and its org's, for a page that offers to sign in with it",
        params: signInOptionParams,
        querystring: signInOptionQuery,
        response: { 200: signInOptionResponse },
      },
    },
    async (request) => sso.signInOption(request.params.provider_id, request.query.redirect_uri),
  );

  // --- the browser flow: start → identity provider → callback or ACS → app → exchange ---
  app.get<{ Params: { provider_id: string }; Querystring: { redirect_uri: string; state?: string } }>(
    '/v1/auth/sso/:provider_id/start',
    { schema: { querystring: ssoStartQuery } },
    async (request, reply) => {
      const { location, cookie } = await sso.startBrowserLogin(request.params.provider_id, request.query.redirect_uri, request.query.state ?? null);
      // The login in flight lives in this browser's cookie: the callback accepts it from here only.
      setLoginCookie(reply, cookie);
      return redirect(reply, location);
    },
  );
  app.get<{ Querystring: Record<string, string> }>('/v1/auth/oidc/callback', { schema: { querystring: oidcCallbackQuery } }, async (request, reply) => {
    const cookieName = browserLoginCookieName(request.query.state ?? '');
    const { location } = await sso.finishOidcBrowserLogin({ ...request.query }, readCookie(request, cookieName));
    clearLoginCookie(reply, cookieName, false);
    return redirect(reply, location);
  });
  // The HTTP-POST binding posts a form; only this route parses one.
  app.register(async (acs) => {
    acs.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: MAX_ACS_FORM_BYTES }, (_request, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(body as string)));
    });
    acs.post<{ Body: { SAMLResponse: string; RelayState: string } }>('/v1/auth/saml/acs', { schema: { body: samlAcsBody } }, async (request, reply) => {
      const cookieName = browserLoginCookieName(request.body.RelayState);
      const { location } = await sso.finishSamlBrowserLogin({
        samlResponse: request.body.SAMLResponse,
        relayState: request.body.RelayState,
        loginCookie: readCookie(request, cookieName),
      });
      clearLoginCookie(reply, cookieName, true);
      return redirect(reply, location);
    });
  });
  app.post<{ Body: { code: string } }>('/v1/auth/sso/exchange', { schema: { body: ssoExchangeBody } }, async (request, reply) => {
    return reply.header('cache-control', 'no-store').send(sessionResponse(await sso.exchangeCode(request.body.code)));
  });

  app.get<{ Params: { provider_id: string } }>('/v1/auth/saml/:provider_id/metadata', async (request, reply) => {
    return reply.type('application/samlmetadata+xml').send(await sso.samlMetadata(request.params.provider_id));
  });
}
