import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DOMParser, XMLSerializer } from '@xmldom/xmldom';
import { isDomainError } from '@switchyard/core';
import { SamlFlows, type SamlIdentity, type SamlProviderSettings } from '../../src/sso/saml-flow.ts';
import { parseIdpMetadata } from '../../src/sso/saml-metadata.ts';
import { NAMEID_EMAIL, createTestSamlIdp, samlId, testKeyPair, type TestSamlResponseParams } from '../support/saml-identity-provider.ts';

const SAMLP = 'urn:oasis:names:tc:SAML:2.0:protocol';
const SAML = 'urn:oasis:names:tc:SAML:2.0:assertion';
const DS = 'http://www.w3.org/2000/09/xmldsig#';

const idp = createTestSamlIdp();
const SETTINGS: SamlProviderSettings = {
  providerId: 'provider-1',
  idp: parseIdpMetadata(idp.metadataXml),
  spEntityId: 'https://switchyard.example.test/sso/saml/provider-1',
  acsUrl: 'https://switchyard.example.test/sso/saml/provider-1/acs',
  nameIdFormat: NAMEID_EMAIL,
};
const flows = new SamlFlows();
const ALICE = 'alice@example.com';
const MALLORY = 'admin@example.com';

/** A fresh request ID as the service provider would have stored it, and a response to it. */
async function started(): Promise<string> {
  return (await flows.authnRequest(SETTINGS, 'relay-state-1')).requestId;
}

const respond = (requestId: string | null, overrides: Partial<TestSamlResponseParams> = {}): string =>
  idp.response({ inResponseTo: requestId, acsUrl: SETTINGS.acsUrl, audience: SETTINGS.spEntityId, nameId: ALICE, sign: 'assertion', ...overrides });

const validate = (samlResponseB64: string, expectedRequestId: string, on: SamlFlows = flows): Promise<SamlIdentity> =>
  on.validate(SETTINGS, { samlResponseB64, expectedRequestId });

const decode = (b64: string): string => Buffer.from(b64, 'base64').toString('utf8');
const encode = (xml: string): string => Buffer.from(xml, 'utf8').toString('base64');
const parse = (xml: string): Document => new DOMParser().parseFromString(xml, 'text/xml');
const serialize = (doc: Document): string => new XMLSerializer().serializeToString(doc);
const child = (parent: Element, ns: string, name: string): Element => {
  for (const node of Array.from(parent.childNodes)) {
    if (node.nodeType === 1 && (node as Element).namespaceURI === ns && (node as Element).localName === name) return node as Element;
  }
  throw new Error(`no ${name} under ${parent.localName}`);
};
/** An unsigned assertion for MALLORY, otherwise valid for `requestId`, imported into `doc`. */
const evilAssertion = (doc: Document, requestId: string, id?: string): Element => {
  const evil = parse(decode(respond(requestId, { nameId: MALLORY, sign: 'none' }))).documentElement as Element;
  const assertion = doc.importNode(child(evil, SAML, 'Assertion'), true) as Element;
  if (id !== undefined) assertion.setAttribute('ID', id);
  return assertion;
};

async function assertRefused(validation: Promise<unknown>, code: 'UNAUTHENTICATED' | 'INVALID_ARGUMENT', message: RegExp): Promise<void> {
  await assert.rejects(validation, (error: unknown) => {
    assert.ok(isDomainError(error), `a DomainError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    if (code === 'UNAUTHENTICATED') assert.match(error.message, /^the SAML response was refused: /);
    else assert.equal(error.field, 'saml_response');
    assert.match(error.message, message);
    return true;
  });
}

describe('SamlFlows.authnRequest', () => {
  test('redirects to the IdP SSO URL with SAMLRequest and RelayState; the AuthnRequest carries the ID returned, our ACS URL and entityID', async () => {
    const { url, requestId } = await flows.authnRequest(SETTINGS, 'relay-state-1');
    const target = new URL(url);
    assert.equal(`${target.origin}${target.pathname}`, idp.ssoUrl);
    assert.ok(target.searchParams.get('SAMLRequest'));
    const request = idp.readAuthnRequest(url);
    assert.equal(request.id, requestId);
    assert.match(requestId, /^_[0-9a-f]{40}$/, 'an NCName with 160 random bits');
    assert.equal(request.acsUrl, SETTINGS.acsUrl);
    assert.equal(request.issuer, SETTINGS.spEntityId);
    assert.equal(request.relayState, 'relay-state-1');
  });

  test('gives every request a new ID', async () => {
    const ids = await Promise.all([1, 2, 3].map(async () => (await flows.authnRequest(SETTINGS, 'r')).requestId));
    assert.equal(new Set(ids).size, 3);
  });

  test('keeps query parameters the IdP\'s SSO URL already has', async () => {
    const settings = { ...SETTINGS, idp: { ...SETTINGS.idp, ssoRedirectUrl: 'https://idp.example.test/sso?tenant=acme' } };
    const { url } = await flows.authnRequest(settings, 'r');
    assert.equal(new URL(url).searchParams.get('tenant'), 'acme');
  });

  test('refuses a relay state the binding does not allow (empty, over 80 bytes)', async () => {
    for (const relayState of ['', 'x'.repeat(81)]) {
      await assert.rejects(flows.authnRequest(SETTINGS, relayState), (error: unknown) => isDomainError(error) && error.code === 'INVALID_ARGUMENT');
    }
  });
});

describe('SamlFlows.spMetadata', () => {
  test('describes our entityID, the HTTP-POST ACS, the NameID format, and asks for signed assertions', async () => {
    const doc = parse(await flows.spMetadata(SETTINGS));
    const entity = doc.documentElement as Element;
    assert.equal(entity.localName, 'EntityDescriptor');
    assert.equal(entity.getAttribute('entityID'), SETTINGS.spEntityId);
    const sp = entity.getElementsByTagNameNS('urn:oasis:names:tc:SAML:2.0:metadata', 'SPSSODescriptor')[0];
    assert.ok(sp);
    assert.equal(sp.getAttribute('WantAssertionsSigned'), 'true');
    const acs = sp.getElementsByTagNameNS('urn:oasis:names:tc:SAML:2.0:metadata', 'AssertionConsumerService')[0];
    assert.equal(acs?.getAttribute('Binding'), 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST');
    assert.equal(acs?.getAttribute('Location'), SETTINGS.acsUrl);
    assert.equal(sp.getElementsByTagNameNS('urn:oasis:names:tc:SAML:2.0:metadata', 'NameIDFormat')[0]?.textContent, NAMEID_EMAIL);
  });
});

describe('SamlFlows.validate accepts', () => {
  for (const sign of ['assertion', 'response', 'both'] as const) {
    test(`a response with a valid signature on the ${sign === 'both' ? 'Response and the Assertion' : sign}`, async () => {
      const requestId = await started();
      const identity = await validate(respond(requestId, { sign, attributes: { displayName: 'Alice Liddell' } }), requestId);
      assert.deepEqual(identity, { issuer: idp.entityId, subject: ALICE, nameIdFormat: NAMEID_EMAIL, email: ALICE, displayName: 'Alice Liddell' });
    });
  }

  test('groups: every value of the named attribute, the first 1000 only; not read unless asked for', async () => {
    const requestId = await started();
    const many = Array.from({ length: 1005 }, (_, i) => `g${i}`);
    const answer = respond(requestId, { sign: 'both', attributes: { memberOf: ['cn=devs', 'cn=qa', ...many], groups: 'ignored' } });
    const identity = await flows.validate({ ...SETTINGS, groupsAttribute: 'memberOf' }, { samlResponseB64: answer, expectedRequestId: requestId });
    assert.equal(identity.groups?.length, 1000);
    assert.deepEqual(identity.groups?.slice(0, 3), ['cn=devs', 'cn=qa', 'g0']);
    assert.equal(identity.groups?.at(-1), 'g997');
    const other = await started();
    const plain = await validate(respond(other, { sign: 'both', attributes: { memberOf: 'cn=devs' } }), other);
    assert.equal(plain.groups, undefined, 'no groups attribute configured: none read');
  });

  test('the email from an attribute when the NameID is opaque, and no Destination on a response with a signed assertion', async () => {
    const requestId = await started();
    const persistent = 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent';
    const identity = await validate(respond(requestId, {
      nameId: 'a5f3c0de-77', nameIdFormat: persistent, destination: null,
      attributes: { 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress': 'alice@corp.example' },
    }), requestId);
    assert.deepEqual(identity, { issuer: idp.entityId, subject: 'a5f3c0de-77', nameIdFormat: persistent, email: 'alice@corp.example', displayName: null });
  });

  test('times within the clock skew (default one minute) either side', async () => {
    const requestId = await started();
    const real = Date.now();
    const response = respond(requestId, { notBefore: new Date(real + 30_000), notOnOrAfter: new Date(real + 90_000) });
    await validate(response, requestId, new SamlFlows({ now: () => real }));
    await validate(response, requestId, new SamlFlows({ now: () => real + 120_000 }));
  });
});

describe('SamlFlows.validate refuses', () => {
  test('an unsigned response', async () => {
    const requestId = await started();
    await assertRefused(validate(respond(requestId, { sign: 'none' }), requestId), 'UNAUTHENTICATED', /no valid signature/);
  });

  test('a response signed with another key, its certificate in KeyInfo (xml-crypto CVE-2024-32962, GHSA-2xp3-57p7-qf4v)', async () => {
    const requestId = await started();
    const stranger = testKeyPair('switchyard-test-stranger');
    for (const sign of ['assertion', 'response', 'both'] as const) {
      await assertRefused(validate(respond(requestId, { sign, signWith: stranger, nameId: MALLORY }), requestId), 'UNAUTHENTICATED', /no valid signature/);
    }
  });

  test('a response signed with another key, without KeyInfo', async () => {
    const requestId = await started();
    const signed = decode(respond(requestId, { signWith: testKeyPair('switchyard-test-stranger'), nameId: MALLORY }));
    const withoutKeyInfo = signed.replace(/<ds:KeyInfo>.*?<\/ds:KeyInfo>/s, '');
    assert.notEqual(withoutKeyInfo, signed);
    await assertRefused(validate(encode(withoutKeyInfo), requestId), 'UNAUTHENTICATED', /no valid signature/);
  });

  test('an expired assertion (NotOnOrAfter past, beyond the skew)', async () => {
    const requestId = await started();
    const response = respond(requestId, { notBefore: new Date(Date.now() - 600_000), notOnOrAfter: new Date(Date.now() - 61_000) });
    await assertRefused(validate(response, requestId), 'UNAUTHENTICATED', /expired/);
    const later = respond(requestId, { notOnOrAfter: new Date(Date.now() + 30_000) });
    await assertRefused(validate(later, requestId, new SamlFlows({ now: () => Date.now() + 91_000 })), 'UNAUTHENTICATED', /expired/);
  });

  test('an assertion not yet valid (NotBefore future, beyond the skew)', async () => {
    const requestId = await started();
    const response = respond(requestId, { notBefore: new Date(Date.now() + 5 * 60_000), notOnOrAfter: new Date(Date.now() + 10 * 60_000) });
    await assertRefused(validate(response, requestId), 'UNAUTHENTICATED', /not valid yet/);
    await assertRefused(validate(respond(requestId), requestId, new SamlFlows({ clockSkewMs: 0, now: () => Date.now() - 61_000 })), 'UNAUTHENTICATED', /not valid yet/);
  });

  test('an assertion for another service provider (Audience)', async () => {
    const requestId = await started();
    for (const sign of ['assertion', 'response'] as const) {
      await assertRefused(validate(respond(requestId, { sign, audience: 'https://other-sp.example.test' }), requestId), 'UNAUTHENTICATED', /Audience/);
    }
  });

  test('a response for another ACS URL: Destination and Recipient, or either alone', async () => {
    const requestId = await started();
    const elsewhere = 'https://other-sp.example.test/acs';
    await assertRefused(validate(respond(requestId, { acsUrl: elsewhere }), requestId), 'UNAUTHENTICATED', /Destination/);
    await assertRefused(validate(respond(requestId, { sign: 'response', destination: elsewhere }), requestId), 'UNAUTHENTICATED', /Destination/);
    await assertRefused(validate(respond(requestId, { recipient: elsewhere }), requestId), 'UNAUTHENTICATED', /Recipient/);
    await assertRefused(validate(respond(requestId, { sign: 'response', recipient: elsewhere }), requestId), 'UNAUTHENTICATED', /Recipient/);
  });

  test('a response issued by another entity (Issuer), even signed with the IdP\'s key', async () => {
    const requestId = await started();
    for (const sign of ['assertion', 'response'] as const) {
      await assertRefused(validate(respond(requestId, { sign, issuer: 'https://other-idp.example.test' }), requestId), 'UNAUTHENTICATED', /Issuer/);
    }
  });

  test('a response to another request (InResponseTo), including a request this SP really sent', async () => {
    const requestId = await started();
    const other = await started();
    for (const sign of ['assertion', 'response'] as const) {
      await assertRefused(validate(respond(other, { sign }), requestId), 'UNAUTHENTICATED', /InResponseTo/);
    }
  });

  test('an unsolicited (IdP-initiated) response without InResponseTo', async () => {
    const requestId = await started();
    for (const sign of ['assertion', 'both'] as const) {
      await assertRefused(validate(respond(null, { sign }), requestId), 'UNAUTHENTICATED', /unsolicited/);
    }
  });

  test('a signed unsolicited assertion in an unsigned envelope that claims to answer the request', async () => {
    // node-saml alone accepts this one: it compares the (unsigned) Response's InResponseTo with
    // its cache and the assertion's only when the assertion has one.
    const requestId = await started();
    const doc = parse(decode(respond(null, { sign: 'assertion' })));
    (doc.documentElement as Element).setAttribute('InResponseTo', requestId);
    await assertRefused(validate(encode(serialize(doc)), requestId), 'UNAUTHENTICATED', /unsolicited/);
  });

  test('an assertion answering another request in an unsigned envelope that claims this one', async () => {
    const requestId = await started();
    const doc = parse(decode(respond(await started(), { sign: 'assertion' })));
    (doc.documentElement as Element).setAttribute('InResponseTo', requestId);
    await assertRefused(validate(encode(serialize(doc)), requestId), 'UNAUTHENTICATED', /InResponseTo/);
  });

  test('a status other than Success, signed or not', async () => {
    const requestId = await started();
    await assertRefused(validate(respond(requestId, { sign: 'response', status: 'urn:oasis:names:tc:SAML:2.0:status:Requester' }), requestId),
      'UNAUTHENTICATED', /did not report success \(Requester\)/);
    await assertRefused(validate(respond(requestId, { sign: 'none', status: 'urn:oasis:names:tc:SAML:2.0:status:Responder' }), requestId),
      'UNAUTHENTICATED', /did not report success \(Responder\)/);
  });

  test('a response tampered with after signing (NameID changed)', async () => {
    const requestId = await started();
    for (const sign of ['assertion', 'response', 'both'] as const) {
      const signed = decode(respond(requestId, { sign }));
      const tampered = signed.replace(`>${ALICE}</saml:NameID>`, `>${MALLORY}</saml:NameID>`);
      assert.notEqual(tampered, signed);
      await assertRefused(validate(encode(tampered), requestId), 'UNAUTHENTICATED', /no valid signature/);
    }
  });

  test('a comment injected into the NameID after signing does not truncate the identity (CVE-2017-11427/11428/11429, Duo "Duo Finds SAML Vulnerabilities", 2018)', async () => {
    // Exclusive c14n drops comments, so the signature still verifies; a parser that reads only the
    // first text node of NameID would see "user@evil.com". The identity must be the whole text or nothing.
    const signedName = 'user@evil.com.example.com';
    for (const sign of ['assertion', 'response'] as const) {
      const requestId = await started();
      const signed = decode(respond(requestId, { sign, nameId: signedName }));
      const injected = signed.replace(`>${signedName}<`, '>user@evil.com<!---->.example.com<');
      assert.notEqual(injected, signed);
      try {
        const identity = await validate(encode(injected), requestId);
        assert.equal(identity.subject, signedName);
        assert.equal(identity.email, signedName);
      } catch (error) {
        assert.ok(isDomainError(error) && error.code === 'UNAUTHENTICATED', String(error));
      }
    }
  });

  describe('XML signature wrapping (XSW)', () => {
    // Two layers refuse these: SamlFlows' own rule that the document holds exactly one assertion,
    // the Response's child, and behind it node-saml's signature checks (one Reference, to the
    // signature's parent, an ID unique in the document, at most one assertion under the Response),
    // which on their own also refuse every variant below ("no valid signature"), so the expected
    // messages allow either.
    test('(a) an evil unsigned Assertion inserted before the signed one in the Response', async () => {
      // Somorovsky et al., "On Breaking SAML: Be Whoever You Want to Be", USENIX Security 2012,
      // XSW3 (and XSW4's sibling form): the verifier checks the signed assertion, the application
      // reads the first one. Also the shape of node-saml/passport-saml CVE-2022-39299 (GHSA-m974-647v-whv7).
      const requestId = await started();
      const doc = parse(decode(respond(requestId, { sign: 'assertion' })));
      const response = doc.documentElement as Element;
      const signed = child(response, SAML, 'Assertion');
      response.insertBefore(evilAssertion(doc, requestId), signed);
      await assertRefused(validate(encode(serialize(doc)), requestId), 'UNAUTHENTICATED', /exactly one assertion/);
    });

    test('(b) the signed Assertion moved into an Extensions wrapper, an evil one in its place', async () => {
      // Somorovsky et al. 2012, XSW5/XSW6 family (the signed assertion relocated into a wrapper the
      // verifier searches and the application ignores); CVE-2022-39299 (GHSA-m974-647v-whv7).
      const requestId = await started();
      const doc = parse(decode(respond(requestId, { sign: 'assertion' })));
      const response = doc.documentElement as Element;
      const signed = child(response, SAML, 'Assertion');
      const extensions = doc.createElementNS(SAMLP, 'samlp:Extensions');
      response.insertBefore(extensions, child(response, SAMLP, 'Status'));
      response.replaceChild(evilAssertion(doc, requestId), signed);
      extensions.appendChild(signed);
      await assertRefused(validate(encode(serialize(doc)), requestId), 'UNAUTHENTICATED', /exactly one assertion|no valid signature/);
    });

    test('(b\') an evil Assertion carrying the original Signature, the signed Assertion moved into its ds:Object', async () => {
      // Somorovsky et al. 2012, XSW7/XSW8: the signature's reference still resolves (to the
      // original inside ds:Object), so a verifier that only checks "some signature in this
      // assertion is valid" passes while the application reads the evil assertion around it.
      const requestId = await started();
      const doc = parse(decode(respond(requestId, { sign: 'assertion' })));
      const response = doc.documentElement as Element;
      const signed = child(response, SAML, 'Assertion');
      const signature = child(signed, DS, 'Signature');
      const evil = evilAssertion(doc, requestId);
      const evilSignature = signature.cloneNode(true) as Element;
      evil.insertBefore(evilSignature, child(evil, SAML, 'Subject'));
      const object = doc.createElementNS(DS, 'ds:Object');
      evilSignature.appendChild(object);
      response.replaceChild(evil, signed);
      signed.removeChild(signature);
      object.appendChild(signed);
      await assertRefused(validate(encode(serialize(doc)), requestId), 'UNAUTHENTICATED', /exactly one assertion|no valid signature/);
    });

    test('(c) a signed Response moved into a new evil Response, whose assertion is unsigned', async () => {
      // Somorovsky et al. 2012, XSW1 (original Response inside the Signature's ds:Object) and XSW2
      // (original Response as a detached sibling before the Signature).
      for (const placement of ['object', 'sibling'] as const) {
        const requestId = await started();
        const original = parse(decode(respond(requestId, { sign: 'response' }))).documentElement as Element;
        const doc = parse(decode(respond(requestId, { sign: 'none', nameId: MALLORY })));
        const evil = doc.documentElement as Element;
        evil.setAttribute('ID', samlId());
        const signature = doc.importNode(child(original, DS, 'Signature'), true) as Element;
        evil.insertBefore(signature, child(evil, SAMLP, 'Status'));
        const moved = doc.importNode(original, true) as Element;
        moved.removeChild(child(moved, DS, 'Signature'));
        if (placement === 'object') signature.appendChild(doc.createElementNS(DS, 'ds:Object')).appendChild(moved);
        else evil.insertBefore(moved, signature);
        await assertRefused(validate(encode(serialize(doc)), requestId), 'UNAUTHENTICATED', /exactly one assertion|no valid signature/);
      }
    });

    test('(c\') a signed Response whose signed Assertion is replaced by an evil one, the original moved into Extensions', async () => {
      // Somorovsky et al. 2012 applied to a Response signed as a whole: the signature covers the
      // Response, so any move inside it changes the digest; passport-saml CVE-2022-39299 (GHSA-m974-647v-whv7).
      const requestId = await started();
      const doc = parse(decode(respond(requestId, { sign: 'both' })));
      const response = doc.documentElement as Element;
      const signed = child(response, SAML, 'Assertion');
      const extensions = doc.createElementNS(SAMLP, 'samlp:Extensions');
      response.insertBefore(extensions, child(response, SAMLP, 'Status'));
      response.replaceChild(evilAssertion(doc, requestId), signed);
      extensions.appendChild(signed);
      await assertRefused(validate(encode(serialize(doc)), requestId), 'UNAUTHENTICATED', /exactly one assertion|no valid signature/);
    });

    test('(d) two Assertions with the same ID where only the second is signed', async () => {
      // Somorovsky et al. 2012, §5 (ID-based dereferencing): with duplicate IDs the verifier may
      // resolve the reference to the signed element while the application reads the first.
      const requestId = await started();
      const doc = parse(decode(respond(requestId, { sign: 'assertion' })));
      const response = doc.documentElement as Element;
      const signed = child(response, SAML, 'Assertion');
      response.insertBefore(evilAssertion(doc, requestId, signed.getAttribute('ID') ?? ''), signed);
      await assertRefused(validate(encode(serialize(doc)), requestId), 'UNAUTHENTICATED', /exactly one assertion|no valid signature/);
    });

    test('(e) a DOCTYPE with an entity, even when the entity would leave the signed text unchanged', async () => {
      // XXE and entity expansion (OWASP "XML External Entity Prevention"); with entities, the text a
      // signature covers and the text an application reads can differ.
      const requestId = await started();
      const signed = decode(respond(requestId, { sign: 'assertion' }));
      const withDoctype = `<!DOCTYPE samlp:Response [<!ENTITY who "${ALICE}">]>${signed.replace(`>${ALICE}</saml:NameID>`, '>&who;</saml:NameID>')}`;
      await assertRefused(validate(encode(withDoctype), requestId), 'INVALID_ARGUMENT', /DOCTYPE/);
      const xxe = `<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>${signed}`;
      await assertRefused(validate(encode(xxe), requestId), 'INVALID_ARGUMENT', /DOCTYPE/);
    });
  });

  describe('malformed input as INVALID_ARGUMENT', () => {
    test('not base64', async () => {
      await assertRefused(validate('not*base64!', 'x'), 'INVALID_ARGUMENT', /base64/);
      await assertRefused(validate('', 'x'), 'INVALID_ARGUMENT', /base64/);
    });
    test('base64 of something that is not XML', async () => {
      await assertRefused(validate(encode('hello, world'), 'x'), 'INVALID_ARGUMENT', /not well-formed XML/);
    });
    test('XML that is not a SAML Response', async () => {
      await assertRefused(validate(encode('<html><body/></html>'), 'x'), 'INVALID_ARGUMENT', /not a SAML 2.0 Response/);
      await assertRefused(validate(encode(`<Response xmlns="urn:example">${ALICE}</Response>`), 'x'), 'INVALID_ARGUMENT', /not a SAML 2.0 Response/);
    });
    test('more than 256 KiB, before it is parsed', async () => {
      const requestId = await started();
      const padded = decode(respond(requestId)).replace('</samlp:Response>', `<!--${'x'.repeat(256 * 1024)}--></samlp:Response>`);
      await assertRefused(validate(encode(padded), requestId), 'INVALID_ARGUMENT', /larger than 256 KiB/);
    });
  });
});
