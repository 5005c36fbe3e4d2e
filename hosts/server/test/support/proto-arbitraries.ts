import fc from 'fast-check';
import type * as protoLoader from '@grpc/proto-loader';
import { hostileString, hostileUrlString, hostileValue, withBadCharacter } from './fuzz-values.ts';

/**
 * Request messages for the gRPC fuzzer (grpc-fuzz.test.ts), built from the descriptors
 * proto-loader made of proto/ (the same the server loads): every field of its declared type, so
 * the client always encodes them, with hostile contents — U+0000 and lone surrogates, odd and
 * long strings, extreme numbers, unknown enum numbers, empty and long repeated fields, missing
 * fields. `known` offers real ids and keys by field name, so calls also reach existing rows.
 */

/** Built once: fc.stringMatching parses its pattern into arbitraries on every call (~100 ms). */
const KEY_SHAPED = fc.stringMatching(/^[a-z][a-z0-9_-]{0,15}$/);

interface FieldDescriptor {
  name: string;
  label: string;
  type: string;
  typeName: string;
}
interface MessageDescriptor {
  name: string;
  field: FieldDescriptor[];
  nestedType: MessageDescriptor[];
  options: { mapEntry?: boolean } | null;
}

const INT32 = { min: -(2 ** 31), max: 2 ** 31 - 1 };
const UINT32 = { min: 0, max: 2 ** 32 - 1 };

export class ProtoValues {
  constructor(
    private readonly definitions: protoLoader.PackageDefinition,
    private readonly known: Record<string, readonly string[]>,
  ) {}

  /** Messages of the type `fullName` (`svc.flags.v1.GetFlagRequest`). */
  message(fullName: string, depth = 0): fc.Arbitrary<Record<string, unknown>> {
    const descriptor = this.descriptor(fullName);
    if (descriptor === undefined) throw new Error(`no descriptor for ${fullName}`);
    if (depth > 4) return fc.constant({});
    const shape: Record<string, fc.Arbitrary<unknown>> = {};
    for (const field of descriptor.field) shape[field.name] = this.field(field, fullName, depth);
    // Any field may be missing: proto3 then decodes its default, which handlers must refuse or accept.
    return fc.record(shape, { requiredKeys: [] });
  }

  private field(field: FieldDescriptor, scope: string, depth: number): fc.Arbitrary<unknown> {
    if (field.type === 'TYPE_MESSAGE') {
      const typeName = this.resolveName(field.typeName, scope);
      const nested = this.descriptor(typeName);
      if (nested?.options?.mapEntry) {
        const [key, value] = nested.field;
        return fc.dictionary(this.scalar(key!, typeName, depth) as fc.Arbitrary<string>, this.field(value!, typeName, depth + 1), { maxKeys: 3 });
      }
      const message = this.message(typeName, depth + 1);
      return field.label === 'LABEL_REPEATED' ? this.repeated(message) : message;
    }
    const value = this.scalar(field, scope, depth);
    return field.label === 'LABEL_REPEATED' ? this.repeated(value) : value;
  }

  /** Mostly short lists; now and then a long one of one repeated item (cheap to build, still thousands of entries to handle). */
  private repeated(item: fc.Arbitrary<unknown>): fc.Arbitrary<unknown[]> {
    const long = fc.tuple(item, fc.integer({ min: 200, max: 1000 })).map(([value, count]) => Array.from({ length: count }, () => value));
    return fc.oneof({ weight: 12, arbitrary: fc.array(item, { maxLength: 3 }) }, { weight: 1, arbitrary: long });
  }

  private scalar(field: FieldDescriptor, scope: string, depth: number): fc.Arbitrary<unknown> {
    switch (field.type) {
      case 'TYPE_STRING':
        return this.string(field.name);
      case 'TYPE_BOOL':
        return fc.boolean();
      case 'TYPE_INT32':
      case 'TYPE_SINT32':
      case 'TYPE_SFIXED32':
        return fc.oneof(fc.integer({ min: -5, max: 100 }), fc.constantFrom(INT32.min, INT32.max), fc.integer(INT32));
      case 'TYPE_UINT32':
      case 'TYPE_FIXED32':
        return fc.oneof(fc.integer({ min: 0, max: 100 }), fc.constantFrom(UINT32.max), fc.integer(UINT32));
      case 'TYPE_INT64':
      case 'TYPE_SINT64':
      case 'TYPE_SFIXED64':
        return fc.oneof(fc.integer({ min: -5, max: 100 }), fc.constantFrom(Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER, 2 ** 31, Date.now()), fc.maxSafeInteger());
      case 'TYPE_UINT64':
      case 'TYPE_FIXED64':
        return fc.oneof(fc.integer({ min: 0, max: 100 }), fc.constantFrom(Number.MAX_SAFE_INTEGER, 2 ** 32), fc.maxSafeNat());
      case 'TYPE_DOUBLE':
      case 'TYPE_FLOAT':
        return fc.oneof(fc.double({ noNaN: true }), fc.constantFrom(0, -1, 1e308, -1e308, 5e-324, Number.NaN, Number.POSITIVE_INFINITY));
      case 'TYPE_BYTES':
        return this.bytes(field.name, depth);
      case 'TYPE_ENUM':
        return this.enumValue(this.resolveName(field.typeName, scope));
      default:
        return fc.constant(undefined);
    }
  }

  private string(name: string): fc.Arbitrary<string> {
    const known = this.known[name] ?? [];
    const clean = known.length > 0 ? fc.oneof(fc.constantFrom(...known), KEY_SHAPED) : fc.oneof(KEY_SHAPED, fc.string({ maxLength: 20 }));
    // Long strings (up to 100,000 characters) rarely: a repeated field can hold a thousand copies.
    return fc.oneof(
      { weight: 12, arbitrary: clean },
      { weight: 6, arbitrary: withBadCharacter(clean) },
      { weight: 5, arbitrary: hostileUrlString },
      { weight: 1, arbitrary: hostileString },
    );
  }

  /** The gateway hop's `arguments` are JSON `{count, values}`: mostly that shape with hostile values, sometimes any bytes. */
  private bytes(name: string, depth: number): fc.Arbitrary<Buffer> {
    if (name === 'arguments' && depth === 0) {
      const json = fc
        .tuple(fc.integer({ min: 0, max: 6 }), fc.array(fc.oneof(hostileValue, fc.constantFrom(...Object.values(this.known).flat())), { maxLength: 6 }))
        .map(([count, values]) => Buffer.from(JSON.stringify({ count, values: Object.fromEntries(values.map((value, i) => [i, value])) })));
      return fc.oneof({ weight: 4, arbitrary: json }, { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes)) });
    }
    return fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes));
  }

  private enumValue(fullName: string): fc.Arbitrary<string | number> {
    const definition = this.definitions[fullName] as { type?: { value?: Array<{ name: string }> } } | undefined;
    const names = (definition?.type?.value ?? []).map((value) => value.name);
    // A number outside the enum is what a newer or hostile client sends: proto3 enums are open.
    return names.length > 0 ? fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...names) }, { weight: 1, arbitrary: fc.integer({ min: -3, max: 1000 }) }) : fc.integer();
  }

  /** A relative type name as protobuf resolves it: inside `scope` first, then each enclosing package. */
  private resolveName(typeName: string, scope: string): string {
    const name = typeName.replace(/^\./, '');
    const parts = scope.split('.');
    for (let i = parts.length; i >= 0; i--) {
      const candidate = [...parts.slice(0, i), name].join('.');
      if (this.descriptor(candidate) !== undefined || this.definitions[candidate] !== undefined) return candidate;
    }
    throw new Error(`cannot resolve ${typeName} from ${scope}`);
  }

  /** A message's descriptor, including types nested in another message (map entries). */
  private descriptor(fullName: string): MessageDescriptor | undefined {
    const top = this.definitions[fullName] as { format?: string; type?: MessageDescriptor } | undefined;
    if (top?.format?.includes('DescriptorProto') && !top.format.includes('Enum')) return top.type;
    const dot = fullName.lastIndexOf('.');
    if (dot < 0) return undefined;
    const parent = this.descriptor(fullName.slice(0, dot));
    return parent?.nestedType.find((nested) => nested.name === fullName.slice(dot + 1));
  }
}
