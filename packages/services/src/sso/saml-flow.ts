import { randomBytes } from 'node:crypto';
import type { CacheProvider, SAML, SamlConfig } from '@node-saml/node-saml';
import { DomainError, invalidArgument, unauthenticated } from '@switchyard/core';
import { MAX_GROUPS_READ } from './group-mapping.ts';
import type { IdpMetadata } from './saml-metadata.ts';
import { MAX_SAML_XML_BYTES, SAML_NS, attributeOf, parseUntrustedXml, selectElements, textOf } from './saml-xml.ts';

/** One configured SAML identity provider, as the service provider talks to it. */
export interface SamlProviderSettings {
  providerId: string;
  idp: IdpMetadata;
  /** Our entityID: the Issuer of our AuthnRequests and the Audience assertions must name. */
  spEntityId: string;
  /** Our AssertionConsumerService (HTTP-POST): Destination and Recipient of acceptable responses. */
  acsUrl: string;
  /** The NameID format asked for in the AuthnRequest's NameIDPolicy; null leaves it to the IdP. */
  nameIdFormat: string | null;
  /** The attribute whose values are the person's groups; null (or absent): groups are not read. */
  groupsAttribute?: string | null;
}

/** Who signed in, as read from the signed assertion and nothing else. */
export interface SamlIdentity {
  /** The IdP's entityID (the assertion's Issuer). */
  issuer: string;
  /** The NameID: with `issuer`, the stable key of the external account. */
  subject: string;
  nameIdFormat: string | null;
  /** From an email attribute, or the NameID when its format is emailAddress. */
  email: string | null;
  displayName: string | null;
  /** The values of the groups attribute (the first 1000), when settings.groupsAttribute asked for them. */
  groups?: string[];
}

export interface SamlFlowsOptions {
  /** How far the IdP's clock may be from ours; default one minute. */
  clockSkewMs?: number;
  now?: () => number;
}

const FIELD = 'saml_response';
const STATUS_PREFIX = 'urn:oasis:names:tc:SAML:2.0:status:';
const SUCCESS = `${STATUS_PREFIX}Success`;
const BEARER = 'urn:oasis:names:tc:SAML:2.0:cm:bearer';
const NAMEID_EMAIL = 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress';
const ENTITY_FORMAT = 'urn:oasis:names:tc:SAML:2.0:nameid-format:entity';
/** SAML bindings 3.4.3 and 3.5.3: RelayState MUST NOT exceed 80 bytes. */
const MAX_RELAY_STATE_BYTES = 80;
const EMAIL_ATTRIBUTES = ['email', 'mail', 'urn:oid:0.9.2342.19200300.100.1.3', 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress'];
const DISPLAY_NAME_ATTRIBUTES = ['displayName', 'urn:oid:2.16.840.1.113730.3.1.241', 'http://schemas.microsoft.com/identity/claims/displayname', 'name', 'cn', 'urn:oid:2.5.4.3'];
/** xs:dateTime; SAML core 1.3.3 requires UTC, but an explicit offset is unambiguous too. A time without a zone is not. */
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** The reasons a response is refused: each says what was wrong without echoing what the response claimed. */
const REASONS = {
  signature: 'no valid signature of the identity provider covers the assertion',
  audience: 'the assertion is meant for another service provider (Audience)',
  inResponseTo: 'it does not answer the sign-in request started here (InResponseTo)',
  unsolicited: 'it does not answer a sign-in request started here (unsolicited, IdP-initiated responses are not accepted)',
  issuer: 'it was issued by another identity provider (Issuer)',
  destination: 'it is addressed to another service provider (Destination)',
  recipient: 'the assertion is addressed to another service provider (Recipient)',
  multipleAssertions: 'it must contain exactly one assertion, as a child of the Response',
  unknown: 'it could not be validated',
} as const;

/**
 * node-saml, loaded by the first SAML call: with xml-crypto and xml2js it is ~0.2 s of CPU to load,
 * which every server start (and every gateway) paid though most never see a SAML login.
 */
let nodeSaml: Promise<typeof import('@node-saml/node-saml')> | undefined;
const loadNodeSaml = () => (nodeSaml ??= import('@node-saml/node-saml'));

const refused = (reason: string): DomainError => unauthenticated(`the SAML response was refused: ${reason}`);

/**
 * The SAML 2.0 Web Browser SSO profile for a service provider, with the HTTP-Redirect binding for
 * AuthnRequests and HTTP-POST for Responses. Pure: no storage, no HTTP. The caller keeps the
 * request ID returned by `authnRequest` with the relay state (so the response can only complete
 * the sign-in the same browser started) and hands it back to `validate`.
 *
 * Signature checking is node-saml's (which uses xml-crypto and only ever reads the identity from
 * the bytes a signature covered). node-saml leaves several checks of the profile to its caller or
 * makes them optional, and those are done here on top (see `validate`), from the verified
 * assertion only.
 */
export class SamlFlows {
  private readonly clockSkewMs: number;
  private readonly now: () => number;

  constructor(options: SamlFlowsOptions = {}) {
    this.clockSkewMs = options.clockSkewMs ?? 60_000;
    this.now = options.now ?? Date.now;
  }

  /**
   * A signed-or-unsigned (unsigned is fine; we have no SP key) AuthnRequest for HTTP-Redirect:
   * returns the IdP URL (SAMLRequest + RelayState query params) and the request's ID, which the
   * caller stores with the relay state.
   * @throws INVALID_ARGUMENT when the relay state is empty or longer than the binding allows.
   */
  async authnRequest(settings: SamlProviderSettings, relayState: string): Promise<{ url: string; requestId: string }> {
    const relayBytes = Buffer.byteLength(relayState, 'utf8');
    if (relayBytes === 0 || relayBytes > MAX_RELAY_STATE_BYTES) {
      throw invalidArgument(`the relay state must be 1 to ${MAX_RELAY_STATE_BYTES} bytes`, 'relay_state');
    }
    const requestId = `_${randomBytes(20).toString('hex')}`;
    const saml = await this.saml(settings, requestId, { generateUniqueId: () => requestId });
    const url = await saml.getAuthorizeUrlAsync(relayState, undefined, {});
    return { url, requestId };
  }

  /**
   * Validates a POSTed SAMLResponse (base64). Requires: a valid signature by one of the IdP's
   * certificates on the Response or on the Assertion (either suffices, but whatever is used must
   * cover the assertion the identity is read from); Issuer = idp.entityId; Audience = spEntityId;
   * Recipient/Destination = acsUrl; NotBefore/NotOnOrAfter within clock skew; InResponseTo ==
   * expectedRequestId (exactly; an IdP-initiated response without InResponseTo is refused);
   * status Success.
   *
   * What node-saml checks itself: the signatures (only the metadata certificates, never one from
   * KeyInfo; one Reference, to the signature's parent, whose ID is unique in the document), at
   * most one assertion under the Response, the Audience, and InResponseTo against its cache
   * (which here holds only `expectedRequestId`). What it does not, and is checked here: the
   * status when an assertion is present, Destination, Recipient, the subject confirmation method,
   * the Issuers, that the assertion's own InResponseTo is present, times against an injectable
   * clock (node-saml reads Date itself, so its time checks are switched off), AuthnStatement.
   * @throws UNAUTHENTICATED "the SAML response was refused: <reason>"; INVALID_ARGUMENT (field
   *   saml_response) for input that is not a base64 SAML Response document, too large, or has a DTD.
   */
  async validate(settings: SamlProviderSettings, input: { samlResponseB64: string; expectedRequestId: string }): Promise<SamlIdentity> {
    const xml = decodeResponse(input.samlResponseB64);
    const response = parseUntrustedXml(xml, 'the SAML response', FIELD).documentElement;
    if (!response || response.namespaceURI !== SAML_NS.samlp || response.localName !== 'Response') {
      throw invalidArgument('the SAML response is not a SAML 2.0 Response', FIELD);
    }
    // The envelope first, for a clear reason when the IdP reports an error or the response is
    // misaddressed. Unless the Response is signed these values are unauthenticated: they only
    // ever refuse, and everything the identity depends on is checked again on the signed assertion.
    this.checkEnvelope(response, settings, input.expectedRequestId);
    const assertionXml = await this.verifiedAssertionXml(settings, xml, input.expectedRequestId);
    const assertion = parseUntrustedXml(assertionXml, 'the SAML assertion', FIELD).documentElement;
    if (!assertion || assertion.namespaceURI !== SAML_NS.saml || assertion.localName !== 'Assertion') throw refused(REASONS.signature);
    this.checkAssertion(assertion, settings, input.expectedRequestId);
    return identityOf(assertion, settings.groupsAttribute ?? null);
  }

  /** SP metadata XML (EntityDescriptor with entityID spEntityId, AssertionConsumerService HTTP-POST at acsUrl, NameIDFormat, WantAssertionsSigned=true). */
  async spMetadata(settings: Pick<SamlProviderSettings, 'spEntityId' | 'acsUrl' | 'nameIdFormat'>): Promise<string> {
    const { generateServiceProviderMetadata } = await loadNodeSaml();
    // WantAssertionsSigned tells the IdP what we prefer; validate() also accepts a signed
    // Response around an unsigned assertion, which covers the assertion as well.
    return generateServiceProviderMetadata({
      issuer: settings.spEntityId,
      callbackUrl: settings.acsUrl,
      identifierFormat: settings.nameIdFormat,
      wantAssertionsSigned: true,
    });
  }

  /**
   * A node-saml instance for one call. Its request-ID cache holds `requestId` only, so an
   * InResponseTo can only match the request this browser started; nothing is shared between calls.
   */
  private async saml(settings: SamlProviderSettings, requestId: string, extra: Partial<SamlConfig> = {}): Promise<SAML> {
    const { SAML, ValidateInResponseTo } = await loadNodeSaml();
    const createdAt = new Date().toISOString();
    const cacheProvider: CacheProvider = {
      saveAsync: async (key, value) => (key === requestId ? { value, createdAt: Date.now() } : null),
      getAsync: async (key) => (key === requestId ? createdAt : null),
      removeAsync: async (key) => key,
    };
    try {
      return new SAML({
        entryPoint: settings.idp.ssoRedirectUrl,
        callbackUrl: settings.acsUrl,
        issuer: settings.spEntityId,
        audience: settings.spEntityId,
        idpCert: settings.idp.signingCertificates,
        idpIssuer: settings.idp.entityId,
        identifierFormat: settings.nameIdFormat,
        // Some signature must cover the assertion; node-saml requires one of the two when both are
        // false (the Response's when present, else the Assertion's), and the tests pin that down.
        wantAuthnResponseSigned: false,
        wantAssertionsSigned: false,
        validateInResponseTo: ValidateInResponseTo.always,
        cacheProvider,
        // Expiry of the request is the caller's (it keeps the relay state); this only has to outlast the call.
        requestIdExpirationPeriodMs: 24 * 60 * 60_000,
        // -1 switches node-saml's time checks off: it reads Date directly; checkAssertion uses `now`.
        acceptedClockSkewMs: -1,
        // node-saml asks for PasswordProtectedTransport by default, which IdPs using MFA or
        // Kerberos refuse; how the user authenticates is the IdP's policy.
        disableRequestedAuthnContext: true,
        authnRequestBinding: 'HTTP-Redirect',
        ...extra,
      });
    } catch {
      throw new DomainError('UNAVAILABLE', 'single sign-on with this identity provider is misconfigured');
    }
  }

  private checkEnvelope(response: Element, settings: SamlProviderSettings, expectedRequestId: string): void {
    if (attributeOf(response, 'Version') !== '2.0') throw refused('it is not a SAML 2.0 Response (Version)');
    const status = statusOf(response);
    if (status !== SUCCESS) throw refused(`the identity provider did not report success (${describeStatus(response)})`);
    const inResponseTo = attributeOf(response, 'InResponseTo');
    if (inResponseTo === null) throw refused(REASONS.unsolicited);
    if (inResponseTo !== expectedRequestId) throw refused(REASONS.inResponseTo);
    // Destination is required when the Response is signed (bindings 3.5.5.2) and checked whenever present.
    const destination = attributeOf(response, 'Destination');
    if (destination !== null && destination !== settings.acsUrl) throw refused(REASONS.destination);
    // The Response's Issuer is optional (core 3.2.2); when present it must be the IdP.
    for (const issuer of selectElements('saml:Issuer', response)) checkIssuer(issuer, settings);
    const assertions = selectElements('saml:Assertion', response);
    const encrypted = selectElements('saml:EncryptedAssertion', response);
    if (assertions.length === 0 && encrypted.length > 0) throw refused('encrypted assertions are not supported (the IdP must not encrypt them)');
    if (assertions.length === 0) throw refused('it contains no assertion');
    // Exactly one assertion in the whole document, and it is the Response's child: signature
    // wrapping (XSW) attacks hide a signed assertion elsewhere (Extensions, an Object, Advice,
    // a wrapper element) next to an unsigned one, and only one of the two gets verified.
    const everywhere = selectElements('//saml:Assertion | //saml:EncryptedAssertion', response.ownerDocument);
    if (assertions.length !== 1 || everywhere.length !== 1) throw refused(REASONS.multipleAssertions);
  }

  /** The signed assertion's XML as node-saml verified it (the bytes the signature covered). */
  private async verifiedAssertionXml(settings: SamlProviderSettings, xml: string, expectedRequestId: string): Promise<string> {
    const saml = await this.saml(settings, expectedRequestId);
    const { SamlStatusError } = await loadNodeSaml();
    let assertionXml: string | undefined;
    try {
      const { profile } = await saml.validatePostResponseAsync({ SAMLResponse: Buffer.from(xml, 'utf8').toString('base64') });
      assertionXml = profile?.getAssertionXml?.();
    } catch (error) {
      throw refused(reasonFor(error, SamlStatusError));
    }
    if (!assertionXml) throw refused(REASONS.signature);
    return assertionXml;
  }

  private checkAssertion(assertion: Element, settings: SamlProviderSettings, expectedRequestId: string): void {
    const now = this.now();
    const issuers = selectElements('saml:Issuer', assertion);
    if (issuers.length !== 1) throw refused(REASONS.issuer);
    checkIssuer(issuers[0] as Element, settings);

    // Web SSO profile 4.1.4.2: a bearer SubjectConfirmation whose data names our ACS URL as
    // Recipient, the request as InResponseTo and has a NotOnOrAfter. Any one that satisfies all suffices.
    const confirmations = selectElements('saml:Subject/saml:SubjectConfirmation', assertion).filter((c) => attributeOf(c, 'Method') === BEARER);
    if (confirmations.length === 0) throw refused('the assertion has no bearer SubjectConfirmation');
    const problems = confirmations.map((confirmation) => {
      const data = selectElements('saml:SubjectConfirmationData', confirmation)[0];
      if (!data) return 'the assertion\'s SubjectConfirmation has no SubjectConfirmationData';
      if (attributeOf(data, 'Recipient') !== settings.acsUrl) return REASONS.recipient;
      const inResponseTo = attributeOf(data, 'InResponseTo');
      if (inResponseTo === null) return REASONS.unsolicited;
      if (inResponseTo !== expectedRequestId) return REASONS.inResponseTo;
      return this.timeProblem(data, now, true);
    });
    if (!problems.includes(null)) throw refused(problems[0] ?? REASONS.unknown);

    const conditions = selectElements('saml:Conditions', assertion);
    if (conditions.length !== 1) throw refused('the assertion must have exactly one Conditions element');
    const conditionsElement = conditions[0] as Element;
    const timeProblem = this.timeProblem(conditionsElement, now, false);
    if (timeProblem) throw refused(timeProblem);
    // Every AudienceRestriction must be met (core 2.5.1.4), and there must be one: an assertion
    // for "anyone" could be replayed from another service provider of the same IdP.
    const restrictions = selectElements('saml:AudienceRestriction', conditionsElement);
    if (restrictions.length === 0) throw refused(REASONS.audience);
    for (const restriction of restrictions) {
      if (!selectElements('saml:Audience', restriction).some((audience) => textOf(audience) === settings.spEntityId)) throw refused(REASONS.audience);
    }

    const statements = selectElements('saml:AuthnStatement', assertion);
    if (statements.length === 0) throw refused('the assertion has no AuthnStatement');
    for (const statement of statements) {
      const sessionEnd = attributeOf(statement, 'SessionNotOnOrAfter');
      if (sessionEnd === null) continue;
      const endMs = parseTime(sessionEnd);
      if (endMs === null) throw refused('the assertion has an invalid SessionNotOnOrAfter');
      if (now - this.clockSkewMs >= endMs) throw refused('the session the assertion describes has ended (SessionNotOnOrAfter)');
    }
  }

  /** Why NotBefore/NotOnOrAfter of `element` exclude `now`, or null; `requireEnd` makes NotOnOrAfter mandatory. */
  private timeProblem(element: Element, now: number, requireEnd: boolean): string | null {
    const notBefore = attributeOf(element, 'NotBefore');
    const notOnOrAfter = attributeOf(element, 'NotOnOrAfter');
    if (notBefore !== null) {
      const ms = parseTime(notBefore);
      if (ms === null) return 'the assertion has an invalid NotBefore';
      if (now + this.clockSkewMs < ms) return 'the assertion is not valid yet (NotBefore)';
    }
    if (notOnOrAfter === null) return requireEnd ? 'the assertion\'s SubjectConfirmationData has no NotOnOrAfter' : null;
    const ms = parseTime(notOnOrAfter);
    if (ms === null) return 'the assertion has an invalid NotOnOrAfter';
    if (now - this.clockSkewMs >= ms) return 'the assertion has expired (NotOnOrAfter)';
    return null;
  }
}

/** Strict base64 (whitespace allowed, as some IdPs wrap lines), bounded before decoding. */
function decodeResponse(b64: string): string {
  const compact = b64.replace(/\s+/g, '');
  if (compact.length === 0 || compact.length % 4 !== 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(compact)) {
    throw invalidArgument('the SAML response is not valid base64', FIELD);
  }
  if ((compact.length / 4) * 3 > MAX_SAML_XML_BYTES + 2) {
    throw invalidArgument(`the SAML response is larger than ${MAX_SAML_XML_BYTES / 1024} KiB`, FIELD);
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(compact, 'base64'));
  } catch {
    throw invalidArgument('the SAML response is not UTF-8', FIELD);
  }
}

function checkIssuer(issuer: Element, settings: SamlProviderSettings): void {
  const format = attributeOf(issuer, 'Format');
  if ((format !== null && format !== ENTITY_FORMAT) || textOf(issuer) !== settings.idp.entityId) throw refused(REASONS.issuer);
}

function statusOf(response: Element): string | null {
  const codes = selectElements('samlp:Status/samlp:StatusCode', response);
  return codes.length === 1 ? attributeOf(codes[0] as Element, 'Value') : null;
}

/** "Responder/AuthnFailed": the standard status names only, so nothing the response invented is echoed. */
function describeStatus(response: Element): string {
  const name = (code: Element | undefined): string | null => {
    const value = code ? attributeOf(code, 'Value') : null;
    return value !== null && /^urn:oasis:names:tc:SAML:2\.0:status:[A-Za-z]{1,40}$/.test(value) ? value.slice(STATUS_PREFIX.length) : null;
  };
  const top = selectElements('samlp:Status/samlp:StatusCode', response)[0];
  const topName = name(top);
  if (topName === null) return 'unknown status';
  const second = top ? name(selectElements('samlp:StatusCode', top)[0]) : null;
  return second === null ? topName : `${topName}/${second}`;
}

/** Maps node-saml's errors (which may quote the response) to our fixed reasons. */
function reasonFor(error: unknown, SamlStatusError: typeof import('@node-saml/node-saml').SamlStatusError): string {
  if (error instanceof SamlStatusError) return 'the identity provider did not report success';
  const message = error instanceof Error ? error.message : '';
  if (/multiple assertions/i.test(message)) return REASONS.multipleAssertions;
  if (/audience/i.test(message)) return REASONS.audience;
  if (/InResponseTo/i.test(message)) return REASONS.inResponseTo;
  if (/signature|signed/i.test(message)) return REASONS.signature;
  if (/issuer/i.test(message)) return REASONS.issuer;
  return REASONS.unknown;
}

function parseTime(value: string): number | null {
  if (!DATE_TIME.test(value)) return null;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? null : ms;
}

function identityOf(assertion: Element, groupsAttribute: string | null): SamlIdentity {
  const nameIds = selectElements('saml:Subject/saml:NameID', assertion);
  if (nameIds.length !== 1) {
    throw refused(selectElements('saml:Subject/saml:EncryptedID', assertion).length > 0 ? 'encrypted NameIDs are not supported' : 'the assertion has no NameID');
  }
  const nameId = nameIds[0] as Element;
  const subject = textOf(nameId);
  if (subject.length === 0) throw refused('the assertion has no NameID');
  const nameIdFormat = attributeOf(nameId, 'Format');

  const attributes = new Map<string, string>();
  const groups: string[] = [];
  for (const attribute of selectElements('saml:AttributeStatement/saml:Attribute', assertion)) {
    const name = attributeOf(attribute, 'Name');
    // Every value of the groups attribute (one Attribute with many values, or repeated Attributes).
    if (groupsAttribute !== null && name === groupsAttribute) {
      for (const value of selectElements('saml:AttributeValue', attribute)) {
        if (groups.length >= MAX_GROUPS_READ) break;
        groups.push(textOf(value));
      }
    }
    const value = selectElements('saml:AttributeValue', attribute).map(textOf).find((text) => text.length > 0);
    if (name !== null && value !== undefined && !attributes.has(name)) attributes.set(name, value);
  }
  const first = (names: string[]): string | null => {
    for (const name of names) {
      const value = attributes.get(name);
      if (value !== undefined) return value;
    }
    return null;
  };
  const email = first(EMAIL_ATTRIBUTES) ?? (nameIdFormat === NAMEID_EMAIL ? subject : null);
  return {
    issuer: textOf(selectElements('saml:Issuer', assertion)[0] as Element),
    subject,
    nameIdFormat,
    email,
    displayName: first(DISPLAY_NAME_ATTRIBUTES),
    ...(groupsAttribute === null ? {} : { groups }),
  };
}
