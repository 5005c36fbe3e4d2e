import type { EventDefinition, Flag, Segment } from '@switchyard/core';

/**
 * The document's form of each entity (docs/flags-as-code.md "The document"): what an export
 * writes, what an import compares, and what its answer shows before and after a change.
 */

/** A flag's project-level fields, in the document's order. */
export const DEFINITION_FIELDS = ['description', 'value_type', 'variants', 'tags', 'lifetime', 'maintainer', 'client_visible', 'bucket_by', 'archived'] as const;

/** A flag's fields in one environment. */
export const CONFIG_FIELDS = ['enabled', 'off_variant_key', 'rules', 'prerequisites', 'hashing'] as const;

/** The fields among `names` that `source` has (a document entry: a field left out is left as it is). */
export function fieldsOf(source: object, names: readonly string[]): Record<string, unknown> {
  const form: Record<string, unknown> = {};
  for (const name of names) {
    const value = (source as Record<string, unknown>)[name];
    if (value !== undefined) form[name] = value;
  }
  return form;
}

export const definitionForm = (flag: Flag): Record<string, unknown> => fieldsOf(flag, DEFINITION_FIELDS);

export const configForm = (flag: Flag): Record<string, unknown> => ({ ...fieldsOf(flag, CONFIG_FIELDS), prerequisites: flag.prerequisites ?? [] });

/** A segment without its members (counts only: a list may hold millions of keys). */
export function segmentForm(segment: Segment): Record<string, unknown> {
  const form: Record<string, unknown> = { kind: segment.kind, context_type: segment.context_type, description: segment.description };
  if (segment.kind === 'rule') form.conditions = segment.conditions;
  else {
    form.included_count = segment.included_count;
    form.excluded_count = segment.excluded_count;
  }
  return form;
}

export const eventDefinitionForm = (definition: EventDefinition): Record<string, unknown> => ({
  value_type: definition.valueType,
  description: definition.description,
  client_allowed: definition.clientAllowed,
});
