import type * as grpc from '@grpc/grpc-js';
import { invalidArgument } from '@switchyard/core';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticateScoped } from '../../auth/presented-credentials.ts';
import { presentedByMetadata } from '../../grpc/grpc-credentials.ts';
import { unary } from '../../grpc/grpc-errors.ts';
import { loadProto, lookup } from '../../grpc/proto.ts';
import type { Logger } from '../../logging.ts';

const ChangeRequestServiceDefinition = lookup<grpc.ServiceClientConstructor>(loadProto('svc/flags/v1/change_requests.proto'), 'svc.flags.v1.ChangeRequestService');

interface CallMessage {
  environment_id: string;
  change_request_id: string;
  body_json: Buffer;
}

/** Bodies are bounded as the REST routes' (1 MiB is far above 20 changes of 50 operations). */
const MAX_BODY_BYTES = 1024 * 1024;

function body(message: CallMessage): Record<string, unknown> {
  const bytes = message.body_json ?? Buffer.alloc(0);
  if (bytes.length === 0) return {};
  if (bytes.length > MAX_BODY_BYTES) throw invalidArgument(`body_json holds at most ${MAX_BODY_BYTES} bytes`, 'body_json');
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    throw invalidArgument('body_json must be UTF-8 JSON', 'body_json');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw invalidArgument('body_json must be a JSON object', 'body_json');
  return parsed as Record<string, unknown>;
}

const reply = (value: unknown) => ({ json: Buffer.from(JSON.stringify(value), 'utf8') });

function requestId(message: CallMessage): string {
  const id = message.change_request_id;
  if (typeof id !== 'string' || id === '' || id.length > 100) throw invalidArgument('change_request_id is required', 'change_request_id');
  return id;
}

/**
 * svc.flags.v1.ChangeRequestService (docs/workflow.md "Change requests and approvals"): the change-request use cases
 * over gRPC, bearer token as `authorization` metadata, the environment resolved for the caller;
 * every decision is the ChangeRequestService's, exactly as for the REST routes.
 */
export function addChangeRequestGrpcService(server: grpc.Server, deps: { services: GatewayServices; logger: Logger }): void {
  const { services, logger } = deps;
  const changeRequests = services.changeRequests;
  type Call = grpc.ServerUnaryCall<CallMessage, unknown>;
  const handle = (run: (principal: Parameters<typeof changeRequests.get>[0], scope: Parameters<typeof changeRequests.get>[1], message: CallMessage) => Promise<unknown>) =>
    unary(logger, async (call: Call) => {
      const { principal, scope } = await authenticateScoped(services.verifier, presentedByMetadata(call.metadata), 'bearer', (p) => changeRequests.scope(p, call.request.environment_id));
      return reply(await run(principal, scope, call.request));
    });

  server.addService(ChangeRequestServiceDefinition.service, {
    getApprovalPolicy: handle((p, s) => changeRequests.getPolicy(p, s)),
    putApprovalPolicy: handle((p, s, m) => changeRequests.putPolicy(p, s, body(m))),
    listChangeRequests: handle((p, s, m) => changeRequests.list(p, s, body(m))),
    getChangeRequest: handle((p, s, m) => changeRequests.get(p, s, requestId(m))),
    previewChangeRequest: handle((p, s, m) => changeRequests.preview(p, s, requestId(m))),
    createChangeRequest: handle((p, s, m) => changeRequests.create(p, s, body(m))),
    updateChangeRequest: handle((p, s, m) => changeRequests.update(p, s, requestId(m), body(m))),
    submitChangeRequest: handle((p, s, m) => changeRequests.submit(p, s, requestId(m))),
    cancelChangeRequest: handle((p, s, m) => changeRequests.cancel(p, s, requestId(m))),
    reviewChangeRequest: handle((p, s, m) => changeRequests.review(p, s, requestId(m), body(m))),
    applyChangeRequest: handle((p, s, m) => changeRequests.apply(p, s, requestId(m), body(m))),
  });
}
