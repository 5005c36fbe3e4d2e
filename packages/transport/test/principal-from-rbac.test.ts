import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as grpc from '@grpc/grpc-js';
import { SERVER_KEY_SETTINGS, type Principal } from '@switchyard/core';
import { rbacContext } from '../src/domains/auth/grpc.ts';
import { loadProto, lookup } from '../src/grpc/proto.ts';
import { principalFromRbacContext, type RbacContextMessage } from '../src/remote/principal-from-rbac.ts';

// The services' answer as it crosses the wire: serialized and read back with the very proto
// definition (and loader options) a gateway uses.
const AuthService = lookup<grpc.ServiceClientConstructor>(loadProto('svc/auth/v1/auth.proto'), 'svc.auth.v1.AuthService');
const method = AuthService.service.ValidateCredential!;
const overTheWire = (principal: Principal): RbacContextMessage =>
  method.responseDeserialize(method.responseSerialize(rbacContext(principal))) as RbacContextMessage;

const O = 'org-1';
const principals: Array<[string, Principal]> = [
  ['a member without bindings (the org role decides)', { kind: 'user', userId: 'u1', orgId: O, role: 'org_member', isSystem: false, sessionId: 's1' }],
  ['an org admin', { kind: 'user', userId: 'u2', orgId: O, role: 'org_admin', isSystem: false, sessionId: 's2' }],
  ['a system user without a session', { kind: 'user', userId: 'u3', orgId: O, role: 'org_admin', isSystem: true }],
  [
    'a member with bindings at org, project and environment level',
    {
      kind: 'user',
      userId: 'u4',
      orgId: O,
      role: 'org_member',
      isSystem: false,
      sessionId: 's4',
      bindings: [{ role: 'viewer' }, { role: 'editor', projectId: 'p1' }, { role: 'admin', projectId: 'p1', environmentId: 'e1' }],
    },
  ],
  // An empty list gives nothing: it must not come back as "no bindings" (the org role's editor everywhere).
  ['a member with an empty list of bindings', { kind: 'user', userId: 'u5', orgId: O, role: 'org_member', isSystem: false, sessionId: 's5', bindings: [] }],
  ['an org-wide token without expiry', { kind: 'api_token', tokenId: 't1', name: 'deploy', orgId: O, role: 'admin', scope: {}, expiresAtMs: null }],
  [
    'a token limited to projects and environments, expiring',
    { kind: 'api_token', tokenId: 't2', name: 'ci', orgId: O, role: 'editor', scope: { projectIds: ['p1'], environmentIds: ['e1', 'e2'] }, expiresAtMs: 1_900_000_000_000 },
  ],
  // Empty lists cover nothing; absent ones the whole org: both must survive the trip.
  ['a token with empty scope lists', { kind: 'api_token', tokenId: 't3', name: 'nothing', orgId: O, role: 'viewer', scope: { projectIds: [], environmentIds: [] }, expiresAtMs: null }],
  ['a token limited to environments only', { kind: 'api_token', tokenId: 't4', name: 'env', orgId: O, role: 'viewer', scope: { environmentIds: ['e9'] }, expiresAtMs: null }],
  ['a server key', { kind: 'sdk_key', sdkKeyId: 'k1', orgId: O, projectId: 'p1', environmentId: 'e1' }],
  ['a client key', { kind: 'client_key', sdkKeyId: 'k2', orgId: O, projectId: 'p1', environmentId: 'e1', client: { ...SERVER_KEY_SETTINGS, name: 'web', allowedOrigins: ['https://a.example'] } }],
];

for (const [label, principal] of principals) {
  test(`through the gateway, ${label} is rebuilt field for field`, () => {
    assert.deepEqual(principalFromRbacContext(overTheWire(principal)), principal);
  });
}

test('an answer the gateway cannot read in full is INTERNAL, never a guess', () => {
  const token = overTheWire({ kind: 'api_token', tokenId: 't1', name: 'deploy', orgId: O, role: 'admin', scope: {}, expiresAtMs: null });
  for (const broken of [
    { ...token, api_token: null },
    { ...token, api_token: { ...token.api_token!, role: 'owner' } },
    { ...token, subject: '' },
  ]) {
    assert.throws(() => principalFromRbacContext(broken), (error: unknown) => (error as { code?: string }).code === 'INTERNAL');
  }
  const member = overTheWire({ kind: 'user', userId: 'u4', orgId: O, role: 'org_member', isSystem: false, bindings: [{ role: 'editor', projectId: 'p1' }] });
  for (const bindings of [[{ role: 'superuser', project_id: '', environment_id: '' }], [{ role: 'editor', project_id: '', environment_id: 'e1' }]]) {
    assert.throws(() => principalFromRbacContext({ ...member, bindings }), (error: unknown) => (error as { code?: string }).code === 'INTERNAL');
  }
});
