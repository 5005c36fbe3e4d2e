import { X509Certificate } from 'node:crypto';
import { invalidArgument } from '@switchyard/core';
import { attributeOf, parseUntrustedXml, selectElements, textOf } from './saml-xml.ts';

/** What the service provider needs to know about an identity provider. */
export interface IdpMetadata {
  /** The IdP's entityID: the Issuer its responses and assertions must carry. */
  entityId: string;
  /** Where AuthnRequests are sent with the HTTP-Redirect binding. */
  ssoRedirectUrl: string;
  /** PEM certificates whose keys may sign responses (several during a key rollover). */
  signingCertificates: string[];
}

const SAML2_PROTOCOL = 'urn:oasis:names:tc:SAML:2.0:protocol';
const HTTP_REDIRECT = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect';

/**
 * Reads an IdP's SAML 2.0 metadata (the XML an admin downloads from Okta, Entra ID, Keycloak, ...).
 * Only what we use is read; a document that does not give all of it is refused here, when the
 * admin configures the provider, instead of at the first sign-in. The metadata's own signature is
 * not checked: the admin pastes it from the IdP's console, which is the trust anchor.
 * `allowHttp` (SSO_ALLOW_PRIVATE_NETWORKS, development and tests): an http SingleSignOnService.
 * @throws INVALID_ARGUMENT naming `field`.
 */
export function parseIdpMetadata(xml: string, field = 'idp_metadata_xml', options: { allowHttp: boolean } = { allowHttp: false }): IdpMetadata {
  const doc = parseUntrustedXml(xml, 'the IdP metadata', field);
  const refuse = (message: string) => invalidArgument(`the IdP metadata ${message}`, field);

  const entities = selectElements('/md:EntityDescriptor | /md:EntitiesDescriptor//md:EntityDescriptor', doc);
  if (entities.length === 0) throw refuse('is not a SAML 2.0 EntityDescriptor');
  const idps = entities.filter((entity) => idpDescriptorsOf(entity).length > 0);
  if (idps.length === 0) throw refuse('has no IDPSSODescriptor for SAML 2.0 (is it a service provider\'s metadata?)');
  // Federation metadata lists many entities; picking one of several identity providers would be
  // a guess about which one the admin meant.
  if (idps.length > 1) throw refuse(`describes ${idps.length} identity providers; give the metadata of exactly one`);
  const entity = idps[0] as Element;

  const entityId = (attributeOf(entity, 'entityID') ?? '').trim();
  if (entityId.length === 0) throw refuse('has no entityID');
  if (entityId.length > 1024) throw refuse('has an entityID longer than 1024 characters');

  const descriptor = idpDescriptorsOf(entity)[0] as Element;
  const redirect = selectElements('md:SingleSignOnService', descriptor).find((service) => attributeOf(service, 'Binding') === HTTP_REDIRECT);
  if (!redirect) throw refuse('has no HTTP-Redirect SingleSignOnService');
  const ssoRedirectUrl = (attributeOf(redirect, 'Location') ?? '').trim();
  if (!isHttpUrl(ssoRedirectUrl)) throw refuse('has a SingleSignOnService Location that is not an http(s) URL');
  // The start redirects browsers there from our origin, with the AuthnRequest: never in clear text.
  if (!options.allowHttp && !ssoRedirectUrl.startsWith('https:')) {
    throw refuse('has a SingleSignOnService Location that is not https (http only with SSO_ALLOW_PRIVATE_NETWORKS=true, for development)');
  }

  const signingCertificates: string[] = [];
  for (const key of selectElements('md:KeyDescriptor', descriptor)) {
    const use = attributeOf(key, 'use');
    // A KeyDescriptor without `use` serves for both signing and encryption (metadata spec 2.4.1.1).
    if (use !== null && use !== 'signing') continue;
    for (const certificate of selectElements('ds:KeyInfo/ds:X509Data/ds:X509Certificate', key)) {
      const pem = certificatePem(textOf(certificate));
      if (pem === null) throw refuse('contains a signing certificate that is not a valid X.509 certificate');
      if (!signingCertificates.includes(pem)) signingCertificates.push(pem);
    }
  }
  if (signingCertificates.length === 0) throw refuse('has no signing certificate (KeyDescriptor use="signing" with an X509Certificate)');

  return { entityId, ssoRedirectUrl, signingCertificates };
}

function idpDescriptorsOf(entity: Element): Element[] {
  return selectElements('md:IDPSSODescriptor', entity).filter((descriptor) =>
    (attributeOf(descriptor, 'protocolSupportEnumeration') ?? '').split(/\s+/).includes(SAML2_PROTOCOL),
  );
}

/** An absolute http(s) URL; whether http will do is the caller's rule. */
function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'https:' || url.protocol === 'http:') && url.hostname.length > 0;
  } catch {
    return false;
  }
}

/** The base64 DER body of an X509Certificate element as PEM, or null when it is not a certificate. */
function certificatePem(base64: string): string | null {
  const body = base64.replace(/\s+/g, '');
  if (body.length === 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(body)) return null;
  try {
    new X509Certificate(Buffer.from(body, 'base64'));
  } catch {
    return null;
  }
  const lines = body.match(/.{1,64}/g) ?? [];
  return `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----\n`;
}
