import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { describe, test } from 'node:test';
import { isDomainError } from '@switchyard/core';
import { parseIdpMetadata } from '../../src/sso/saml-metadata.ts';
import { certificateBody, testKeyPair } from '../support/saml-identity-provider.ts';

const ENTITY_ID = 'https://idp.example.test/metadata';
const SSO_URL = 'https://idp.example.test/sso/redirect';
const KEYS = testKeyPair('switchyard-test-idp');
const OTHER = testKeyPair('switchyard-test-other');
const REDIRECT = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect';
const POST = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST';

const keyDescriptor = (certificatePem: string, use: string | null = 'signing', prefix = 'md', dsPrefix = 'ds') =>
  `<${prefix}:KeyDescriptor${use === null ? '' : ` use="${use}"`}><${dsPrefix}:KeyInfo xmlns:${dsPrefix}="http://www.w3.org/2000/09/xmldsig#"><${dsPrefix}:X509Data><${dsPrefix}:X509Certificate>
${certificateBody(certificatePem).match(/.{1,64}/g)?.join('\n')}
</${dsPrefix}:X509Certificate></${dsPrefix}:X509Data></${dsPrefix}:KeyInfo></${prefix}:KeyDescriptor>`;

const idpDescriptor = ({ keys = [keyDescriptor(KEYS.certificatePem)], services = [[REDIRECT, SSO_URL], [POST, `${SSO_URL}/post`]] }: { keys?: string[]; services?: string[][] } = {}) =>
  `<md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">${keys.join('')}` +
  services.map(([binding, location]) => `<md:SingleSignOnService Binding="${binding}" Location="${location}"/>`).join('') +
  '</md:IDPSSODescriptor>';

const entity = (entityId = ENTITY_ID, body = idpDescriptor()) =>
  `<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="${entityId}">${body}</md:EntityDescriptor>`;

const spEntity = (entityId: string) =>
  `<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="${entityId}"><md:SPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">` +
  `<md:AssertionConsumerService Binding="${POST}" Location="https://sp.example.test/acs" index="0"/></md:SPSSODescriptor></md:EntityDescriptor>`;

const entities = (...members: string[]) =>
  `<md:EntitiesDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata">${members.join('')}</md:EntitiesDescriptor>`;

const samePem = (a: string, b: string): boolean => new X509Certificate(a).fingerprint256 === new X509Certificate(b).fingerprint256;

function assertRefused(xml: string, message: RegExp, field = 'idp_metadata_xml'): void {
  assert.throws(
    () => parseIdpMetadata(xml, field === 'idp_metadata_xml' ? undefined : field),
    (error: unknown) => {
      assert.ok(isDomainError(error), 'a DomainError');
      assert.equal(error.code, 'INVALID_ARGUMENT');
      assert.equal(error.field, field);
      assert.match(error.message, message);
      return true;
    },
  );
}

describe('parseIdpMetadata', () => {
  test('reads the entityID, the HTTP-Redirect SSO URL and the signing certificate', () => {
    const metadata = parseIdpMetadata(`<?xml version="1.0" encoding="UTF-8"?>\n${entity()}`);
    assert.equal(metadata.entityId, ENTITY_ID);
    assert.equal(metadata.ssoRedirectUrl, SSO_URL);
    assert.equal(metadata.signingCertificates.length, 1);
    assert.ok(samePem(metadata.signingCertificates[0] ?? '', KEYS.certificatePem));
  });

  test('is namespace-aware: other prefixes (or a default namespace) for md and ds read the same', () => {
    const xml =
      `<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata" entityID="${ENTITY_ID}">` +
      '<IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">' +
      `<KeyDescriptor use="signing"><sig:KeyInfo xmlns:sig="http://www.w3.org/2000/09/xmldsig#"><sig:X509Data><sig:X509Certificate>${certificateBody(KEYS.certificatePem)}</sig:X509Certificate></sig:X509Data></sig:KeyInfo></KeyDescriptor>` +
      `<SingleSignOnService Binding="${REDIRECT}" Location="${SSO_URL}"/></IDPSSODescriptor></EntityDescriptor>`;
    const metadata = parseIdpMetadata(xml);
    assert.equal(metadata.entityId, ENTITY_ID);
    assert.ok(samePem(metadata.signingCertificates[0] ?? '', KEYS.certificatePem));
  });

  test('takes KeyDescriptors with use="signing" or without use, and skips use="encryption"', () => {
    const metadata = parseIdpMetadata(entity(ENTITY_ID, idpDescriptor({
      keys: [keyDescriptor(OTHER.certificatePem, 'encryption'), keyDescriptor(KEYS.certificatePem, null)],
    })));
    assert.equal(metadata.signingCertificates.length, 1);
    assert.ok(samePem(metadata.signingCertificates[0] ?? '', KEYS.certificatePem));

    const rollover = parseIdpMetadata(entity(ENTITY_ID, idpDescriptor({
      keys: [keyDescriptor(KEYS.certificatePem), keyDescriptor(OTHER.certificatePem), keyDescriptor(KEYS.certificatePem)],
    })));
    assert.equal(rollover.signingCertificates.length, 2, 'both certificates of a key rollover, duplicates once');
  });

  test('refuses an http SSO URL unless allowed (SSO_ALLOW_PRIVATE_NETWORKS, development)', () => {
    const xml = entity(ENTITY_ID, idpDescriptor({ services: [[REDIRECT, 'http://idp.internal:8080/sso']] }));
    assert.throws(
      () => parseIdpMetadata(xml, 'saml.idp_metadata_xml'),
      (error: unknown) => isDomainError(error) && error.code === 'INVALID_ARGUMENT' && error.field === 'saml.idp_metadata_xml' && /not https/.test(error.message),
    );
    assert.equal(parseIdpMetadata(xml, undefined, { allowHttp: true }).ssoRedirectUrl, 'http://idp.internal:8080/sso');
  });

  test('picks the one identity provider of an EntitiesDescriptor that also lists service providers', () => {
    const metadata = parseIdpMetadata(entities(spEntity('https://sp-one.example.test'), entity(), spEntity('https://sp-two.example.test')));
    assert.equal(metadata.entityId, ENTITY_ID);
    assert.equal(metadata.ssoRedirectUrl, SSO_URL);
  });

  describe('refuses', () => {
    test('text that is not XML', () => assertRefused('this is not xml at all', /not well-formed XML/));
    test('broken XML', () => assertRefused(entity().slice(0, -10), /not well-formed XML/));
    test('XML that is not metadata', () => assertRefused('<html><body>login</body></html>', /not a SAML 2.0 EntityDescriptor/));
    test('an EntityDescriptor without IDPSSODescriptor (a service provider\'s metadata)', () =>
      assertRefused(spEntity('https://sp.example.test'), /no IDPSSODescriptor/));
    test('an EntitiesDescriptor with two identity providers', () =>
      assertRefused(entities(entity('https://idp-one.example.test'), entity('https://idp-two.example.test')), /describes 2 identity providers/));
    test('an EntitiesDescriptor with no identity provider', () =>
      assertRefused(entities(spEntity('https://sp-one.example.test'), spEntity('https://sp-two.example.test')), /no IDPSSODescriptor/));
    test('no HTTP-Redirect SingleSignOnService (only HTTP-POST)', () =>
      assertRefused(entity(ENTITY_ID, idpDescriptor({ services: [[POST, SSO_URL]] })), /^the IdP metadata has no HTTP-Redirect SingleSignOnService$/));
    test('an SSO Location that is not an http(s) URL', () => {
      assertRefused(entity(ENTITY_ID, idpDescriptor({ services: [[REDIRECT, 'javascript:alert(1)']] })), /not an http\(s\) URL/);
      assertRefused(entity(ENTITY_ID, idpDescriptor({ services: [[REDIRECT, '/relative/sso']] })), /not an http\(s\) URL/);
    });
    test('no signing certificate (none at all, or only an encryption key)', () => {
      assertRefused(entity(ENTITY_ID, idpDescriptor({ keys: [] })), /no signing certificate/);
      assertRefused(entity(ENTITY_ID, idpDescriptor({ keys: [keyDescriptor(KEYS.certificatePem, 'encryption')] })), /no signing certificate/);
    });
    test('a signing certificate that is not a certificate', () =>
      assertRefused(entity(ENTITY_ID, idpDescriptor({ keys: [keyDescriptor('-----BEGIN CERTIFICATE-----\nTUlJQm5vdGFjZXJ0\n-----END CERTIFICATE-----')] })), /not a valid X.509 certificate/));
    test('a missing entityID', () => assertRefused(entity('').replace(' entityID=""', ''), /no entityID/));
    test('a DOCTYPE with entities (XXE / billion laughs), before anything is expanded', () => {
      const laughs = '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>';
      assertRefused(`${laughs}${entity(ENTITY_ID)}`, /must not contain a DOCTYPE/);
      const xxe = '<?xml version="1.0"?><!DOCTYPE md:EntityDescriptor [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>';
      assertRefused(`${xxe}${entity('&xxe;')}`, /must not contain a DOCTYPE/);
      assertRefused(`<!doctype html>${entity()}`, /must not contain a DOCTYPE/);
    });
    test('documents over 256 KiB', () => assertRefused(`${entity()}<!--${'x'.repeat(256 * 1024)}-->`, /larger than 256 KiB/));
    test('with the field name the caller gives', () => assertRefused('nope', /IdP metadata/, 'metadata'));
  });
});
