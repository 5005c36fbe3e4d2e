import { alreadyExists } from '../errors/domain-error.ts';
import type { Org } from '../model/entities.ts';
import type { OrgRepository } from '../ports/tenancy-ports.ts';
import type { InMemoryState } from './in-memory-state.ts';

/** OrgRepository over the shared in-memory tables; mirrors the unique constraints of `orgs`. */
export class InMemoryOrgRepository implements OrgRepository {
  constructor(private readonly state: InMemoryState) {}

  async create(input: { name: string; isSystem?: boolean }): Promise<Org> {
    const isSystem = input.isSystem ?? false;
    for (const org of this.state.orgs.values()) {
      if (org.name === input.name) throw alreadyExists('organisation', input.name);
      // The schema allows one system org (a partial unique index); a second is a duplicate too.
      if (isSystem && org.isSystem) throw alreadyExists('system organisation', input.name);
    }
    const org: Org = { id: this.state.newId(), name: input.name, isSystem, createdAtMs: this.state.now() };
    this.state.orgs.set(org.id, org);
    return { ...org };
  }

  async get(orgId: string): Promise<Org | null> {
    const org = this.state.orgs.get(orgId);
    return org ? { ...org } : null;
  }

  async findSystemOrg(): Promise<Org | null> {
    for (const org of this.state.orgs.values()) if (org.isSystem) return { ...org };
    return null;
  }

  async list(): Promise<Org[]> {
    return [...this.state.orgs.values()].sort((a, b) => a.createdAtMs - b.createdAtMs).map((org) => ({ ...org }));
  }
}
