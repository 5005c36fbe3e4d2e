import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Flag, Segment } from '@switchyard/core';
import type { SyncPayload } from '@switchyard/services';
import { ChannelTokens, deriveChannelTokenKey, windowedEtag } from '../src/domains/client/rest-channel-tokens.ts';
import { ClientViewChanges, isClientVisible } from '../src/domains/client/rest-client-view-changes.ts';

const flag = (key: string, visible: boolean, segments: string[] = [], version = 1): Flag =>
  ({
    key,
    description: '',
    value_type: 'bool',
    variants: [],
    enabled: true,
    off_variant_key: null,
    rules: segments.length ? [{ id: 'r', conditions: [], segment_keys: segments, variant_key: 'on' }] : [],
    hashing: [],
    version,
    archived: false,
    created_at_ms: 0,
    updated_at_ms: 0,
    client_visible: visible,
  }) as Flag;

const segment = (key: string): Segment => ({ id: key, key, context_type: 'user', kind: 'rule', description: '', conditions: [], included_count: 0, excluded_count: 0, version: 1, created_at_ms: 0, updated_at_ms: 0 });

const payload = (full: boolean, flags: Flag[], extra: Partial<SyncPayload> = {}): SyncPayload => ({
  environmentId: 'env',
  projectId: 'p',
  experimentFlagKeys: [],
  features: [],
  fullSnapshot: full,
  serverTimestampMs: 1,
  flags,
  segments: [],
  removedFlagKeys: [],
  removedSegmentKeys: [],
  ...extra,
});

describe('what a change means for client keys (ClientViewChanges)', () => {
  test('reads client_visible, false when absent', () => {
    assert.equal(isClientVisible(flag('a', true)), true);
    assert.equal(isClientVisible({ ...flag('a', true), client_visible: undefined } as unknown as Flag), false);
  });

  test('hidden flags are no news; visible ones, their hiding, removal and their segments are', () => {
    const view = new ClientViewChanges();
    view.changesClientView(payload(true, [flag('shown', true, ['beta']), flag('hidden', false, ['staff'])]));
    assert.equal(view.changesClientView(payload(false, [flag('hidden', false, ['staff'], 2)])), false, 'a hidden flag changed');
    assert.equal(view.changesClientView(payload(false, [], { segments: [segment('staff')] })), false, 'a segment only a hidden flag uses');
    assert.equal(view.changesClientView(payload(false, [flag('shown', true, ['beta'], 2)])), true, 'a visible flag changed');
    assert.equal(view.changesClientView(payload(false, [], { segments: [segment('beta')] })), true, 'a segment a visible flag uses');
    assert.equal(view.changesClientView(payload(false, [], { removedSegmentKeys: ['beta'] })), true, 'a used segment removed');
    assert.equal(view.changesClientView(payload(false, [flag('hidden', true, ['staff'], 3)])), true, 'a flag became visible');
    assert.equal(view.changesClientView(payload(false, [], { segments: [segment('staff')] })), true, 'its segment now counts');
    assert.equal(view.changesClientView(payload(false, [flag('shown', false, ['beta'], 3)])), true, 'a flag became hidden');
    assert.equal(view.changesClientView(payload(false, [], { segments: [segment('beta')] })), false, 'its segment no longer counts');
    assert.equal(view.changesClientView(payload(false, [], { removedFlagKeys: ['hidden'] })), true, 'a visible flag removed');
    assert.equal(view.changesClientView(payload(false, [flag('new-hidden', false)])), false, 'a new hidden flag');
  });

  test('a hidden flag that a visible one depends on (a prerequisite, transitively) is news, and so are its segments', () => {
    const view = new ClientViewChanges();
    const needs = (f: Flag, on: string): Flag => ({ ...f, prerequisites: [{ flag_key: on, variant_keys: ['on'] }] });
    view.changesClientView(payload(true, [needs(flag('shown', true), 'gate'), needs(flag('gate', false), 'root'), flag('root', false, ['staff']), flag('unrelated', false, ['other'])]));
    assert.equal(view.changesClientView(payload(false, [needs(flag('gate', false, [], 2), 'root')])), true, 'the hidden prerequisite changed');
    assert.equal(view.changesClientView(payload(false, [flag('root', false, ['staff'], 2)])), true, 'its own prerequisite changed');
    assert.equal(view.changesClientView(payload(false, [], { segments: [segment('staff')] })), true, 'a segment the prerequisite of a prerequisite uses');
    assert.equal(view.changesClientView(payload(false, [flag('unrelated', false, ['other'], 2)])), false, 'a hidden flag nothing visible depends on');
    assert.equal(view.changesClientView(payload(false, [], { segments: [segment('other')] })), false, 'its segment');
    assert.equal(view.changesClientView(payload(false, [], { removedFlagKeys: ['root'] })), true, 'a prerequisite removed');
  });

  test('one decision per payload, whichever stream asks', () => {
    const view = new ClientViewChanges();
    view.changesClientView(payload(true, [flag('shown', true)]));
    const change = payload(false, [flag('shown', true, [], 2)]);
    assert.equal(view.changesClientView(change), true);
    assert.equal(view.changesClientView(change), true, 'asked again by another stream: the same answer, not "no difference"');
  });
});

describe('channel tokens', () => {
  const key = deriveChannelTokenKey('a-jwt-secret-of-at-least-32-bytes-long');
  test('open what they issue; expire after one to two windows; never past the key', () => {
    let now = 10 * 60_000 + 1;
    const tokens = new ChannelTokens(() => key, 60_000, () => now);
    const token = tokens.issue('ck_abc', null)!;
    assert.deepEqual(tokens.open(token), { rawKey: 'ck_abc', expiresAtMs: 12 * 60_000 });
    assert.equal(tokens.issue('ck_abc', null), token, 'the same token all window long');
    assert.ok(!token.includes('ck_abc'));
    now = 12 * 60_000;
    assert.equal(tokens.open(token), 'expired');
    const capped = tokens.issue('ck_abc', now + 5_000)!;
    assert.equal((tokens.open(capped) as { expiresAtMs: number }).expiresAtMs, now + 5_000);
  });
  test('another key, a changed byte or garbage: malformed', () => {
    const tokens = new ChannelTokens(() => key, 60_000);
    const token = tokens.issue('ck_abc', null)!;
    const other = new ChannelTokens(() => deriveChannelTokenKey('another-jwt-secret-of-at-least-32-bytes'), 60_000);
    assert.equal(other.open(token), 'malformed');
    const flipped = (token[5] === 'A' ? 'B' : 'A');
    assert.equal(tokens.open(token.slice(0, 5) + flipped + token.slice(6)), 'malformed');
    assert.equal(tokens.open('x'.repeat(600)), 'malformed');
    assert.equal(tokens.open('not a token!'), 'malformed');
    assert.equal(new ChannelTokens(() => null, 60_000).issue('ck_abc', null), null);
  });
  test('the bulk ETag names the window', () => {
    assert.equal(windowedEtag('"abc"', 35), '"abc.wz"');
    assert.notEqual(windowedEtag('"abc"', 1), windowedEtag('"abc"', 2));
  });
});

describe('BrowserStreams (a fake hub and response)', async () => {
  const { BrowserStreams } = await import('../src/domains/client/rest-event-streams.ts');
  const { EventEmitter } = await import('node:events');
  const scope = { orgId: 'o', projectId: 'p', environmentId: 'env' };

  function setup(verify: () => Promise<{ kind: string }>, now = () => Date.now()) {
    const sinks: Array<{ send(message: { sequenceNumber: number; payload: SyncPayload }): string }> = [];
    const hub = { open: (_scope: unknown, _holder: unknown, sink: never) => (sinks.push(sink), { drained() {}, clientBehind() {}, cancel() {} }) };
    const revoked = new EventEmitter();
    const verifier = { onRevoked: (listener: (id: string) => void) => (revoked.on('r', listener), () => revoked.off('r', listener)), verifySdkKey: verify };
    const tokens = new ChannelTokens(() => key, 60_000);
    const streams = new BrowserStreams(hub as never, verifier, tokens, { heartbeatMs: 10, maxPerKey: 10, maxPerKeyAndAddress: 10 }, { isVisible: () => true, now });
    const response = Object.assign(new EventEmitter(), {
      written: '',
      ended: false,
      writableNeedDrain: false,
      writeHead() {},
      write(text: string) {
        this.written += text;
        return true;
      },
      end() {
        this.ended = true;
      },
    });
    return { streams, sinks, response, revoked };
  }
  const key = deriveChannelTokenKey('a-jwt-secret-of-at-least-32-bytes-long');
  const caller = (keyExpiresAtMs: number | null = null) => ({ sdkKeyId: 'k1', rawKey: 'ck_x', keyExpiresAtMs, address: '1.2.3.4', origin: undefined });
  const settle = () => new Promise((resolve) => setTimeout(resolve, 30));

  test('a resync checks the key again: a key no longer valid ends the stream, a valid one keeps it', async () => {
    for (const valid of [true, false]) {
      const { streams, sinks, response } = setup(() => (valid ? Promise.resolve({ kind: 'client_key' }) : Promise.reject(new Error('revoked'))));
      streams.open(scope, caller(), response as never);
      sinks[0]!.send({ sequenceNumber: 1, payload: payload(true, [flag('a', true)]) });
      sinks[0]!.send({ sequenceNumber: 2, payload: payload(true, [flag('a', true)]) });
      await settle();
      assert.equal(response.ended, !valid);
      assert.match(response.written, /refetchEvaluation/, 'a resync is news either way');
      streams.stop();
    }
  });

  test('revocation ends the key streams; the key expiry ends them at the next heartbeat', async () => {
    const revokedCase = setup(() => Promise.resolve({ kind: 'client_key' }));
    revokedCase.streams.open(scope, caller(), revokedCase.response as never);
    revokedCase.revoked.emit('r', 'other-key');
    assert.equal(revokedCase.response.ended, false);
    revokedCase.revoked.emit('r', 'k1');
    assert.equal(revokedCase.response.ended, true);
    assert.equal(revokedCase.streams.stats().streams, 0);
    const expiring = setup(() => Promise.resolve({ kind: 'client_key' }));
    expiring.streams.open(scope, caller(Date.now() + 20), expiring.response as never);
    await settle();
    await settle();
    assert.equal(expiring.response.ended, true);
    expiring.streams.stop();
  });
});
