import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';

/**
 * Route schemas compiled when a route first needs them instead of when the server starts.
 *
 * Fastify compiles every route's validators (ajv) and response serializers (fast-json-stringify)
 * while it gets ready: for this REST API about 0.6-1 s of CPU at every start (a CPU profile of a
 * test server: most of its start), though a process usually calls a few of its routes. Here each
 * route part gets a stand-in that compiles the real function on its first call and then calls it:
 * the same ajv instance (with the app's options and shared schemas), the same fast-json-stringify
 * options, so the same answers; only when the compiling happens moves. A schema that does not
 * compile would then fail its route's first request instead of the start, so a test compiles
 * every route's schemas at once (compileRouteSchemas).
 */

/** An ajv validate function: Fastify calls it and reads `errors` after a `false`. */
type ValidateFunction = ((data: unknown) => unknown) & { errors?: unknown };

/** What the stand-ins of one app still have to compile, for compileRouteSchemas. */
const pendingOf = new WeakMap<FastifyInstance, Set<() => void>>();

export interface LazySchemas {
  /** Fastify's `ajv.onCreate`. */
  onAjvCreate: (ajv: unknown) => void;
  /** Fastify's `schemaController` option. */
  schemaController: NonNullable<FastifyServerOptions['schemaController']>;
  /** Called with the app once Fastify made it, for compileRouteSchemas. */
  register: (app: FastifyInstance) => void;
}

/** The options that make one Fastify app's route schemas compile on first use. */
export function lazySchemas(): LazySchemas {
  const pending = new Set<() => void>();
  const buildSerializer = SerializerSelector();
  return {
    // Ajv's own compile, wrapped on the instance the default compiler makes (Fastify's
    // `ajv.onCreate` hook), rather than a validator compiler of our own: Fastify treats a custom
    // one differently (it would no longer lower-case header schemas).
    onAjvCreate: (ajv) => {
      const instance = ajv as { compile: (schema: unknown, meta?: boolean) => ValidateFunction };
      const compile = instance.compile.bind(instance);
      instance.compile = (schema, meta) => {
        // A schema with an $id is registered under it when compiled: compiled now, as before.
        if (typeof schema === 'object' && schema !== null && '$id' in schema) return compile(schema, meta);
        let validate: ValidateFunction | undefined;
        const compileNow = () => {
          validate ??= compile(schema, meta);
          pending.delete(compileNow);
          return validate;
        };
        pending.add(compileNow);
        const standIn: ValidateFunction = (data) => {
          const real = validate ?? compileNow();
          const valid = real(data);
          standIn.errors = real.errors;
          return valid;
        };
        return standIn;
      };
    },
    schemaController: {
      compilersFactory: {
        // The default serializer compiler (Fastify's own choice), each route's function made on first use.
        buildSerializer: (externalSchemas, serializerOptions) => {
          const compileSerializer = buildSerializer(externalSchemas as Parameters<typeof buildSerializer>[0], serializerOptions as Parameters<typeof buildSerializer>[1]);
          return (route) => {
            let serialize: ((data: unknown) => string) | undefined;
            const compileNow = () => {
              serialize ??= compileSerializer(route);
              pending.delete(compileNow);
              return serialize;
            };
            pending.add(compileNow);
            return (data: unknown) => (serialize ?? compileNow())(data);
          };
        },
      },
    },
    register: (app) => pendingOf.set(app, pending),
  };
}

/**
 * Compiles every route schema of `app` not compiled yet (call it after `app.ready()`), throwing
 * what the first that fails to compile throws: the test that every schema compiles. Answers how
 * many it compiled.
 */
export function compileRouteSchemas(app: FastifyInstance): number {
  const pending = pendingOf.get(app);
  if (!pending) return 0;
  let compiled = 0;
  for (const compileNow of [...pending]) {
    compileNow();
    compiled += 1;
  }
  return compiled;
}
