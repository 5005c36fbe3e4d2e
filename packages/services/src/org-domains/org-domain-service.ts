import { randomBytes } from 'node:crypto';
import { DomainError, failedPrecondition, invalidArgument, type OrgDomain, type Principal, type Repositories, type TxtResolver } from '@switchyard/core';
import { requireAllowed } from '../authorization.ts';
import { recordChange } from '../audit/audit-trail.ts';

/** Domains one org may hold (verified or not). */
export const MAX_DOMAINS_PER_ORG = 20;
/** Where the TXT record goes, under the domain. */
export const DOMAIN_CHALLENGE_LABEL = '_switchyard-challenge';
const CHALLENGE_PREFIX = 'switchyard-domain-verification=';
/** Answers one verification reads: a domain with more TXT records than this is not scanned further. */
const MAX_TXT_RECORDS = 50;

/** A host name of at least two labels, letters, digits and hyphens (IDNs in their xn-- form). */
const DOMAIN = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** A domain as REST answers it, with the TXT record to publish. */
export interface OrgDomainRecord {
  org_id: string;
  domain: string;
  txt_record_name: string;
  txt_record_value: string;
  verified: boolean;
  verified_at: string | null;
  created_at: string;
}

const domainRecord = (domain: OrgDomain): OrgDomainRecord => ({
  org_id: domain.orgId,
  domain: domain.domain,
  txt_record_name: `${DOMAIN_CHALLENGE_LABEL}.${domain.domain}`,
  txt_record_value: `${CHALLENGE_PREFIX}${domain.challenge}`,
  verified: domain.verifiedAtMs !== null,
  verified_at: domain.verifiedAtMs === null ? null : new Date(domain.verifiedAtMs).toISOString(),
  created_at: new Date(domain.createdAtMs).toISOString(),
});

/** The domain of an address, lower case (what org domains are compared with). */
export const domainOfEmail = (email: string): string => email.slice(email.lastIndexOf('@') + 1).toLowerCase().replace(/\.$/, '');

function requireDomain(raw: string | undefined): string {
  const domain = (raw ?? '').trim().toLowerCase().replace(/\.$/, '');
  if (!DOMAIN.test(domain)) throw invalidArgument('domain must be a host name such as example.com', 'domain');
  return domain;
}

/**
 * Org domains (docs/security.md "Domains an org proved"): an org admin adds a domain, publishes the
 * TXT record it is given, and asks for verification; once verified, the org's identity providers'
 * assertions about addresses of that domain count as proof of those addresses (docs/sso.md
 * "Accounts"). A domain is verified for one org at a time (ALREADY_EXISTS for a second).
 */
export class OrgDomainService {
  constructor(
    private readonly repos: Pick<Repositories, 'orgDomains' | 'unitOfWork'>,
    private readonly dns: TxtResolver,
    private readonly now: () => number = Date.now,
  ) {}

  async add(principal: Principal, orgId: string, input: { domain: string | undefined }): Promise<OrgDomainRecord> {
    requireAllowed(principal, 'auth_provider.manage', { orgId });
    const domain = requireDomain(input.domain);
    if ((await this.repos.orgDomains.list({ orgId })).length >= MAX_DOMAINS_PER_ORG) {
      throw new DomainError('RESOURCE_EXHAUSTED', `an organisation holds at most ${MAX_DOMAINS_PER_ORG} domains; remove one first`);
    }
    return this.repos.unitOfWork.run(async (tx) => {
      const record = domainRecord(await tx.orgDomains.add({ orgId }, { domain, challenge: randomBytes(24).toString('base64url') }, this.now()));
      await recordChange(tx, principal, { orgId, action: 'org_domain.add', resourceType: 'org_domain', resourceId: domain, after: record }, this.now());
      return record;
    });
  }

  async list(principal: Principal, orgId: string): Promise<OrgDomainRecord[]> {
    requireAllowed(principal, 'auth_provider.manage', { orgId });
    return (await this.repos.orgDomains.list({ orgId })).map(domainRecord);
  }

  /** Looks the TXT record up now (one DNS query); FAILED_PRECONDITION when it is not there yet. */
  async verify(principal: Principal, orgId: string, rawDomain: string): Promise<OrgDomainRecord> {
    requireAllowed(principal, 'auth_provider.manage', { orgId });
    const domain = requireDomain(rawDomain);
    const found = await this.repos.orgDomains.get({ orgId }, domain);
    if (!found) throw new DomainError('NOT_FOUND', `domain '${domain}' not found`);
    if (found.verifiedAtMs !== null) return domainRecord(found);
    const name = `${DOMAIN_CHALLENGE_LABEL}.${domain}`;
    let answers: string[];
    try {
      answers = (await this.dns.resolveTxt(name)).slice(0, MAX_TXT_RECORDS);
    } catch (error) {
      throw new DomainError('UNAVAILABLE', `the DNS lookup of ${name} failed (${(error as NodeJS.ErrnoException).code ?? 'error'}); try again later`);
    }
    if (!answers.includes(`${CHALLENGE_PREFIX}${found.challenge}`)) {
      throw failedPrecondition(`no TXT record "${CHALLENGE_PREFIX}${found.challenge}" at ${name} yet`);
    }
    return this.repos.unitOfWork.run(async (tx) => {
      const record = domainRecord(await tx.orgDomains.markVerified({ orgId }, domain, this.now()));
      await recordChange(tx, principal, { orgId, action: 'org_domain.verify', resourceType: 'org_domain', resourceId: domain, before: domainRecord(found), after: record }, this.now());
      return record;
    });
  }

  async remove(principal: Principal, orgId: string, rawDomain: string): Promise<void> {
    requireAllowed(principal, 'auth_provider.manage', { orgId });
    const domain = requireDomain(rawDomain);
    await this.repos.unitOfWork.run(async (tx) => {
      const before = await tx.orgDomains.get({ orgId }, domain);
      await tx.orgDomains.remove({ orgId }, domain);
      await recordChange(tx, principal, { orgId, action: 'org_domain.remove', resourceType: 'org_domain', resourceId: domain, before: before && domainRecord(before) }, this.now());
    });
  }
}
