import { unique } from '../../rest-client.ts';
import { flagBody, freshArchivedFlag, freshFlag } from '../fixtures.ts';
import { PROJECT_P, STAGING, editor, freshIfAllowed, rest, viewer, type RestDescriptor, type RowContext } from '../rest-descriptor.ts';

/**
 * Flags, on both prefixes. A flag's definition (create, delete, archive, variants, description)
 * belongs to project P: editor on the project, also through the staging route; its state in an
 * environment (enabled, rules, hashing) is staging content: editor on staging suffices. Every
 * write works on a fresh flag (concurrent writes to one flag would race on its version).
 */

const env = ({ world }: RowContext, rest = '') => `/v1/environments/${world.environments.staging}/flags${rest}`;
const project = ({ world }: RowContext, rest = '') => `/v1/projects/${world.projects.P}/flags${rest}`;
/** The project prefix given an environment id behaves as the environment route (docs/contract.md "Flags"). */
const projectWithEnvironment = ({ world }: RowContext, rest = '') => `/v1/projects/${world.environments.staging}/flags${rest}`;
type Prefix = typeof env;

const definition = editor('project');

/** The definition operations both prefixes share (project P decides them on either). */
function definitionOperations(prefix: Prefix, template: string, createBody: (key: string) => unknown): RestDescriptor[] {
  return [
    rest(`POST ${template}`, definition, PROJECT_P, 201, (c) => ({ path: prefix(c), body: createBody(`acc-new-${unique()}`) })),
    rest(`DELETE ${template}/{flag_id}`, definition, PROJECT_P, 204, async (c) => ({ path: prefix(c, `/${await freshIfAllowed(c, freshFlag, c.shared.flagKey)}`) })),
    rest(`POST ${template}/{flag_id}/variants`, definition, PROJECT_P, 202, async (c) => ({
      path: prefix(c, `/${await freshIfAllowed(c, freshFlag, c.shared.flagKey)}/variants`),
      body: { variants: [{ key: 'extra', value: 'EXTRA' }] },
    })),
    rest(`POST ${template}/{flag_id}/archive`, definition, PROJECT_P, 200, async (c) => ({ path: prefix(c, `/${await freshIfAllowed(c, freshFlag, c.shared.flagKey)}/archive`) })),
    rest(`POST ${template}/{flag_id}/unarchive`, definition, PROJECT_P, 200, async (c) => ({ path: prefix(c, `/${await freshIfAllowed(c, freshArchivedFlag, c.shared.flagKey)}/unarchive`) })),
  ];
}

/** Staging content: rules and hashing (the project prefix takes them with the environment's id). */
function stagingContent(prefix: Prefix, template: string): RestDescriptor[] {
  return [
    rest(`PUT ${template}/{flag_id}/hashing`, editor('environment'), STAGING, 200, async (c) => ({ path: prefix(c, `/${await freshIfAllowed(c, freshFlag, c.shared.flagKey)}/hashing`), body: { configs: [] } })),
    rest(`PUT ${template}/{flag_id}/rules`, editor('environment'), STAGING, 202, async (c) => ({ path: prefix(c, `/${await freshIfAllowed(c, freshFlag, c.shared.flagKey)}/rules`), body: { rules: [] } })),
  ];
}

/** A project-level flag has no environment state (rules, enabled, off variant). */
const projectFlagBody = (key: string) => {
  const { flag } = flagBody(key);
  return { flag: { key: flag.key, value_type: flag.value_type, variants: flag.variants } };
};

export const flagDescriptors: RestDescriptor[] = [
  rest('GET /v1/environments/{env_id}/flags', viewer('environment'), STAGING, 200, (c) => ({ path: env(c) })),
  rest('GET /v1/environments/{env_id}/flags/{flag_id}', viewer('environment'), STAGING, 200, (c) => ({ path: env(c, `/${c.shared.flagKey}`) })),
  ...definitionOperations(env, '/v1/environments/{env_id}/flags', flagBody),
  ...stagingContent(env, '/v1/environments/{env_id}/flags'),
  // Turning the flag on in staging is staging content.
  rest('PUT /v1/environments/{env_id}/flags/{flag_id}', editor('environment'), STAGING, 200, async (c) => ({ path: env(c, `/${await freshIfAllowed(c, freshFlag, c.shared.flagKey)}`), body: { enabled: false } })),
  rest('GET /v1/environments/{env_id}/flags/{flag_id}/history', viewer('environment'), STAGING, 200, (c) => ({ path: env(c, `/${c.shared.flagKey}/history`) })),
  rest('GET /v1/environments/{env_id}/flags/{flag_id}/insights', viewer('environment'), STAGING, 200, (c) => ({ path: env(c, `/${c.shared.flagKey}/insights`) })),
  rest('GET /v1/environments/{env_id}/context-attributes', viewer('environment'), STAGING, 200, ({ world }) => ({ path: `/v1/environments/${world.environments.staging}/context-attributes` })),

  // Flags as code: reading the document is a project viewer's; importing one defines flags in P.
  rest('GET /v1/projects/{project_id}/export', viewer('project'), PROJECT_P, 200, ({ world }) => ({ path: `/v1/projects/${world.projects.P}/export` })),
  rest('GET /v1/projects/{project_id}/flag-lifecycle', viewer('project'), PROJECT_P, 200, ({ world }) => ({ path: `/v1/projects/${world.projects.P}/flag-lifecycle` })),
  rest('POST /v1/projects/{project_id}/import', definition, PROJECT_P, 200, ({ world }) => ({
    path: `/v1/projects/${world.projects.P}/import`,
    body: { format: 'switchyard.flags/v1', flags: [{ key: `acc-fac-${unique()}`, value_type: 'bool', variants: [{ key: 'on', value: true }] }] },
  })),
  rest('GET /v1/projects/{project_id}/flags', viewer('project'), PROJECT_P, 200, (c) => ({ path: project(c) })),
  rest('GET /v1/projects/{project_id}/flags/{flag_id}', viewer('project'), PROJECT_P, 200, (c) => ({ path: project(c, `/${c.shared.flagKey}`) })),
  ...definitionOperations(project, '/v1/projects/{project_id}/flags', projectFlagBody),
  ...stagingContent(projectWithEnvironment, '/v1/projects/{project_id}/flags'),
  rest('PUT /v1/projects/{project_id}/flags/{flag_id}', definition, PROJECT_P, 200, async (c) => ({
    path: project(c, `/${await freshIfAllowed(c, freshFlag, c.shared.flagKey)}`),
    body: { flag: { description: `described ${unique()}` } },
  })),
];
