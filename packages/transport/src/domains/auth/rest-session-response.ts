import type { Session } from '@switchyard/services';

/** The login response of docs/contract.md "Authentication and sessions" (`token`, `expires_at` ISO 8601, refresh token, ids). */
export const sessionResponse = (session: Session) => ({
  token: session.accessToken,
  expires_at: new Date(session.expiresAtMs).toISOString(),
  expires_in: session.expiresIn,
  refresh_token: session.refreshToken,
  user_id: session.userId,
  org_id: session.orgId,
});
