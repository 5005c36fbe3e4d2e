import { notFound, type EnvironmentScope, type FlagOperation, type Principal, type Repositories } from '@switchyard/core';
import { revertibleEntry, revertOperations, type RevertRequests } from '../schedules/scheduled-change-service.ts';
import type { ChangeRequestRecord, ChangeRequestService } from './change-request-service.ts';

/** The request's title, within MAX_TITLE_LENGTH (a flag key is at most 128 characters, an entry id 100). */
const titleOf = (flagKey: string, entryId: string): string => `Revert ${flagKey} to before ${entryId}`.slice(0, 200);

/**
 * A revert in an environment whose approval policy requires approval (docs/workflow.md "Revert"):
 * instead of writing, it opens a change request (submitted: `open`) holding the operations that
 * put the flag's environment configuration back to the entry's `before` state — `set_rules` at the
 * flag's current version (an edit committed before the apply makes the request conflicted rather
 * than silently replaced), `set_enabled`, `set_off_variant` and `set_prerequisites`. It goes
 * through ChangeRequestService.create (createNoting): the same rights (flag.write), checks and caps
 * as a request made by hand, and its `change_request.create` entry names the entry reverted.
 */
export class RevertRequestOpener implements RevertRequests {
  constructor(
    private readonly repos: Repositories,
    private readonly changeRequests: ChangeRequestService,
  ) {}

  async openRevertRequest(principal: Principal, scope: EnvironmentScope, flagKey: string, entryId: string): Promise<ChangeRequestRecord> {
    const entry = await revertibleEntry(this.repos, scope, flagKey, entryId);
    const flag = await this.repos.flags.get(scope, flagKey);
    if (!flag) throw notFound('flag', flagKey);
    const operations: FlagOperation[] = revertOperations(entry.before).map((operation) =>
      operation.op === 'set_rules' ? { op: 'set_rules', rules: operation.rules, version: flag.version } : operation,
    );
    const at = new Date(entry.atMs).toISOString();
    const description =
      `Puts flag '${flagKey}' in this environment back to its state before change-history entry ${entry.id} ` +
      `(${entry.action}, ${at}): enabled, the off variant, the rules and the prerequisites.`;
    return this.changeRequests.createNoting(
      principal,
      scope,
      { title: titleOf(flagKey, entry.id), description, changes: [{ flag_key: flagKey, version: flag.version, operations }], submit: true },
      { reverts_entry_id: entry.id, reverts_action: entry.action },
    );
  }
}
