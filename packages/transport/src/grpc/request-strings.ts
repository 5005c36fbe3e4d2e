import * as grpc from '@grpc/grpc-js';
import { findUnstorableString } from '../input/storable-strings.ts';

/**
 * Every service added to `server` from now on refuses a request message holding a string
 * PostgreSQL cannot store as sent (U+0000, an unpaired surrogate: packages/transport/src/input/
 * storable-strings.ts) with INVALID_ARGUMENT naming the field, e.g. `flag.variants[0].key must not
 * contain U+0000 (NUL)` (docs/security.md "Input rules"), before its handler runs. Installed once
 * per server by startGrpcServer, so the internal services, the gateway hop and the public sync
 * service all apply it and no handler needs a check of its own. Every RPC of this API takes one
 * request message (unary or server-streaming); a client-streaming handler is left as it is.
 */
export function refuseUnstorableStrings(server: grpc.Server): void {
  const addService = server.addService.bind(server);
  server.addService = (definition, implementation) => addService(definition, guardService(definition, implementation));
}

function guardService(definition: grpc.ServiceDefinition, implementation: grpc.UntypedServiceImplementation): grpc.UntypedServiceImplementation {
  const guarded: grpc.UntypedServiceImplementation = { ...implementation };
  for (const [name, attributes] of Object.entries(definition)) {
    // Looked up as grpc-js does: by the lower-camel name, then by the name in the .proto.
    const key = implementation[name] === undefined && typeof attributes.originalName === 'string' ? attributes.originalName : name;
    const handler = implementation[key];
    if (typeof handler !== 'function' || attributes.requestStream) continue;
    guarded[key] = attributes.responseStream ? guardStreaming(handler) : guardUnary(handler);
  }
  return guarded;
}

/** The refusal of a request message, or undefined when every string in it can be stored. */
function refusal(request: unknown): Partial<grpc.StatusObject> | undefined {
  const finding = findUnstorableString(request, 'request');
  if (finding === undefined) return undefined;
  // Fields are named as in the .proto, without the `request.` root.
  const field = finding.field.replace(/^request\.?/, '') || 'request';
  return { code: grpc.status.INVALID_ARGUMENT, details: `${field} ${finding.problem}` };
}

function guardUnary(handler: grpc.UntypedHandleCall): grpc.UntypedHandleCall {
  const handle = handler as (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => void;
  return ((call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
    const refused = refusal(call.request);
    if (refused === undefined) handle(call, callback);
    else callback(refused);
  }) as grpc.UntypedHandleCall;
}

function guardStreaming(handler: grpc.UntypedHandleCall): grpc.UntypedHandleCall {
  const handle = handler as (call: grpc.ServerWritableStream<unknown, unknown>) => void;
  return ((call: grpc.ServerWritableStream<unknown, unknown>) => {
    const refused = refusal(call.request);
    if (refused === undefined) handle(call);
    else call.emit('error', refused);
  }) as grpc.UntypedHandleCall;
}
