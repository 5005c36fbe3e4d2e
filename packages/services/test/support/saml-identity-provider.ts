/**
 * A SAML 2.0 identity provider for tests: metadata, signed (or deliberately unsigned, misdated,
 * misaddressed) Responses built by hand, and a reader for the AuthnRequests the service provider
 * sends it. It has no HTTP server: tests (these unit tests, and the HTTP integration tests that
 * drive a full sign-in) call `readAuthnRequest` on the redirect URL the server answered with and
 * POST `response(...)` to the ACS endpoint themselves.
 *
 * The XML is written out by hand rather than with a SAML library so that every element the
 * service provider checks is visible here, and so that tests can produce exactly the malformed
 * or malicious documents they need (see packages/services/test/sso/saml-flow.test.ts).
 *
 * Keys are RSA 2048 with self-signed certificates made by the openssl CLI, generated once per
 * process and label (`testKeyPair`), so a test file pays for key generation once.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { inflateRawSync } from 'node:zlib';
import { DOMParser } from '@xmldom/xmldom';
import { SignedXml } from 'xml-crypto';

export interface TestKeyPair {
  privateKeyPem: string;
  certificatePem: string;
}

export interface TestSamlResponseParams {
  /** The AuthnRequest ID answered, on the Response and the SubjectConfirmationData; null: unsolicited. */
  inResponseTo: string | null;
  /** Destination of the Response and Recipient of the SubjectConfirmationData (unless overridden below). */
  acsUrl: string;
  audience: string;
  nameId: string;
  /** Default urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress. */
  nameIdFormat?: string;
  /** One AttributeValue per attribute name; a list: one AttributeValue per item (multi-valued, e.g. groups). */
  attributes?: Record<string, string | string[]>;
  /** Conditions NotBefore; default one minute ago. */
  notBefore?: Date;
  /** Conditions and SubjectConfirmationData NotOnOrAfter; default five minutes from now. */
  notOnOrAfter?: Date;
  /** Issuer of the Response and the Assertion; default the IdP's entityId. */
  issuer?: string;
  /** Which elements carry an enveloped signature. 'both': the Assertion first, then the Response around it. */
  sign: 'assertion' | 'response' | 'both' | 'none';
  /** Sign with another key, whose certificate goes into KeyInfo; default the IdP's own key. */
  signWith?: TestKeyPair;
  /** Extensions beyond the shared interface, for the refusal tests: */
  /** Response Destination when it should differ from acsUrl; null leaves the attribute out. */
  destination?: string | null;
  /** SubjectConfirmationData Recipient when it should differ from acsUrl. */
  recipient?: string;
  /** Top-level StatusCode; default urn:oasis:names:tc:SAML:2.0:status:Success. */
  status?: string;
}

export interface TestSamlIdp {
  entityId: string;
  ssoUrl: string;
  /** IDPSSODescriptor metadata with the signing certificate and HTTP-Redirect and HTTP-POST SSO endpoints. */
  metadataXml: string;
  certificatePem: string;
  privateKeyPem: string;
  /** A Response for the given AuthnRequest-ish parameters, signed as asked, base64 as the HTTP-POST binding carries it. */
  response(p: TestSamlResponseParams): string;
  /** Reads a redirect-binding AuthnRequest URL (inflate + parse) and returns its ID, ACS URL, Issuer and RelayState. */
  readAuthnRequest(url: string): { id: string; acsUrl: string | null; issuer: string; relayState: string | null };
}

export const SAML_SUCCESS = 'urn:oasis:names:tc:SAML:2.0:status:Success';
export const NAMEID_EMAIL = 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress';
const RSA_SHA256 = 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256';
const SHA256 = 'http://www.w3.org/2001/04/xmlenc#sha256';
const EXC_C14N = 'http://www.w3.org/2001/10/xml-exc-c14n#';
const ENVELOPED = 'http://www.w3.org/2000/09/xmldsig#enveloped-signature';

const keyPairs = new Map<string, TestKeyPair>();

/** An RSA key and a self-signed certificate for it, made once per process for each label. */
export function testKeyPair(label: string): TestKeyPair {
  const cached = keyPairs.get(label);
  if (cached) return cached;
  const dir = mkdtempSync(path.join(tmpdir(), 'switchyard-saml-'));
  try {
    const keyFile = path.join(dir, 'key.pem');
    const certFile = path.join(dir, 'cert.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', `/CN=${label}`,
      '-keyout', keyFile, '-out', certFile], { stdio: 'pipe' });
    const pair = { privateKeyPem: readFileSync(keyFile, 'utf8'), certificatePem: readFileSync(certFile, 'utf8') };
    keyPairs.set(label, pair);
    return pair;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The base64 body of a PEM certificate, as metadata and KeyInfo carry it. */
export const certificateBody = (pem: string): string => pem.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, '');

export const escapeXml = (value: string): string =>
  value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');

/** A fresh SAML ID: an NCName, so it may not start with a digit. */
export const samlId = (): string => `_${randomBytes(16).toString('hex')}`;

/**
 * Adds an enveloped exc-c14n rsa-sha256 signature over the element with ID `id`, placed right
 * after that element's Issuer as the SAML schema requires, with `keys`' certificate in KeyInfo.
 */
export function signElement(xml: string, id: string, keys: TestKeyPair): string {
  const signer = new SignedXml({
    privateKey: keys.privateKeyPem,
    publicCert: keys.certificatePem,
    signatureAlgorithm: RSA_SHA256,
    canonicalizationAlgorithm: EXC_C14N,
  });
  signer.addReference({ xpath: `//*[@ID='${id}']`, transforms: [ENVELOPED, EXC_C14N], digestAlgorithm: SHA256 });
  signer.computeSignature(xml, {
    prefix: 'ds',
    location: { reference: `//*[@ID='${id}']/*[local-name(.)='Issuer']`, action: 'after' },
  });
  return signer.getSignedXml();
}

export function createTestSamlIdp(options: { entityId?: string; ssoUrl?: string } = {}): TestSamlIdp {
  const entityId = options.entityId ?? 'https://idp.example.test/metadata';
  const ssoUrl = options.ssoUrl ?? 'https://idp.example.test/sso';
  const keys = testKeyPair('switchyard-test-idp');
  const metadataXml = `<?xml version="1.0" encoding="UTF-8"?>
<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" xmlns:ds="http://www.w3.org/2000/09/xmldsig#" entityID="${escapeXml(entityId)}">
  <md:IDPSSODescriptor WantAuthnRequestsSigned="false" protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
    <md:KeyDescriptor use="signing">
      <ds:KeyInfo><ds:X509Data><ds:X509Certificate>${certificateBody(keys.certificatePem)}</ds:X509Certificate></ds:X509Data></ds:KeyInfo>
    </md:KeyDescriptor>
    <md:NameIDFormat>${NAMEID_EMAIL}</md:NameIDFormat>
    <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${escapeXml(ssoUrl)}/post"/>
    <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${escapeXml(ssoUrl)}"/>
  </md:IDPSSODescriptor>
</md:EntityDescriptor>
`;

  const response = (p: TestSamlResponseParams): string => {
    const now = new Date();
    const instant = now.toISOString();
    const notBefore = (p.notBefore ?? new Date(now.getTime() - 60_000)).toISOString();
    const notOnOrAfter = (p.notOnOrAfter ?? new Date(now.getTime() + 5 * 60_000)).toISOString();
    const issuer = escapeXml(p.issuer ?? entityId);
    const responseId = samlId();
    const assertionId = samlId();
    const inResponseTo = p.inResponseTo === null ? '' : ` InResponseTo="${escapeXml(p.inResponseTo)}"`;
    const destinationValue = p.destination === undefined ? p.acsUrl : p.destination;
    const destination = destinationValue === null ? '' : ` Destination="${escapeXml(destinationValue)}"`;
    const attributes = Object.entries(p.attributes ?? {})
      .map(([name, value]) =>
        `<saml:Attribute Name="${escapeXml(name)}" NameFormat="urn:oasis:names:tc:SAML:2.0:attrname-format:uri">` +
        (Array.isArray(value) ? value : [value])
          .map((item) => `<saml:AttributeValue xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="xs:string">${escapeXml(item)}</saml:AttributeValue>`)
          .join('') +
        '</saml:Attribute>')
      .join('');
    let xml =
      `<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${responseId}" Version="2.0" IssueInstant="${instant}"${destination}${inResponseTo}>` +
      `<saml:Issuer>${issuer}</saml:Issuer>` +
      `<samlp:Status><samlp:StatusCode Value="${escapeXml(p.status ?? SAML_SUCCESS)}"/></samlp:Status>` +
      `<saml:Assertion ID="${assertionId}" Version="2.0" IssueInstant="${instant}">` +
      `<saml:Issuer>${issuer}</saml:Issuer>` +
      '<saml:Subject>' +
      `<saml:NameID Format="${escapeXml(p.nameIdFormat ?? NAMEID_EMAIL)}">${escapeXml(p.nameId)}</saml:NameID>` +
      '<saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer">' +
      `<saml:SubjectConfirmationData${inResponseTo} NotOnOrAfter="${notOnOrAfter}" Recipient="${escapeXml(p.recipient ?? p.acsUrl)}"/>` +
      '</saml:SubjectConfirmation>' +
      '</saml:Subject>' +
      `<saml:Conditions NotBefore="${notBefore}" NotOnOrAfter="${notOnOrAfter}">` +
      `<saml:AudienceRestriction><saml:Audience>${escapeXml(p.audience)}</saml:Audience></saml:AudienceRestriction>` +
      '</saml:Conditions>' +
      `<saml:AuthnStatement AuthnInstant="${instant}" SessionIndex="${assertionId}">` +
      '<saml:AuthnContext><saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport</saml:AuthnContextClassRef></saml:AuthnContext>' +
      '</saml:AuthnStatement>' +
      (attributes.length > 0 ? `<saml:AttributeStatement>${attributes}</saml:AttributeStatement>` : '') +
      '</saml:Assertion>' +
      '</samlp:Response>';
    const signer = p.signWith ?? keys;
    if (p.sign === 'assertion' || p.sign === 'both') xml = signElement(xml, assertionId, signer);
    if (p.sign === 'response' || p.sign === 'both') xml = signElement(xml, responseId, signer);
    return Buffer.from(xml, 'utf8').toString('base64');
  };

  const readAuthnRequest = (url: string) => {
    const parsed = new URL(url);
    const encoded = parsed.searchParams.get('SAMLRequest');
    if (encoded === null) throw new Error(`no SAMLRequest in ${url}`);
    const xml = inflateRawSync(Buffer.from(encoded, 'base64')).toString('utf8');
    const request = new DOMParser().parseFromString(xml, 'text/xml').documentElement;
    if (!request || request.localName !== 'AuthnRequest') throw new Error(`not an AuthnRequest: ${xml}`);
    const issuer = request.getElementsByTagNameNS('urn:oasis:names:tc:SAML:2.0:assertion', 'Issuer')[0];
    return {
      id: request.getAttribute('ID') ?? '',
      acsUrl: request.hasAttribute('AssertionConsumerServiceURL') ? request.getAttribute('AssertionConsumerServiceURL') : null,
      issuer: issuer?.textContent ?? '',
      relayState: parsed.searchParams.get('RelayState'),
    };
  };

  return { entityId, ssoUrl, metadataXml, certificatePem: keys.certificatePem, privateKeyPem: keys.privateKeyPem, response, readAuthnRequest };
}
