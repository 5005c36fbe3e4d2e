import { adminDescriptors } from './rest/admin.ts';
import { authDescriptors } from './rest/auth.ts';
import { environmentContentDescriptors } from './rest/environment-content.ts';
import { environmentCopyDescriptors } from './rest/environment-copy.ts';
import { changeRequestDescriptors } from './rest/change-requests.ts';
import { flagDescriptors } from './rest/flags.ts';
import { managementDescriptors } from './rest/management.ts';
import { sdkTrafficDescriptors } from './rest/sdk-traffic.ts';
import { scheduleDescriptors } from './rest/schedules.ts';
import type { Shared } from './fixtures.ts';
import { expected } from './rule.ts';
import type { RestDescriptor } from './rest-descriptor.ts';
import type { Cell } from './run-rows.ts';
import type { World } from './world.ts';

/** Every hand-written REST descriptor; the table fails for an OpenAPI operation missing here. */
export const REST_DESCRIPTORS: RestDescriptor[] = [
  ...authDescriptors,
  ...adminDescriptors,
  ...managementDescriptors,
  ...flagDescriptors,
  ...environmentContentDescriptors,
  ...environmentCopyDescriptors,
  ...changeRequestDescriptors,
  ...scheduleDescriptors,
  ...sdkTrafficDescriptors,
];

/** A descriptor as a table cell: the request built for the principal, sent with its bearer. */
export function restCell(descriptor: RestDescriptor, world: World, shared: Shared): Cell {
  const [method, template] = descriptor.operation.split(' ') as [string, string];
  return {
    operation: descriptor.operation,
    access: descriptor.access,
    target: descriptor.target,
    last: descriptor.last,
    checksPassword: descriptor.checksPassword,
    want: (verdict) => String(verdict.allowed ? descriptor.status : verdict.status),
    async call(principal) {
      const allowed = expected(descriptor.access, principal.caller, descriptor.target).allowed;
      const request = await descriptor.request({ world, shared, principal, allowed });
      if (!request.path.startsWith(template.replace(/\{.*$/, '').replace(/\?.*$/, ''))) throw new Error(`${descriptor.operation}: request path ${request.path} is not this operation's`);
      const bearer = 'bearer' in request ? request.bearer : principal.bearer;
      const response = await world.client.request(method, request.path, {
        ...(bearer === undefined ? {} : { token: bearer }),
        ...(request.body === undefined ? {} : { body: request.body }),
        ...(request.headers ? { headers: request.headers } : {}),
      });
      return { got: String(response.status), detail: response.text };
    },
  };
}
