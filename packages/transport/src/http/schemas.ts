/**
 * JSON schemas shared by routes. Fastify validates with them (ajv) and the OpenAPI document is
 * generated from the same objects, so what is documented is what is enforced.
 */
export const nonEmptyString = { type: 'string', minLength: 1, maxLength: 1000 } as const;
export const optionalString = { type: ['string', 'null'], maxLength: 1000 } as const;
export const uuidParam = { type: 'string', minLength: 1, maxLength: 100 } as const;

export const errorBody = {
  type: 'object',
  required: ['error', 'code'],
  properties: { error: { type: 'string' }, code: { type: 'string' } },
} as const;

export const newUserBody = {
  type: 'object',
  required: ['email', 'display_name', 'password'],
  properties: {
    email: nonEmptyString,
    display_name: nonEmptyString,
    password: nonEmptyString,
    org_role: { type: ['string', 'null'], enum: ['org_admin', 'org_member', null] },
    org_id: optionalString,
  },
} as const;

export const nameBody = {
  type: 'object',
  required: ['name'],
  properties: { name: nonEmptyString, org_id: optionalString },
} as const;

export interface NewUserBody {
  email: string;
  display_name: string;
  password: string;
  org_role?: string | null;
  org_id?: string | null;
}

export interface NameBody {
  name: string;
  org_id?: string | null;
}

export const newUserInput = (body: NewUserBody) => ({
  email: body.email,
  displayName: body.display_name,
  password: body.password,
  orgRole: body.org_role,
});

/** Query strings are not coerced (ajv `coerceTypes: false`), so numbers arrive as digit strings. */
export const digits = (description: string) => ({ type: 'string', pattern: '^[0-9]{1,15}$', description }) as const;

export const versionQuery = {
  type: 'object',
  properties: { version: digits('Expected version (integer); a stale one answers 409 ABORTED.') },
} as const;

export interface VersionQuery {
  version?: string;
}

/** `?version=N` as a number, or undefined when absent (the schema guarantees digits). */
export const queryVersion = (query: VersionQuery): number | undefined => (query.version === undefined ? undefined : Number(query.version));

/** OpenAPI security requirements (scheme names of http/openapi.ts): documentation only, each handler authenticates itself. */
type SecurityRequirements = Array<Record<string, string[]>>;
export const BEARER_ONLY: SecurityRequirements = [{ bearer_jwt: [] }];
export const SDK_KEY_ONLY: SecurityRequirements = [{ sdk_key: [] }];
export const BEARER_OR_SDK_KEY: SecurityRequirements = [{ bearer_jwt: [] }, { sdk_key: [] }];

export const envParams = { type: 'object', required: ['env_id'], properties: { env_id: uuidParam } } as const;

export const EMPTY_RESPONSE = { type: 'null', description: 'No content.' } as const;
