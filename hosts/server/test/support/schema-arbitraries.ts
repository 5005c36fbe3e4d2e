import fc from 'fast-check';
import { hostileString, hostileValue, withBadCharacter } from './fuzz-values.ts';

/** A JSON schema as the OpenAPI document has it (3.1: JSON Schema, `type` may be a list). */
export type Schema = Record<string, any>;

/**
 * Values for a JSON schema, for the REST fuzzer (rest-fuzz.test.ts). Clean values follow the
 * schema (so requests get past validation into the handlers and the database); mutated ones
 * replace some nodes — at any depth — with hostile values and add unknown fields.
 * `known` offers strings worth sending by field name (ids and keys of the seeded fixtures), so
 * handlers find real rows as well as missing ones.
 */
export interface SchemaValues {
  resolve(schema: Schema): Schema;
  known: Record<string, readonly string[]>;
}

/** At this depth a mutated value stops growing (schemas of rules nest conditions and values). */
const MAX_DEPTH = 6;

const types = (schema: Schema): string[] => (Array.isArray(schema.type) ? schema.type : schema.type === undefined ? [] : [schema.type]);

/** A string for `schema`: an enum value, the pattern's language, a uuid, a known fixture value or plain text within the bounds. */
/**
 * `fc.stringMatching` parses its pattern into arbitraries each time it is called: ~100 ms for a
 * key-shaped pattern, and cleanString runs per field of every fuzzed request (most of the REST
 * fuzzer's CPU). An arbitrary holds no state between samples, so one per pattern serves them all.
 */
const matchingArbitraries = new Map<string, fc.Arbitrary<string>>();
function stringMatching(pattern: string): fc.Arbitrary<string> {
  let arbitrary = matchingArbitraries.get(pattern);
  if (!arbitrary) {
    arbitrary = fc.stringMatching(new RegExp(pattern));
    matchingArbitraries.set(pattern, arbitrary);
  }
  return arbitrary;
}

function cleanString(schema: Schema, field: string, values: SchemaValues): fc.Arbitrary<string> {
  if (Array.isArray(schema.enum)) {
    const strings = (schema.enum as unknown[]).filter((value): value is string => typeof value === 'string');
    if (strings.length > 0) return fc.constantFrom(...strings);
  }
  if (typeof schema.pattern === 'string') return stringMatching(schema.pattern);
  if (schema.format === 'uuid') return fc.uuid();
  const minLength = typeof schema.minLength === 'number' ? schema.minLength : 0;
  const maxLength = Math.max(Math.min(typeof schema.maxLength === 'number' ? schema.maxLength : 24, 24), minLength);
  // Key-shaped text (what most fields accept) and any text, both within the bounds.
  const keyShaped = maxLength === 0 ? fc.constant('') : stringMatching(`^[a-z][a-z0-9_-]{${Math.max(minLength - 1, 0)},${maxLength - 1}}$`);
  const text = fc.oneof(keyShaped, fc.string({ minLength, maxLength }));
  if (schema.format === 'email') return fc.emailAddress();
  const known = values.known[field];
  return known && known.length > 0 ? fc.oneof({ weight: 2, arbitrary: fc.constantFrom(...known) }, { weight: 1, arbitrary: text }) : text;
}

function cleanNumber(schema: Schema, integer: boolean): fc.Arbitrary<number> {
  const min = typeof schema.minimum === 'number' ? schema.minimum : -1000;
  const max = typeof schema.maximum === 'number' ? schema.maximum : Math.max(min, 0) + 1000;
  if (integer) return fc.integer({ min: Math.max(min, Number.MIN_SAFE_INTEGER), max: Math.min(max, Number.MAX_SAFE_INTEGER) });
  return fc.double({ min, max, noNaN: true, noDefaultInfinity: true });
}

/**
 * Values for `schema` at `field` (the property name, for `known`). With `mutate`, each node is
 * replaced by a hostile value one time in six, and objects may carry unknown fields.
 */
export function valuesFor(input: Schema | undefined, field: string, values: SchemaValues, mutate: boolean, depth = 0): fc.Arbitrary<unknown> {
  const clean = cleanValues(values.resolve(input ?? {}), field, values, mutate, depth);
  if (!mutate) return clean;
  return fc.oneof({ weight: 5, arbitrary: clean }, { weight: 1, arbitrary: hostileValue });
}

function cleanValues(schema: Schema, field: string, values: SchemaValues, mutate: boolean, depth: number): fc.Arbitrary<unknown> {
  const branches = (schema.oneOf ?? schema.anyOf) as Schema[] | undefined;
  if (Array.isArray(branches) && branches.length > 0) return fc.oneof(...branches.map((branch) => valuesFor(branch, field, values, mutate, depth)));
  if ('const' in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum) && types(schema).length === 0) return fc.constantFrom(...(schema.enum as unknown[]));
  const kinds = types(schema);
  if (kinds.length === 0) {
    // Any JSON value (a variant's `value`, a flag's default): scalars and small structures.
    return fc.oneof(fc.string({ maxLength: 10 }), fc.integer(), fc.boolean(), fc.constant(null), fc.constant({ nested: [1, 'two'] }));
  }
  return fc.oneof(...kinds.map((kind) => valueOfType(kind, schema, field, values, mutate, depth)));
}

function valueOfType(kind: string, schema: Schema, field: string, values: SchemaValues, mutate: boolean, depth: number): fc.Arbitrary<unknown> {
  switch (kind) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer':
      return cleanNumber(schema, true);
    case 'number':
      return cleanNumber(schema, false);
    case 'string':
      return mutate
        ? fc.oneof(
            { weight: 3, arbitrary: cleanString(schema, field, values) },
            { weight: 1, arbitrary: withBadCharacter(cleanString(schema, field, values)) },
            { weight: 1, arbitrary: hostileString },
          )
        : cleanString(schema, field, values);
    case 'array': {
      if (depth >= MAX_DEPTH) return fc.constant([]);
      const maxLength = Math.min(typeof schema.maxItems === 'number' ? schema.maxItems : 3, 3);
      const minLength = Math.min(typeof schema.minItems === 'number' ? schema.minItems : 0, maxLength);
      return fc.array(valuesFor(schema.items, field, values, mutate, depth + 1), { minLength, maxLength });
    }
    case 'object':
      return objectValues(schema, values, mutate, depth);
    default:
      return fc.constant(null);
  }
}

function objectValues(schema: Schema, values: SchemaValues, mutate: boolean, depth: number): fc.Arbitrary<unknown> {
  if (depth >= MAX_DEPTH) return fc.constant({});
  const properties = (schema.properties ?? {}) as Record<string, Schema>;
  const required = new Set<string>(Array.isArray(schema.required) ? schema.required : []);
  const shape: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [name, property] of Object.entries(properties)) shape[name] = valuesFor(property, name, values, mutate, depth + 1);
  const requiredKeys = Object.keys(shape).filter((name) => required.has(name));
  const declared = fc.record(shape, { requiredKeys });
  const additional =
    typeof schema.additionalProperties === 'object' && schema.additionalProperties !== null
      ? fc.dictionary(stringMatching('^[a-z][a-z0-9_]{0,10}$'), valuesFor(schema.additionalProperties as Schema, '', values, mutate, depth + 1), { maxKeys: 3 })
      : fc.constant({});
  const unknown = mutate ? fc.oneof({ weight: 4, arbitrary: fc.constant({}) }, { weight: 1, arbitrary: fc.dictionary(hostileString, hostileValue, { maxKeys: 3 }) }) : fc.constant({});
  return fc.tuple(declared, additional, unknown).map(([own, extra, stray]) => ({ ...stray, ...extra, ...own }));
}
