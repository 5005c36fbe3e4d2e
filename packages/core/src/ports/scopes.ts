/**
 * Every repository call names the tenant it acts for. Adapters put these ids in the WHERE clause
 * of every statement, so an id from another org simply is not found (docs/contract.md "Roles (RBAC)").
 */
export interface OrgScope {
  orgId: string;
}
export interface ProjectScope extends OrgScope {
  projectId: string;
}
export interface EnvironmentScope extends ProjectScope {
  environmentId: string;
}

/** A page of a long listing; `nextCursor` is null on the last page. */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}
