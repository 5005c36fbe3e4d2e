import {
  FLAGS_DOCUMENT_FORMAT,
  FLAGS_DOCUMENT_LIMITS,
  type DocumentEnvironment,
  type DocumentFlag,
  type DocumentFlagEnvironment,
  type DocumentSegment,
  type Environment,
  type EnvironmentScope,
  type FlagsDocument,
  type Principal,
  type ProjectScope,
} from '@switchyard/core';
import type { ImportServices } from './flags-as-code-service.ts';
import { configForm, definitionForm, eventDefinitionForm } from './document-forms.ts';
import { readMembers } from './segment-members.ts';

/**
 * The project's document (docs/flags-as-code.md "Export"), read with the caller's permissions
 * through the services (flag, segment and event-definition reads). List segments carry their
 * members while each list holds at most FLAGS_DOCUMENT_LIMITS.membersPerList keys and the
 * document as a whole FLAGS_DOCUMENT_LIMITS.members; past that a segment is written with
 * `members_omitted: true`, which an import reads as "leave the members as they are".
 */
export async function exportDocument(services: ImportServices, principal: Principal, project: ProjectScope, environments: readonly Environment[], includeVersions: boolean): Promise<FlagsDocument> {
  const definitions = await services.flags.list(principal, { project });
  const flags: DocumentFlag[] = definitions.map((flag) => ({ key: flag.key, ...definitionForm(flag), ...(includeVersions ? { version: flag.version } : {}) }) as DocumentFlag);
  const document: FlagsDocument = { format: FLAGS_DOCUMENT_FORMAT, flags, environments: {} };
  let membersLeft = FLAGS_DOCUMENT_LIMITS.members;
  for (const environment of environments) {
    const scope: EnvironmentScope = { orgId: environment.orgId, projectId: environment.projectId, environmentId: environment.id };
    const configs: Record<string, DocumentFlagEnvironment> = {};
    for (const flag of await services.flags.list(principal, { environment: scope })) {
      configs[flag.key] = { ...configForm(flag), ...(includeVersions ? { version: flag.version } : {}) } as DocumentFlagEnvironment;
    }
    const segments: DocumentSegment[] = [];
    for (const segment of await services.segments.list(principal, scope)) {
      const entry: DocumentSegment = { key: segment.key, kind: segment.kind, context_type: segment.context_type, description: segment.description };
      if (segment.kind === 'rule') entry.conditions = segment.conditions;
      else {
        const fits = (count: number) => count <= FLAGS_DOCUMENT_LIMITS.membersPerList;
        let included: string[] | null = null;
        let excluded: string[] | null = null;
        if (fits(segment.included_count) && fits(segment.excluded_count) && segment.included_count + segment.excluded_count <= membersLeft) {
          included = await readMembers(services.segments, principal, scope, segment.key, 'included', FLAGS_DOCUMENT_LIMITS.membersPerList);
          excluded = await readMembers(services.segments, principal, scope, segment.key, 'excluded', FLAGS_DOCUMENT_LIMITS.membersPerList);
        }
        if (included !== null && excluded !== null && included.length + excluded.length <= membersLeft) {
          membersLeft -= included.length + excluded.length;
          entry.included_keys = included;
          entry.excluded_keys = excluded;
        } else entry.members_omitted = true;
      }
      segments.push(entry);
    }
    const eventDefinitions = (await services.eventDefinitions.list(principal, scope)).map((definition) => ({ key: definition.key, ...eventDefinitionForm(definition) }));
    const section: DocumentEnvironment = { flags: configs, segments, event_definitions: eventDefinitions };
    document.environments[environment.name] = section;
  }
  return document;
}
