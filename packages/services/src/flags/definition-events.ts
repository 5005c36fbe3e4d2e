/**
 * The channel on which every instance hears that flag or segment definitions changed, so that
 * evaluation snapshots and sync streams refresh. Payload: `env:<environment id>` when one
 * environment changed, `project:<project id>` when a project-level definition changed (all of its
 * environments see it).
 */
export const DEFINITIONS_CHANGED_CHANNEL = 'switchyard_definitions_changed';

export type DefinitionsChange = { environmentId: string } | { projectId: string };

export const encodeChange = (change: DefinitionsChange): string =>
  'environmentId' in change ? `env:${change.environmentId}` : `project:${change.projectId}`;

export function decodeChange(payload: string): DefinitionsChange | null {
  if (payload.startsWith('env:')) return { environmentId: payload.slice(4) };
  if (payload.startsWith('project:')) return { projectId: payload.slice(8) };
  return null;
}
