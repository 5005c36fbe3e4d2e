import { DomainError, failedPrecondition, type AuthProvider } from '@switchyard/core';
import { parseIdpMetadata, type IdpMetadata } from './saml-metadata.ts';

const TTL_MS = 10 * 60_000;
const MAX_ENTRIES = 1_000;
const MAX_METADATA_BYTES = 256 * 1024;

/**
 * A SAML provider's IdP metadata: parsed from the stored XML, or fetched from its address through
 * the private-network guard. Kept per provider revision for ten minutes (a saved change is a new
 * revision), so a certificate rollover published at the address is picked up without anyone
 * saving the provider again.
 */
export class IdpMetadataSource {
  private readonly cache = new Map<string, { metadata: IdpMetadata; expiresAtMs: number }>();
  /** Downloads under way: concurrent sign-ins share one request instead of one each. */
  private readonly inFlight = new Map<string, Promise<IdpMetadata>>();

  /** `allowHttp`: an http SingleSignOnService in the metadata (SSO_ALLOW_PRIVATE_NETWORKS). */
  constructor(
    private readonly fetchFn: typeof fetch,
    private readonly now: () => number = Date.now,
    private readonly allowHttp = false,
  ) {}

  async get(provider: AuthProvider): Promise<IdpMetadata> {
    const saml = provider.saml;
    if (!saml) throw failedPrecondition('not a SAML provider');
    const key = `${provider.id}@${provider.updatedAtMs}`;
    const cached = this.cache.get(key);
    if (cached && cached.expiresAtMs > this.now()) return cached.metadata;
    let pending = this.inFlight.get(key);
    if (!pending) {
      const { idpMetadataXml: xml, idpMetadataUrl: url } = saml;
      // Pasted XML is parsed once per revision too: parsing it is most of what a start costs.
      const text = xml !== null ? Promise.resolve(xml) : this.download(url ?? '');
      pending = this.parseAndKeep(key, text, xml !== null ? 'saml.idp_metadata_xml' : 'saml.idp_metadata_url').finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, pending);
    }
    return pending;
  }

  private async parseAndKeep(key: string, text: Promise<string>, field: string): Promise<IdpMetadata> {
    const metadata = parseIdpMetadata(await text, field, { allowHttp: this.allowHttp });
    this.cache.delete(key);
    if (this.cache.size >= MAX_ENTRIES) this.cache.delete(this.cache.keys().next().value as string);
    this.cache.set(key, { metadata, expiresAtMs: this.now() + TTL_MS });
    return metadata;
  }

  private async download(url: string): Promise<string> {
    let response: Response;
    try {
      response = await this.fetchFn(url, { headers: { accept: 'application/samlmetadata+xml, application/xml, text/xml' } });
    } catch (error) {
      if (error instanceof DomainError) throw error;
      throw new DomainError('UNAVAILABLE', "the identity provider's metadata could not be fetched");
    }
    if (response.status !== 200) {
      throw new DomainError('UNAVAILABLE', `the identity provider's metadata address answered HTTP ${response.status}`);
    }
    const text = await response.text();
    if (Buffer.byteLength(text) > MAX_METADATA_BYTES) throw new DomainError('UNAVAILABLE', "the identity provider's metadata is too large");
    return text;
  }
}
