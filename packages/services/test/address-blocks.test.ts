import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { addressBlocks } from '../src/auth/address-blocks.ts';

// Expected blocks written out by hand from the address notation (RFC 4291 section 2.2).
describe('addressBlocks: what login throttling counts an address as', () => {
  test('an IPv4 address is one client, with no site', () => {
    assert.deepEqual(addressBlocks('203.0.113.7'), { client: '203.0.113.7' });
  });

  test('an IPv6 address is counted by its /64 and its /48, however it is written', () => {
    const expected = { client: '2001:db8:aa:1::/64', site: '2001:db8:aa::/48' };
    for (const written of ['2001:db8:aa:1::5', '2001:0DB8:00AA:0001:0000:0000:0000:0005', '2001:db8:aa:1:ffff:ffff:ffff:ffff', '2001:db8:aa:1::1.2.3.4', '2001:db8:aa:1::1%eth0']) {
      assert.deepEqual(addressBlocks(written), expected, written);
    }
    assert.deepEqual(addressBlocks('::1'), { client: '0:0:0:0::/64', site: '0:0:0::/48' });
    assert.deepEqual(addressBlocks('2001:db8::'), { client: '2001:db8:0:0::/64', site: '2001:db8:0::/48' });
  });

  test('an IPv4-mapped IPv6 address is the IPv4 client', () => {
    assert.deepEqual(addressBlocks('::ffff:198.51.100.77'), { client: '198.51.100.77' });
    assert.deepEqual(addressBlocks('::ffff:c633:644d'), { client: '198.51.100.77' });
  });

  test('no address, or text that is not an address, is counted as itself', () => {
    assert.deepEqual(addressBlocks(undefined), { client: 'unknown' });
    assert.deepEqual(addressBlocks(''), { client: 'unknown' });
    for (const text of ['1::2::3', '1:2:3:4:5:6:7:8:9', '12345::1', '1.2.3.4::1', '::1.2.3.999', 'g::1']) {
      assert.deepEqual(addressBlocks(text), { client: text }, text);
    }
  });
});
