import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { SwitchyardClient, TestData } from '../src/index.ts';
import { boolFlag, segmentFlag, silent } from './fixtures.ts';

/**
 * client.ofrepBootstrap (docs/sdk.md "Server-side rendering"): the OFREP bulk answer a client key
 * would get, from the definitions in memory. Expected answers derived by hand from the flags.
 */
const clients: SwitchyardClient[] = [];
after(async () => {
  for (const client of clients) await client.close();
});

const BETA = { id: 'beta-rule', conditions: [{ attribute: 'plan', op: 'eq' as const, values: ['beta'] }], variant_key: 'on' };

function clientWith(td: TestData): SwitchyardClient {
  const client = new SwitchyardClient({ testData: td, logger: silent });
  clients.push(client);
  return client;
}

const td = new TestData()
  // visible, a rule on plan: on for beta, off (the off variant) for others
  .setFlag(boolFlag('shown', false, { client_visible: true, rules: [BETA] }))
  // not client-visible
  .setFlag(boolFlag('hidden', true))
  // visible but archived
  .setFlag(boolFlag('archived', true, { client_visible: true, archived: true }))
  // visible but disabled: off variant "off" (false)
  .setFlag(boolFlag('disabled', false, { client_visible: true, enabled: false }))
  // visible, string, no rules: its default (off_variant_key) variant
  .setFlag({
    key: 'banner',
    description: 'never sent to a client',
    value_type: 'string',
    variants: [{ key: 'blue', value: 'Blue banner' }],
    enabled: true,
    off_variant_key: 'blue',
    rules: [],
    hashing: [],
    version: 1,
    archived: false,
    client_visible: true,
    // Metadata for the team (issue 37), never for a page.
    tags: ['tag-never-sent'],
    lifetime: 'temporary',
    maintainer: 'maintainer-never-sent@example.com',
    created_at_ms: 0,
    updated_at_ms: 0,
  })
  // visible, serves a variant without a value when enabled with no off variant
  .setFlag(boolFlag('valueless', true, { client_visible: true, off_variant_key: null }))
  // visible, a list segment: members as the SDK knows them
  .setFlag({ ...segmentFlag('beta-list', 'testers'), client_visible: true })
  .setListMembers('testers', ['u1']);

describe('ofrepBootstrap', () => {
  test('client-visible, enabled, non-archived flags in key order, as key/value/variant/reason', () => {
    const client = clientWith(td);
    const answer = client.ofrepBootstrap({ key: 'u1', attributes: { plan: 'beta' } });
    assert.deepEqual(answer, {
      flags: [
        { key: 'banner', value: 'Blue banner', variant: 'blue', reason: 'DEFAULT' },
        { key: 'beta-list', value: true, variant: 'on', reason: 'TARGETING_MATCH' },
        { key: 'shown', value: true, variant: 'on', reason: 'TARGETING_MATCH' },
        { key: 'valueless', reason: 'DEFAULT' },
      ],
    });
    // The property order of the server's client answers.
    assert.deepEqual(Object.keys(answer.flags[0]!), ['key', 'value', 'variant', 'reason']);
    assert.doesNotMatch(JSON.stringify(answer), /beta-rule|never sent|never-sent|metadata|tags|maintainer|lifetime/);
  });

  test('another context: the rule and the list do not match', () => {
    const answer = clientWith(td).ofrepBootstrap({ key: 'u2', attributes: { plan: 'free' } });
    assert.deepEqual(
      answer.flags.filter((f) => f.key === 'shown' || f.key === 'beta-list'),
      [
        { key: 'beta-list', value: false, variant: 'off', reason: 'DEFAULT' },
        { key: 'shown', value: false, variant: 'off', reason: 'DEFAULT' },
      ],
    );
  });

  test('includeDisabled: the disabled flag with its off variant', () => {
    const answer = clientWith(td).ofrepBootstrap({ key: 'u2' }, { includeDisabled: true });
    assert.deepEqual(answer.flags.map((f) => f.key), ['banner', 'beta-list', 'disabled', 'shown', 'valueless']);
    assert.deepEqual(answer.flags[2], { key: 'disabled', value: false, variant: 'off', reason: 'DISABLED' });
  });

  test('an invalid context: an empty answer, never a throw', () => {
    assert.deepEqual(clientWith(td).ofrepBootstrap({ key: '' }), { flags: [] });
    assert.deepEqual(clientWith(td).ofrepBootstrap(null as never), { flags: [] });
  });
});
