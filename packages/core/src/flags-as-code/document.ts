import { invalidArgument } from '../errors/domain-error.ts';
import { checkKey } from '../flags/validate-flag.ts';

/**
 * The flags-as-code document (docs/flags-as-code.md): a project's flag definitions and, per
 * environment (by name), the flags' configuration there, its segments and its event definitions.
 * The same document is JSON or YAML; docs/flags-as-code.schema.json is its JSON Schema.
 *
 * Only the document's frame is checked here (format, shapes of the containers, keys, bounds): every
 * entry's content is checked by the same services a person's write goes through, so an import can
 * never accept what the API would refuse.
 */
export const FLAGS_DOCUMENT_FORMAT = 'switchyard.flags/v1';

/** Bounds of one document: an import is one transaction, so its size is what one request may ask. */
export const FLAGS_DOCUMENT_LIMITS = Object.freeze({
  flags: 5_000,
  environments: 50,
  segmentsPerEnvironment: 1_000,
  eventDefinitionsPerEnvironment: 1_000,
  /** Keys per list of a list segment (the segment routes' bound per request). */
  membersPerList: 10_000,
  /** Keys of every list of every segment in the document together. */
  members: 200_000,
});

/** A flag's project-level definition. A field left out is left as it is (for a new flag: its default). */
export interface DocumentFlag {
  key: string;
  description?: string;
  value_type?: string;
  variants?: unknown[];
  tags?: string[];
  lifetime?: string;
  maintainer?: string | null;
  client_visible?: boolean;
  bucket_by?: string;
  archived?: boolean;
  /** When given, the import changes the definition only if its version is still this one. */
  version?: number;
}

/** A flag's configuration in one environment. A field left out is left as it is. */
export interface DocumentFlagEnvironment {
  enabled?: boolean;
  off_variant_key?: string | null;
  rules?: unknown[];
  prerequisites?: unknown[];
  hashing?: unknown[];
  /** When given, the import changes the configuration only if its version there is still this one. */
  version?: number;
}

export interface DocumentSegment {
  key: string;
  kind: string;
  context_type?: string;
  description?: string;
  conditions?: unknown[];
  /** List segments: the whole list. Left out: the members are left as they are. */
  included_keys?: string[];
  excluded_keys?: string[];
  /** Written by an export whose lists were longer than the document holds: the members were left out. */
  members_omitted?: boolean;
}

export interface DocumentEventDefinition {
  key: string;
  value_type?: string;
  description?: string;
  client_allowed?: boolean;
}

export interface DocumentEnvironment {
  flags: Record<string, DocumentFlagEnvironment>;
  segments: DocumentSegment[];
  event_definitions: DocumentEventDefinition[];
}

export interface FlagsDocument {
  format: typeof FLAGS_DOCUMENT_FORMAT;
  flags: DocumentFlag[];
  /** By environment name; an environment left out is left as it is. */
  environments: Record<string, DocumentEnvironment>;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

function objectAt(value: unknown, path: string): Record<string, unknown> {
  if (!isObject(value)) throw invalidArgument(`${path} must be an object`, path);
  return value;
}

function listAt(value: unknown, path: string, max: number): unknown[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw invalidArgument(`${path} must be a list`, path);
  if (value.length > max) throw invalidArgument(`${path} holds at most ${max} entries`, path);
  return value;
}

/** The fields a container may hold: anything else is a typo the author should hear about, not a silent no-op. */
function onlyFields(value: Record<string, unknown>, allowed: readonly string[], path: string): void {
  for (const name of Object.keys(value)) {
    if (!allowed.includes(name)) throw invalidArgument(`${path}.${name} is not a field of this document (allowed: ${allowed.join(', ')})`, `${path}.${name}`);
  }
}

const FLAG_FIELDS = ['key', 'description', 'value_type', 'variants', 'tags', 'lifetime', 'maintainer', 'client_visible', 'bucket_by', 'archived', 'version'] as const;
const FLAG_ENVIRONMENT_FIELDS = ['enabled', 'off_variant_key', 'rules', 'prerequisites', 'hashing', 'version'] as const;
const SEGMENT_FIELDS = ['key', 'kind', 'context_type', 'description', 'conditions', 'included_keys', 'excluded_keys', 'members_omitted'] as const;
const EVENT_DEFINITION_FIELDS = ['key', 'value_type', 'description', 'client_allowed'] as const;
const ENVIRONMENT_FIELDS = ['flags', 'segments', 'event_definitions'] as const;

function optionalVersion(value: unknown, path: string): void {
  if (value !== undefined && (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0)) throw invalidArgument(`${path} must be an integer >= 0`, path);
}

function uniqueKeys(entries: Array<{ key: string }>, path: string): void {
  const seen = new Set<string>();
  for (const entry of entries) {
    if (seen.has(entry.key)) throw invalidArgument(`${path} names '${entry.key}' twice`, path);
    seen.add(entry.key);
  }
}

/**
 * The document of an import body (already parsed from JSON or YAML), its frame checked.
 * @throws INVALID_ARGUMENT naming the path of the first problem.
 */
export function parseFlagsDocument(input: unknown): FlagsDocument {
  const root = objectAt(input, 'document');
  onlyFields(root, ['format', 'flags', 'environments'], 'document');
  if (root.format !== FLAGS_DOCUMENT_FORMAT) {
    throw invalidArgument(`document.format must be '${FLAGS_DOCUMENT_FORMAT}' (this server reads that version of the document)`, 'format');
  }
  const flags = listAt(root.flags, 'flags', FLAGS_DOCUMENT_LIMITS.flags).map((entry, i) => {
    const path = `flags[${i}]`;
    const flag = objectAt(entry, path);
    onlyFields(flag, FLAG_FIELDS, path);
    checkKey(flag.key, `${path}.key`);
    optionalVersion(flag.version, `${path}.version`);
    return flag as unknown as DocumentFlag;
  });
  uniqueKeys(flags, 'flags');

  const environmentsInput = root.environments === undefined || root.environments === null ? {} : objectAt(root.environments, 'environments');
  const names = Object.keys(environmentsInput);
  if (names.length > FLAGS_DOCUMENT_LIMITS.environments) throw invalidArgument(`environments holds at most ${FLAGS_DOCUMENT_LIMITS.environments} entries`, 'environments');
  let members = 0;
  const environments: Record<string, DocumentEnvironment> = Object.create(null) as Record<string, DocumentEnvironment>;
  for (const name of names) {
    const path = `environments.${name}`;
    if (name === '' || name.length > 200) throw invalidArgument(`${path}: an environment name is 1-200 characters`, 'environments');
    const environment = objectAt(environmentsInput[name], path);
    onlyFields(environment, ENVIRONMENT_FIELDS, path);
    const flagsInput = environment.flags === undefined || environment.flags === null ? {} : objectAt(environment.flags, `${path}.flags`);
    const flagConfigs: Record<string, DocumentFlagEnvironment> = Object.create(null) as Record<string, DocumentFlagEnvironment>;
    const flagKeys = Object.keys(flagsInput);
    if (flagKeys.length > FLAGS_DOCUMENT_LIMITS.flags) throw invalidArgument(`${path}.flags holds at most ${FLAGS_DOCUMENT_LIMITS.flags} entries`, `${path}.flags`);
    for (const key of flagKeys) {
      const configPath = `${path}.flags.${key}`;
      checkKey(key, configPath);
      const config = objectAt(flagsInput[key], configPath);
      onlyFields(config, FLAG_ENVIRONMENT_FIELDS, configPath);
      optionalVersion(config.version, `${configPath}.version`);
      flagConfigs[key] = config as DocumentFlagEnvironment;
    }
    const segments = listAt(environment.segments, `${path}.segments`, FLAGS_DOCUMENT_LIMITS.segmentsPerEnvironment).map((entry, i) => {
      const segmentPath = `${path}.segments[${i}]`;
      const segment = objectAt(entry, segmentPath);
      onlyFields(segment, SEGMENT_FIELDS, segmentPath);
      checkKey(segment.key, `${segmentPath}.key`);
      for (const list of ['included_keys', 'excluded_keys'] as const) {
        const keys = listAt(segment[list], `${segmentPath}.${list}`, FLAGS_DOCUMENT_LIMITS.membersPerList);
        members += keys.length;
      }
      return segment as unknown as DocumentSegment;
    });
    uniqueKeys(segments, `${path}.segments`);
    const eventDefinitions = listAt(environment.event_definitions, `${path}.event_definitions`, FLAGS_DOCUMENT_LIMITS.eventDefinitionsPerEnvironment).map((entry, i) => {
      const definitionPath = `${path}.event_definitions[${i}]`;
      const definition = objectAt(entry, definitionPath);
      onlyFields(definition, EVENT_DEFINITION_FIELDS, definitionPath);
      checkKey(definition.key, `${definitionPath}.key`);
      return definition as unknown as DocumentEventDefinition;
    });
    uniqueKeys(eventDefinitions, `${path}.event_definitions`);
    environments[name] = { flags: flagConfigs, segments, event_definitions: eventDefinitions };
  }
  if (members > FLAGS_DOCUMENT_LIMITS.members) throw invalidArgument(`the document's segments hold at most ${FLAGS_DOCUMENT_LIMITS.members} member keys together`, 'environments');
  return { format: FLAGS_DOCUMENT_FORMAT, flags, environments };
}
