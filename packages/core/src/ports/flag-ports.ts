import type { Condition, Flag, FlagBucketBy, FlagLifetime, FlagValueType, HashingConfig, Prerequisite, Rule, Segment, SegmentKind, Variant } from '../model/definitions.ts';
import type { EnvironmentScope, Page, ProjectScope } from './scopes.ts';

/** The project-level part of a flag. */
export interface FlagDefinitionInput {
  key: string;
  description: string;
  value_type: FlagValueType;
  variants: Variant[];
  /** Absent on create: the project's `client_visible_default`; absent on update: unchanged. */
  client_visible?: boolean;
  /** Project-level metadata (checked: flag-metadata.ts). Absent on create: [], `permanent`, null, `environment`; absent on update: unchanged (maintainer null clears it). */
  tags?: string[];
  lifetime?: FlagLifetime;
  maintainer?: string | null;
  bucket_by?: FlagBucketBy;
}

/** The per-environment part of a flag. */
export interface FlagEnvironmentStateInput {
  enabled?: boolean;
  off_variant_key?: string | null;
  rules?: Rule[];
  /** Checked by the repository against the environment's flags (checkPrerequisiteGraph) under its prerequisite lock. */
  prerequisites?: Prerequisite[];
  hashing?: HashingConfig[];
}

/**
 * Flags: the definition is project-level, the state is per environment. An environment with no
 * stored state sees the flag disabled, with no rules and version 0 (state rows are created on first write).
 *
 * Versions: the definition has its own version (bumped by definition changes); each environment's
 * state has its own (bumped by state changes). A supplied `expectedVersion` that differs from the
 * stored one fails with ABORTED and changes nothing.
 */
export interface FlagRepository {
  /** @throws ALREADY_EXISTS for a duplicate key in the project. */
  createDefinition(scope: ProjectScope, input: FlagDefinitionInput): Promise<Flag>;
  /** The definition as the project sees it (environment fields at their defaults). */
  getDefinition(scope: ProjectScope, key: string): Promise<Flag | null>;
  listDefinitions(scope: ProjectScope): Promise<Flag[]>;
  /** @throws NOT_FOUND, ABORTED. */
  updateDefinition(
    scope: ProjectScope,
    key: string,
    patch: Partial<Omit<FlagDefinitionInput, 'key'>>,
    expectedVersion?: number,
  ): Promise<Flag>;
  /**
   * Deletes the definition and every environment's state. @throws NOT_FOUND, ABORTED;
   * FAILED_PRECONDITION while another flag names it as a prerequisite (refuseWhilePrerequisite).
   */
  deleteDefinition(scope: ProjectScope, key: string, expectedVersion?: number): Promise<void>;
  /** @throws NOT_FOUND, ABORTED; archiving: FAILED_PRECONDITION while another flag names it as a prerequisite. */
  setArchived(scope: ProjectScope, key: string, archived: boolean, expectedVersion?: number): Promise<Flag>;

  /** The flag merged with this environment's state. */
  get(scope: EnvironmentScope, key: string): Promise<Flag | null>;
  /** Every flag of the environment, merged, ordered by key. */
  list(scope: EnvironmentScope): Promise<Flag[]>;
  /**
   * @throws NOT_FOUND, ABORTED (against the environment state's version); INVALID_ARGUMENT when
   * non-empty `prerequisites` fail checkPrerequisiteGraph against the environment's flags, checked
   * under a lock that serializes such writes per environment.
   */
  updateState(
    scope: EnvironmentScope,
    key: string,
    patch: FlagEnvironmentStateInput,
    expectedVersion?: number,
  ): Promise<Flag>;
}

export interface SegmentInput {
  key: string;
  context_type: string;
  kind: SegmentKind;
  description?: string;
  conditions?: Condition[];
}

export interface MemberChanges {
  add_included?: string[];
  remove_included?: string[];
  add_excluded?: string[];
  remove_excluded?: string[];
}

export type MemberList = 'included' | 'excluded';

/** The new content of a segment's lists; a list left out (or null) is not changed. */
export interface MemberLists {
  included?: string[] | null;
  excluded?: string[] | null;
}

/** Environment-level segments. List members live in an indexed table for O(1) membership checks. */
export interface SegmentRepository {
  /** @throws ALREADY_EXISTS. */
  create(scope: EnvironmentScope, input: SegmentInput): Promise<Segment>;
  get(scope: EnvironmentScope, key: string): Promise<Segment | null>;
  list(scope: EnvironmentScope): Promise<Segment[]>;
  /** kind and key do not change. @throws NOT_FOUND, ABORTED. */
  update(
    scope: EnvironmentScope,
    key: string,
    patch: { context_type?: string; description?: string; conditions?: Condition[] },
    expectedVersion?: number,
  ): Promise<Segment>;
  /** Also removes its members. @throws NOT_FOUND, ABORTED. */
  delete(scope: EnvironmentScope, key: string, expectedVersion?: number): Promise<void>;
  /**
   * Applies member changes in one transaction and bumps the version; removals before additions.
   * @throws NOT_FOUND, FAILED_PRECONDITION (a rule segment has no member lists).
   */
  changeMembers(scope: EnvironmentScope, key: string, changes: MemberChanges): Promise<Segment>;
  /**
   * Makes each given list exactly `keys` (duplicates count once; a list not given is left as it
   * is) in one transaction and bumps the version once. The stored members are never read into
   * memory: the work is bounded by the new lists (which a request body bounds), not by the size of
   * the segment.
   * @throws NOT_FOUND, FAILED_PRECONDITION (a rule segment has no member lists).
   */
  replaceMembers(scope: EnvironmentScope, key: string, lists: MemberLists): Promise<Segment>;
  /**
   * Members in key (code point) order; `cursor` is the last key of the previous page.
   * @throws NOT_FOUND, INVALID_ARGUMENT (limit below 1).
   */
  listMembers(
    scope: EnvironmentScope,
    key: string,
    list: MemberList,
    page: { cursor?: string | null; limit: number },
  ): Promise<Page<string>>;
  /**
   * Membership of context keys in list segments (excluded wins over included), one answer per pair,
   * in order. A pair naming an unknown segment answers null; a rule segment, false.
   */
  checkMembers(scope: EnvironmentScope, pairs: Array<{ segmentKey: string; contextKey: string }>): Promise<Array<boolean | null>>;
}
