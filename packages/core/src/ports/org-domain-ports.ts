import type { OrgScope } from './scopes.ts';

/** A domain an org claims; verified once its DNS holds the org's TXT challenge. */
export interface OrgDomain {
  orgId: string;
  /** Lower case, no trailing dot. */
  domain: string;
  /** The random value the TXT record must hold (not secret: it is published in DNS). */
  challenge: string;
  createdAtMs: number;
  verifiedAtMs: number | null;
}

/** Org domains; every statement is scoped by org except the verified-domain lookup by address. */
export interface OrgDomainRepository {
  /** @throws ALREADY_EXISTS when the org has it already; NOT_FOUND for an unknown org. */
  add(scope: OrgScope, input: { domain: string; challenge: string }, nowMs: number): Promise<OrgDomain>;
  list(scope: OrgScope): Promise<OrgDomain[]>;
  get(scope: OrgScope, domain: string): Promise<OrgDomain | null>;
  /** @throws ALREADY_EXISTS when another org has this domain verified; NOT_FOUND when the org does not have it. */
  markVerified(scope: OrgScope, domain: string, nowMs: number): Promise<OrgDomain>;
  /** @throws NOT_FOUND when the org does not have it. */
  remove(scope: OrgScope, domain: string): Promise<void>;
  /** Whether the org has this domain verified. */
  isVerified(scope: OrgScope, domain: string): Promise<boolean>;
}

/** DNS TXT lookups (node's dns.Resolver in the server, pointed at DNS_SERVERS when set). */
export interface TxtResolver {
  /** The TXT strings at `name` (each record's chunks joined); [] when there are none or the name does not exist. @throws on a lookup that failed otherwise. */
  resolveTxt(name: string): Promise<string[]>;
}
