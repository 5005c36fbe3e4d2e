import { createRequire } from 'node:module';
import { invalidArgument } from '@switchyard/core';

/** Namespaces of SAML 2.0 and XML Signature, for namespace-aware XPath. */
export const SAML_NS = {
  md: 'urn:oasis:names:tc:SAML:2.0:metadata',
  saml: 'urn:oasis:names:tc:SAML:2.0:assertion',
  samlp: 'urn:oasis:names:tc:SAML:2.0:protocol',
  ds: 'http://www.w3.org/2000/09/xmldsig#',
} as const;

/**
 * xmldom and XPath with the SAML prefixes above bound (the prefixes in a document do not matter,
 * only namespaces), loaded by the first SAML document read: every server start and gateway loaded
 * them (~50 ms of CPU) for the few that ever see one. Both are CommonJS, so this stays synchronous.
 */
function xmlLibraries(): { DOMParser: typeof import('@xmldom/xmldom').DOMParser; select: ReturnType<typeof import('xpath').useNamespaces> } {
  if (!loaded) {
    const require = createRequire(import.meta.url);
    const xpath = require('xpath') as typeof import('xpath');
    loaded = { DOMParser: (require('@xmldom/xmldom') as typeof import('@xmldom/xmldom')).DOMParser, select: xpath.useNamespaces(SAML_NS) };
  }
  return loaded;
}
let loaded: ReturnType<typeof xmlLibraries> | undefined;

/**
 * Both inputs (IdP metadata pasted by an admin, a response POSTed by a browser) are small
 * documents; anything bigger is not worth parsing.
 */
export const MAX_SAML_XML_BYTES = 256 * 1024;

/**
 * Parses untrusted XML strictly: a size cap, no DTD at all (a DOCTYPE is how XXE and entity
 * expansion ("billion laughs") attacks start, and no SAML message needs one), and any parser
 * error refuses the document instead of xmldom's default of logging it and carrying on with
 * whatever it recovered.
 * @throws INVALID_ARGUMENT naming `field`, with `what` ("the IdP metadata") in the message.
 */
export function parseUntrustedXml(xml: string, what: string, field: string): Document {
  if (Buffer.byteLength(xml, 'utf8') > MAX_SAML_XML_BYTES) {
    throw invalidArgument(`${what} is larger than ${MAX_SAML_XML_BYTES / 1024} KiB`, field);
  }
  if (/<!DOCTYPE/i.test(xml) || /<!ENTITY/i.test(xml)) {
    throw invalidArgument(`${what} must not contain a DOCTYPE or entity declarations`, field);
  }
  const problems: string[] = [];
  const record = (message: string): void => {
    problems.push(message);
  };
  const { DOMParser } = xmlLibraries();
  const doc = new DOMParser({ errorHandler: { warning: () => {}, error: record, fatalError: record } }).parseFromString(xml, 'text/xml');
  if (problems.length > 0 || !doc || !doc.documentElement) {
    throw invalidArgument(`${what} is not well-formed XML`, field);
  }
  if (doc.doctype) throw invalidArgument(`${what} must not contain a DOCTYPE or entity declarations`, field);
  return doc;
}

/** Elements an XPath expression selects, whatever else it might have returned. */
export function selectElements(expression: string, context: Node): Element[] {
  const result = xmlLibraries().select(expression, context);
  if (!Array.isArray(result)) return [];
  return result.filter((node): node is Element => node.nodeType === 1);
}

/** The value of an attribute, or null when absent (xmldom's getAttribute returns '' for both). */
export function attributeOf(element: Element, name: string): string | null {
  return element.hasAttribute(name) ? element.getAttribute(name) : null;
}

/**
 * An element's whole text, comments skipped: textContent joins every text node, so a comment
 * slipped into a value ("user@evil.com<!---->.example.com") cannot truncate it the way reading
 * only the first text node did in CVE-2017-11427 and its siblings.
 */
export function textOf(element: Element): string {
  return (element.textContent ?? '').trim();
}
