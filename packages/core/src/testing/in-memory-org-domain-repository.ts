import { alreadyExists, notFound } from '../errors/domain-error.ts';
import type { OrgDomain, OrgDomainRepository } from '../ports/org-domain-ports.ts';
import type { OrgScope } from '../ports/scopes.ts';
import type { InMemoryState } from './in-memory-state.ts';

const key = (orgId: string, domain: string): string => `${orgId}/${domain}`;

/** OrgDomainRepository over the shared in-memory tables; a domain is verified for one org at most, as the partial unique index says. */
export class InMemoryOrgDomainRepository implements OrgDomainRepository {
  constructor(private readonly state: InMemoryState) {}

  async add(scope: OrgScope, input: { domain: string; challenge: string }, nowMs: number): Promise<OrgDomain> {
    this.state.requireOrg(scope);
    if (this.state.orgDomains.has(key(scope.orgId, input.domain))) throw alreadyExists('domain', input.domain);
    const domain: OrgDomain = { orgId: scope.orgId, domain: input.domain, challenge: input.challenge, createdAtMs: nowMs, verifiedAtMs: null };
    this.state.orgDomains.set(key(scope.orgId, input.domain), domain);
    return { ...domain };
  }

  async list(scope: OrgScope): Promise<OrgDomain[]> {
    return [...this.state.orgDomains.values()].filter((d) => d.orgId === scope.orgId).sort((a, b) => a.domain.localeCompare(b.domain)).map((d) => ({ ...d }));
  }

  async get(scope: OrgScope, domain: string): Promise<OrgDomain | null> {
    const found = this.state.orgDomains.get(key(scope.orgId, domain));
    return found ? { ...found } : null;
  }

  async markVerified(scope: OrgScope, domain: string, nowMs: number): Promise<OrgDomain> {
    const found = this.state.orgDomains.get(key(scope.orgId, domain));
    if (!found) throw notFound('domain', domain);
    const elsewhere = [...this.state.orgDomains.values()].some((d) => d.domain === domain && d.orgId !== scope.orgId && d.verifiedAtMs !== null);
    if (elsewhere) throw alreadyExists('verified domain', domain);
    found.verifiedAtMs ??= nowMs;
    return { ...found };
  }

  async remove(scope: OrgScope, domain: string): Promise<void> {
    if (!this.state.orgDomains.delete(key(scope.orgId, domain))) throw notFound('domain', domain);
  }

  async isVerified(scope: OrgScope, domain: string): Promise<boolean> {
    return (this.state.orgDomains.get(key(scope.orgId, domain))?.verifiedAtMs ?? null) !== null;
  }
}
