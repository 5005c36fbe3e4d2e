import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  ACTIONS,
  SERVER_KEY_SETTINGS,
  authorize,
  authorizeSomewhere,
  type Action,
  type ApiTokenScope,
  type BindingRole,
  type Decision,
  type Principal,
  type ResourceRef,
  type RoleBinding,
} from '../src/index.ts';

// The decision table of docs/access.md "Roles and bindings (decision rules)". Every expected set
// below is written by hand from those rules; nothing is derived from the code under test.

// One org O with project P1 (environments E1a, E1b) and project P2 (environment E2); X is another org.
const O = 'org-o';
const P1 = 'project-1';
const P2 = 'project-2';
const E1a = 'env-1a';
const E1b = 'env-1b';
const X = 'org-x';

const AT_ORG: ResourceRef = { orgId: O };
const AT_P1: ResourceRef = { orgId: O, projectId: P1 };
const AT_E1a: ResourceRef = { orgId: O, projectId: P1, environmentId: E1a };

/** The rows: an action on the resource the services name for it. */
const ROWS: ReadonlyArray<[string, Action, ResourceRef]> = [
  ...(['admin.manage', 'org.read', 'project.create', 'user.create', 'user.manage', 'auth_provider.manage', 'api_token.manage', 'webhook.manage'] as const).map(
    (action): [string, Action, ResourceRef] => [`${action}@org`, action, AT_ORG],
  ),
  ...(['project.update', 'environment.create', 'org.read', 'flag.read', 'flag.write'] as const).map(
    (action): [string, Action, ResourceRef] => [`${action}@P1`, action, AT_P1],
  ),
  ...(
    [
      'sdk_key.create',
      'sdk_key.delete',
      'environment.update',
      'org.read',
      'flag.read',
      'flag.write',
      'segment.read',
      'segment.write',
      'event_definition.read',
      'event_definition.write',
      'experiment.read',
      'experiment.write',
      'stats.recompute',
      'stats.read',
      'flag.evaluate',
      'flag.sync',
      'event.ingest',
      'exposure.ingest',
      'segment.check',
      'flag.client_evaluate',
    ] as const
  ).map((action): [string, Action, ResourceRef] => [`${action}@E1a`, action, AT_E1a]),
];

// Hand-written groups of allowed rows.
const VIEW_ENV = ['org.read', 'flag.read', 'segment.read', 'event_definition.read', 'experiment.read', 'stats.read'].map((a) => `${a}@E1a`);
const SDK_READS_ENV = ['flag.evaluate', 'flag.sync', 'segment.check', 'flag.client_evaluate'].map((a) => `${a}@E1a`);
const SDK_WRITES_ENV = ['event.ingest', 'exposure.ingest'].map((a) => `${a}@E1a`);
const EDIT_ENV_ONLY = ['flag.write', 'segment.write', 'event_definition.write', 'experiment.write', 'stats.recompute'].map((a) => `${a}@E1a`);
const ADMIN_ENV_ONLY = ['sdk_key.create@E1a', 'sdk_key.delete@E1a', 'environment.update@E1a'];
const VIEW_P1 = ['org.read@P1', 'flag.read@P1'];
const EDIT_P1_ONLY = ['flag.write@P1'];
const ADMIN_P1_ONLY = ['project.update@P1', 'environment.create@P1'];
const ORG_ADMIN_ONLY = ['project.create@org', 'user.create@org', 'user.manage@org', 'auth_provider.manage@org', 'api_token.manage@org', 'webhook.manage@org'];

// People (SDK traffic with a person's token is allowed today: viewers evaluate, editors ingest).
const PERSON_VIEW_ENV = [...VIEW_ENV, ...SDK_READS_ENV];
const PERSON_EDIT_ENV = [...PERSON_VIEW_ENV, ...SDK_WRITES_ENV, ...EDIT_ENV_ONLY];
const PERSON_ADMIN_ENV = [...PERSON_EDIT_ENV, ...ADMIN_ENV_ONLY];
// API tokens: no SDK traffic.
const TOKEN_VIEW_ENV = VIEW_ENV;
const TOKEN_EDIT_ENV = [...VIEW_ENV, ...EDIT_ENV_ONLY];
const TOKEN_ADMIN_ENV = [...TOKEN_EDIT_ENV, ...ADMIN_ENV_ONLY];

const user = (role: 'org_admin' | 'org_member', bindings?: RoleBinding[], isSystem = false): Principal => ({
  kind: 'user',
  userId: 'u1',
  orgId: O,
  role,
  isSystem,
  ...(bindings ? { bindings } : {}),
});
// A binding user's org role is irrelevant once it has bindings: org_member everywhere below.
const bound = (...bindings: RoleBinding[]): Principal => user('org_member', bindings);
const token = (role: BindingRole, scope: ApiTokenScope): Principal => ({ kind: 'api_token', tokenId: 't1', name: 'ci', orgId: O, role, scope, expiresAtMs: null });
const sdkKey = (environmentId: string): Principal => ({ kind: 'sdk_key', sdkKeyId: 'k1', orgId: O, projectId: P1, environmentId });
const clientKey: Principal = { kind: 'client_key', sdkKeyId: 'k2', orgId: O, projectId: P1, environmentId: E1a, client: { ...SERVER_KEY_SETTINGS } };

/** Each principal with the rows it is allowed (every other row: PERMISSION_DENIED). */
const TABLE: ReadonlyArray<[string, Principal, readonly string[]]> = [
  ['org_admin (no bindings)', user('org_admin'), ['org.read@org', ...ORG_ADMIN_ONLY, ...VIEW_P1, ...EDIT_P1_ONLY, ...ADMIN_P1_ONLY, ...PERSON_ADMIN_ENV]],
  ['org_member (no bindings)', user('org_member'), ['org.read@org', ...VIEW_P1, ...EDIT_P1_ONLY, ...PERSON_EDIT_ENV]],
  ['viewer at org', bound({ role: 'viewer' }), ['org.read@org', ...VIEW_P1, ...PERSON_VIEW_ENV]],
  ['editor at org', bound({ role: 'editor' }), ['org.read@org', ...VIEW_P1, ...EDIT_P1_ONLY, ...PERSON_EDIT_ENV]],
  ['admin at org (no people or token management: org_admin only)', bound({ role: 'admin' }), ['org.read@org', 'project.create@org', 'webhook.manage@org', ...VIEW_P1, ...EDIT_P1_ONLY, ...ADMIN_P1_ONLY, ...PERSON_ADMIN_ENV]],
  // an org_admin whose bindings say less: the bindings decide
  ['org_admin with a viewer binding at org', user('org_admin', [{ role: 'viewer' }]), ['org.read@org', ...VIEW_P1, ...PERSON_VIEW_ENV]],
  ['viewer on P1', bound({ role: 'viewer', projectId: P1 }), [...VIEW_P1, ...PERSON_VIEW_ENV]],
  ['editor on P1', bound({ role: 'editor', projectId: P1 }), [...VIEW_P1, ...EDIT_P1_ONLY, ...PERSON_EDIT_ENV]],
  ['admin on P1', bound({ role: 'admin', projectId: P1 }), [...VIEW_P1, ...EDIT_P1_ONLY, ...ADMIN_P1_ONLY, ...PERSON_ADMIN_ENV]],
  ['editor on P2 (out of scope)', bound({ role: 'editor', projectId: P2 }), []],
  ['admin on P2 (out of scope)', bound({ role: 'admin', projectId: P2 }), []],
  // an environment binding reads its project's project-level resources, writes only its environment
  ['viewer on E1a', bound({ role: 'viewer', projectId: P1, environmentId: E1a }), [...VIEW_P1, ...PERSON_VIEW_ENV]],
  ['editor on E1a', bound({ role: 'editor', projectId: P1, environmentId: E1a }), [...VIEW_P1, ...PERSON_EDIT_ENV]],
  ['admin on E1a', bound({ role: 'admin', projectId: P1, environmentId: E1a }), [...VIEW_P1, ...PERSON_ADMIN_ENV]],
  ['editor on E1b (same project, other environment)', bound({ role: 'editor', projectId: P1, environmentId: E1b }), VIEW_P1],
  ['admin on E1b (same project, other environment)', bound({ role: 'admin', projectId: P1, environmentId: E1b }), VIEW_P1],
  ['viewer on P1 and editor on E1a', bound({ role: 'viewer', projectId: P1 }, { role: 'editor', projectId: P1, environmentId: E1a }), [...VIEW_P1, ...PERSON_EDIT_ENV]],
  ['no bindings at all ([])', bound(), []],
  ['api token, editor, whole org', token('editor', {}), ['org.read@org', ...VIEW_P1, ...EDIT_P1_ONLY, ...TOKEN_EDIT_ENV]],
  ['api token, admin, whole org', token('admin', {}), ['org.read@org', 'project.create@org', 'webhook.manage@org', ...VIEW_P1, ...EDIT_P1_ONLY, ...ADMIN_P1_ONLY, ...TOKEN_ADMIN_ENV]],
  ['api token, viewer, whole org', token('viewer', {}), ['org.read@org', ...VIEW_P1, ...TOKEN_VIEW_ENV]],
  ['api token, editor, projects [P1]', token('editor', { projectIds: [P1] }), [...VIEW_P1, ...EDIT_P1_ONLY, ...TOKEN_EDIT_ENV]],
  ['api token, admin, projects [P1]', token('admin', { projectIds: [P1] }), [...VIEW_P1, ...EDIT_P1_ONLY, ...ADMIN_P1_ONLY, ...TOKEN_ADMIN_ENV]],
  ['api token, editor, projects [P1] environments [E1a]', token('editor', { projectIds: [P1], environmentIds: [E1a] }), [...VIEW_P1, ...TOKEN_EDIT_ENV]],
  ['api token, editor, environments [E1a] only', token('editor', { environmentIds: [E1a] }), TOKEN_EDIT_ENV],
  ['api token, editor, projects [P1] environments [E1b] (out of scope)', token('editor', { projectIds: [P1], environmentIds: [E1b] }), VIEW_P1],
  ['api token, admin, projects [P2] (out of scope)', token('admin', { projectIds: [P2] }), []],
  ['api token, admin, projects [] (covers nothing)', token('admin', { projectIds: [] }), []],
  ['system user', user('org_admin', undefined, true), ['admin.manage@org']],
  ['sdk key of E1a', sdkKey(E1a), ['flag.evaluate@E1a', 'flag.sync@E1a', 'event.ingest@E1a', 'exposure.ingest@E1a', 'segment.check@E1a']],
  ['sdk key of E1b', sdkKey(E1b), []],
  ['client key of E1a', clientKey, ['flag.client_evaluate@E1a', 'event.ingest@E1a', 'exposure.ingest@E1a']],
];

test('the decision table: every action on its resource for every kind of principal', () => {
  const labels = new Set(ROWS.map(([label]) => label));
  for (const [name, principal, allowed] of TABLE) {
    for (const label of allowed) assert.ok(labels.has(label), `${name}: unknown row ${label}`);
    for (const [label, action, resource] of ROWS) {
      const decision = authorize(principal, action, resource);
      const expected = allowed.includes(label);
      assert.equal(decision.allowed, expected, `${name} × ${label}: expected ${expected ? 'allowed' : 'refused'}, got ${JSON.stringify(decision)}`);
      if (!decision.allowed) assert.equal(decision.code, 'PERMISSION_DENIED', `${name} × ${label}: a refusal inside the org is 403`);
    }
  }
});

test('another org: people and tokens get NOT_FOUND for what they could ever do, 403 for what they never may; keys 403', () => {
  const elsewhere: ResourceRef = { orgId: X, projectId: 'px', environmentId: 'ex' };
  const tokenNever: readonly Action[] = [
    'admin.manage',
    'user.create',
    'user.manage',
    'auth_provider.manage',
    'api_token.manage',
    'flag.evaluate',
    'flag.sync',
    'event.ingest',
    'exposure.ingest',
    'segment.check',
    'flag.client_evaluate',
    'change_request.approve',
    'change_request.bypass',
  ];
  for (const action of ACTIONS) {
    const person = authorize(user('org_admin'), action, elsewhere);
    assert.deepEqual(decisionCode(person), action === 'admin.manage' ? 'PERMISSION_DENIED' : 'NOT_FOUND', `org_admin × ${action}`);
    const scoped = authorize(bound({ role: 'admin', projectId: 'px' }), action, elsewhere);
    assert.deepEqual(decisionCode(scoped), action === 'admin.manage' ? 'PERMISSION_DENIED' : 'NOT_FOUND', `binding naming another org's project × ${action}`);
    const apiToken = authorize(token('admin', {}), action, elsewhere);
    assert.deepEqual(decisionCode(apiToken), tokenNever.includes(action) ? 'PERMISSION_DENIED' : 'NOT_FOUND', `api token × ${action}`);
    assert.deepEqual(decisionCode(authorize(sdkKey(E1a), action, elsewhere)), 'PERMISSION_DENIED', `sdk key × ${action}`);
    const system = authorize(user('org_admin', undefined, true), action, elsewhere);
    assert.deepEqual(decisionCode(system), action === 'admin.manage' ? 'ALLOWED' : 'PERMISSION_DENIED', `system user × ${action}`);
  }
});

test('authorizeSomewhere: the role held anywhere in the org (org-level actions: only org-wide)', () => {
  const cases: ReadonlyArray<[string, Principal, Action, boolean]> = [
    ['viewer on E1a lists the org', bound({ role: 'viewer', projectId: P1, environmentId: E1a }), 'org.read', true],
    ['editor on P1 may try a flag write', bound({ role: 'editor', projectId: P1 }), 'flag.write', true],
    ['viewer on P1 may not try a flag write', bound({ role: 'viewer', projectId: P1 }), 'flag.write', false],
    ['admin on E1a may try a key creation', bound({ role: 'admin', projectId: P1, environmentId: E1a }), 'sdk_key.create', true],
    ['admin on P1 may not create projects', bound({ role: 'admin', projectId: P1 }), 'project.create', false],
    ['admin on P1 may not manage members', bound({ role: 'admin', projectId: P1 }), 'user.manage', false],
    ['admin at org creates projects', bound({ role: 'admin' }), 'project.create', true],
    ['admin at org never manages members (org_admin only)', bound({ role: 'admin' }), 'user.manage', false],
    ['no bindings: nothing', bound(), 'org.read', false],
    ['token on P1 lists the org', token('viewer', { projectIds: [P1] }), 'org.read', true],
    ['token on P1 may not create projects', token('admin', { projectIds: [P1] }), 'project.create', false],
    ['org-wide admin token creates projects', token('admin', {}), 'project.create', true],
    ['org-wide admin token never manages members', token('admin', {}), 'user.manage', false],
    ['token covering nothing', token('admin', { environmentIds: [] }), 'org.read', false],
    ['an SDK key has no org-level rights', sdkKey(E1a), 'flag.evaluate', false],
  ];
  for (const [name, principal, action, expected] of cases) {
    assert.equal(authorizeSomewhere(principal, action, O).allowed, expected, name);
  }
  assert.equal(decisionCode(authorizeSomewhere(bound({ role: 'admin' }), 'flag.read', X)), 'NOT_FOUND', 'another org: NOT_FOUND');
});

// --- today's decision, kept as the reference (packages/core/src/rbac/authorize.ts before bindings) ---

const LEGACY_ADMIN_ONLY: ReadonlySet<Action> = new Set<Action>([
  'project.create',
  'project.update',
  'environment.create',
  'environment.update',
  'sdk_key.create',
  'sdk_key.delete',
  'user.create',
  'user.manage',
  'auth_provider.manage',
  'api_token.manage',
  // new with issue 38, admin-only from the start
  'webhook.manage',
  // Added with change requests (docs/workflow.md "Change requests and approvals"): bypassing approvals is an admin's, as environment.update is.
  'change_request.bypass',
]);
const LEGACY_SDK_KEY_ACTIONS: ReadonlySet<Action> = new Set<Action>(['flag.evaluate', 'flag.sync', 'event.ingest', 'exposure.ingest', 'segment.check']);
const LEGACY_CLIENT_KEY_ACTIONS: ReadonlySet<Action> = new Set<Action>(['flag.client_evaluate', 'event.ingest', 'exposure.ingest']);

function legacyAuthorize(principal: Principal, action: Action, resource: ResourceRef): Decision {
  if (principal.kind === 'sdk_key' || principal.kind === 'client_key') {
    const allowed = principal.kind === 'sdk_key' ? LEGACY_SDK_KEY_ACTIONS : LEGACY_CLIENT_KEY_ACTIONS;
    if (!allowed.has(action)) {
      return { allowed: false, code: 'PERMISSION_DENIED', reason: principal.kind === 'sdk_key' ? 'an SDK key cannot perform this action' : 'a client key cannot perform this action' };
    }
    if (resource.orgId !== principal.orgId || resource.environmentId !== principal.environmentId) {
      return { allowed: false, code: 'PERMISSION_DENIED', reason: 'the SDK key does not grant access to this environment' };
    }
    return { allowed: true };
  }
  if (principal.kind !== 'user') throw new Error('the reference knows people and keys only');
  if (principal.isSystem) {
    return action === 'admin.manage' ? { allowed: true } : { allowed: false, code: 'PERMISSION_DENIED', reason: 'system-org users may only use /v1/admin routes' };
  }
  if (action === 'admin.manage') return { allowed: false, code: 'PERMISSION_DENIED', reason: 'admin routes require a system-org user' };
  if (resource.orgId !== principal.orgId) return { allowed: false, code: 'NOT_FOUND', reason: 'not found' };
  if (LEGACY_ADMIN_ONLY.has(action) && principal.role !== 'org_admin') {
    return { allowed: false, code: 'PERMISSION_DENIED', reason: `insufficient permissions: ${action} requires org_admin` };
  }
  return { allowed: true };
}

const ids = (prefix: string) => fc.constantFrom(`${prefix}-1`, `${prefix}-2`);
const principalWithoutBindings: fc.Arbitrary<Principal> = fc.oneof(
  fc.record({
    kind: fc.constant('user' as const),
    userId: ids('user'),
    orgId: ids('org'),
    role: fc.constantFrom('org_admin' as const, 'org_member' as const),
    isSystem: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('sdk_key' as const), sdkKeyId: ids('key'), orgId: ids('org'), projectId: ids('project'), environmentId: ids('env') }),
  fc.record({
    kind: fc.constant('client_key' as const),
    sdkKeyId: ids('key'),
    orgId: ids('org'),
    projectId: ids('project'),
    environmentId: ids('env'),
    client: fc.constant({ ...SERVER_KEY_SETTINGS }),
  }),
);
const resource: fc.Arbitrary<ResourceRef> = fc.record({ orgId: ids('org'), projectId: ids('project'), environmentId: ids('env') }, { requiredKeys: ['orgId'] });

test('property: a principal without bindings decides exactly as before bindings existed (allowed, code, reason)', () => {
  fc.assert(
    fc.property(principalWithoutBindings, fc.constantFrom(...ACTIONS), resource, (principal, action, where) => {
      assert.deepEqual(authorize(principal, action, where), legacyAuthorize(principal, action, where));
    }),
    { numRuns: 5_000 },
  );
});

test('property: for a principal without bindings, authorizeSomewhere is the old decision on {orgId}', () => {
  fc.assert(
    fc.property(principalWithoutBindings, fc.constantFrom(...ACTIONS), ids('org'), (principal, action, orgId) => {
      assert.deepEqual(authorizeSomewhere(principal, action, orgId), legacyAuthorize(principal, action, { orgId }));
    }),
    { numRuns: 2_000 },
  );
});

function decisionCode(decision: Decision): 'ALLOWED' | 'PERMISSION_DENIED' | 'NOT_FOUND' {
  return decision.allowed ? 'ALLOWED' : decision.code;
}
