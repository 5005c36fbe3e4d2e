import { unique } from '../../rest-client.ts';
import { SYSTEM, NOWHERE, rest, type RestDescriptor } from '../rest-descriptor.ts';

/** /v1/admin: system-org people only; nobody else, and never a token. */
export const adminDescriptors: RestDescriptor[] = [
  rest('GET /v1/admin/mail-outbox', SYSTEM, NOWHERE, 200, () => ({ path: '/v1/admin/mail-outbox' })),
  rest('POST /v1/admin/orgs', SYSTEM, NOWHERE, 201, () => ({ path: '/v1/admin/orgs', body: { name: `acc-org-${unique()}` } })),
  rest('GET /v1/admin/orgs', SYSTEM, NOWHERE, 200, () => ({ path: '/v1/admin/orgs' })),
  rest('POST /v1/admin/orgs/{org_id}/users', SYSTEM, NOWHERE, 201, ({ world }) => ({
    path: `/v1/admin/orgs/${world.orgId}/users`,
    body: { email: `acc-${unique()}@example.com`, display_name: 'made by admin', password: `pw-${unique()}-secret`, org_role: 'org_member' },
  })),
  rest('POST /v1/admin/seed-user', SYSTEM, NOWHERE, 201, () => ({
    path: '/v1/admin/seed-user',
    body: { email: `acc-${unique()}@example.com`, display_name: 'seeded', password: `pw-${unique()}-secret` },
  })),
];
