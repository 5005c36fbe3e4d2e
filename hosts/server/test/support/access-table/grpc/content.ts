import { unique } from '../../rest-client.ts';
import { freshEventDefinition, freshExperiment, freshFlag } from '../fixtures.ts';
import { rpc, type GrpcDescriptor } from '../grpc-descriptor.ts';
import { KEY_ONLY, KEY_ONLY_AUTHENTICATED, PRODUCTION, PROJECT_P, STAGING, admin, editor, freshIfAllowed, noTokens, viewer } from '../rest-descriptor.ts';
import { rowRequest, sharedChangeRequest } from '../rest/change-requests.ts';
import type { RowContext } from '../rest-descriptor.ts';
import { freshRevertible, freshSchedule, YEAR_MS } from '../rest/schedules.ts';

/**
 * Flags, segments, events, experiments and stats over gRPC: the REST decisions (flags' definitions
 * on project P, their state and the rest in staging, event definitions in production; SDK traffic
 * never a token's; FlagSyncService an SDK key's only).
 */

const staging = ({ world }: RowContext) => world.environments.staging;
const production = ({ world }: RowContext) => world.environments.production;
const stringFlag = (key: string) => ({
  key,
  value_type: 'FLAG_VALUE_TYPE_STRING',
  variants: [{ key: 'on', value: { string_value: 'ON' } }, { key: 'off', value: { string_value: 'OFF' } }],
  off_variant_key: 'off',
});
/** A schedule of the shared flag of its own (a cancel ends it). */
const grpcSchedule = (c: RowContext) => freshSchedule(c.world, c.shared.flagKey);
const SYNC = (c: RowContext) => ({ message: { environment_id: staging(c), contexts: [] } });

export const contentRpcs: GrpcDescriptor[] = [
  rpc('svc.flags.v1.FlagService/GetFlag', viewer('environment'), STAGING, (c) => ({ message: { environment_id: staging(c), flag_key: c.shared.flagKey } })),
  rpc('svc.flags.v1.FlagService/GetFlagInsights', viewer('environment'), STAGING, (c) => ({ message: { environment_id: staging(c), flag_key: c.shared.flagKey } })),
  rpc('svc.flags.v1.FlagService/GetFlagLifecycle', viewer('project'), PROJECT_P, ({ world }) => ({ message: { project_id: world.projects.P } })),
  rpc('svc.flags.v1.FlagService/ListFlags', viewer('environment'), STAGING, (c) => ({ message: { environment_id: staging(c) } })),
  // Creating a flag defines it in project P (editor on the project, also through staging).
  rpc('svc.flags.v1.FlagService/MutateFlag', editor('project'), PROJECT_P, (c) => ({
    message: { environment_id: staging(c), kind: 'MUTATION_KIND_CREATE', flag: stringFlag(`acc-grpc-${unique()}`) },
  })),
  rpc('svc.flags.v1.FlagService/UpdateFlagHashing', editor('environment'), STAGING, async (c) => ({
    message: { environment_id: staging(c), flag_key: await freshIfAllowed(c, freshFlag, c.shared.flagKey), configs: [] },
  })),
  rpc('svc.flags.v1.FlagsAsCodeService/ExportFlags', viewer('project'), PROJECT_P, ({ world }) => ({ message: { project_id: world.projects.P } })),
  rpc('svc.flags.v1.FlagsAsCodeService/ImportFlags', editor('project'), PROJECT_P, ({ world }) => ({
    message: {
      project_id: world.projects.P,
      document_json: JSON.stringify({ format: 'switchyard.flags/v1', flags: [{ key: `acc-fac-grpc-${unique()}`, value_type: 'bool', variants: [{ key: 'on', value: true }] }] }),
    },
  })),
  rpc('svc.flags.v1.FlagService/GetFlagDefinitions', viewer('environment'), STAGING, (c) => ({ message: { environment_id: staging(c) } })),
  rpc('svc.flags.v1.FlagService/Sync', noTokens(viewer('environment')), STAGING, SYNC),
  // Client keys only: a person's bearer is authenticated, then refused ("this stream is for client keys").
  rpc('svc.flags.v1.FlagService/SyncForClientEvaluation', KEY_ONLY_AUTHENTICATED, STAGING, SYNC),
  // An SDK key's service (x-sdk-key) on the public sync port: a bearer is no key.
  rpc('svc.flags.v1.FlagSyncService/SyncDefinitions', KEY_ONLY, STAGING, SYNC),

  rpc('svc.segments.v1.SegmentationService/GetSegment', viewer('environment'), STAGING, (c) => ({ message: { environment_id: staging(c), segment_key: c.shared.segmentKey } })),
  rpc('svc.segments.v1.SegmentationService/ListSegments', viewer('environment'), STAGING, (c) => ({ message: { environment_id: staging(c) } })),
  rpc('svc.segments.v1.SegmentationService/EvaluateMembership', noTokens(viewer('environment')), STAGING, (c) => ({
    message: { environment_id: staging(c), segment_key: c.shared.segmentKey, context_key: 'u1', context_type: 'user' },
  })),
  rpc('svc.segments.v1.SegmentationService/MutateSegment', editor('environment'), STAGING, (c) => ({
    message: { environment_id: staging(c), kind: 'SEGMENT_MUTATION_KIND_CREATE', list_segment: { key: `acc-grpc-${unique()}`, context_type: 'user' } },
  })),

  // Environment compare and copy: production the target, staging the source (as on REST).
  rpc('svc.flags.v1.EnvironmentCopyService/CompareEnvironments', viewer('environment'), PRODUCTION, (c) => ({
    message: { target_environment_id: production(c), from_environment_id: staging(c) },
  })),
  rpc('svc.flags.v1.EnvironmentCopyService/CopyEnvironment', editor('environment'), PRODUCTION, async (c) => ({
    message: { target_environment_id: production(c), from_environment_id: staging(c), flag_keys: [await freshIfAllowed(c, freshFlag, c.shared.flagKey)], include: ['enabled'] },
  })),

  // Scheduled changes and revert: staging content (as on REST); each write row works on its own schedule or flag.
  rpc('svc.flags.v1.ScheduledChangeService/ListScheduledChanges', viewer('environment'), STAGING, (c) => ({ message: { environment_id: staging(c) } })),
  rpc('svc.flags.v1.ScheduledChangeService/GetScheduledChange', viewer('environment'), STAGING, async (c) => ({
    message: { environment_id: staging(c), flag_key: c.shared.flagKey, id: await grpcSchedule(c) },
  })),
  rpc('svc.flags.v1.ScheduledChangeService/CreateScheduledChange', editor('environment'), STAGING, (c) => ({
    message: { environment_id: staging(c), flag_key: c.shared.flagKey, execute_at_ms: Date.now() + YEAR_MS, operations_json: Buffer.from(JSON.stringify([{ op: 'set_enabled', enabled: true }])) },
  })),
  rpc('svc.flags.v1.ScheduledChangeService/UpdateScheduledChange', editor('environment'), STAGING, async (c) => ({
    message: { environment_id: staging(c), flag_key: c.shared.flagKey, id: await grpcSchedule(c), comment: 'edited' },
  })),
  rpc('svc.flags.v1.ScheduledChangeService/CancelScheduledChange', editor('environment'), STAGING, async (c) => ({
    message: { environment_id: staging(c), flag_key: c.shared.flagKey, id: await grpcSchedule(c) },
  })),
  rpc('svc.flags.v1.ScheduledChangeService/RevertFlag', editor('environment'), STAGING, async (c) => {
    const { key, entryId } = await freshRevertible(c.world);
    return { message: { environment_id: staging(c), flag_key: key, audit_entry_id: entryId } };
  }),

  rpc('svc.events.v1.EventService/Ingest', noTokens(editor('environment')), STAGING, (c) => ({
    message: { environment_id: staging(c), events: [{ metric_key: 'purchase', context_type: 'user', context_key: `u-${unique()}`, value: { bool_value: true } }] },
  })),
  rpc('svc.events.v1.EventIngestionService/IngestEvent', noTokens(editor('environment')), STAGING, (c) => ({
    message: { environment_id: staging(c), events: [{ metric_key: 'purchase', context_type: 'user', context_key: `u-${unique()}`, value: { bool_value: true } }] },
  })),
  rpc('svc.events.v1.EventService/CreateEventDefinition', editor('environment'), PRODUCTION, (c) => ({
    message: { environment_id: production(c), key: `acc_grpc_${unique()}`, value_type: 'METRIC_VALUE_TYPE_INT' },
  })),
  rpc('svc.events.v1.EventService/GetEventDefinition', viewer('environment'), PRODUCTION, (c) => ({ message: { environment_id: production(c), key: c.shared.eventKey } })),
  rpc('svc.events.v1.EventService/ListEventDefinitions', viewer('environment'), PRODUCTION, (c) => ({ message: { environment_id: production(c) } })),
  rpc('svc.events.v1.EventService/UpdateEventDefinition', editor('environment'), PRODUCTION, (c) => ({
    message: { environment_id: production(c), key: c.shared.eventKey, description: `d ${unique()}` },
  })),
  rpc('svc.events.v1.EventService/DeleteEventDefinition', editor('environment'), PRODUCTION, async (c) => ({
    message: { environment_id: production(c), key: await freshIfAllowed(c, freshEventDefinition, c.shared.eventKey) },
  })),

  rpc('svc.experiments.v1.ExperimentationService/CreateExperiment', editor('environment'), STAGING, (c) => ({
    message: { experiment: { environment_id: staging(c), name: `acc grpc ${unique()}`, flag_key: 'acc-checkout' } },
  })),
  rpc('svc.experiments.v1.ExperimentationService/UpdateExperiment', editor('environment'), STAGING, (c) => ({
    message: { experiment: { id: c.shared.experimentId, environment_id: staging(c), description: `d ${unique()}` }, update_mask: ['description'] },
  })),
  rpc('svc.experiments.v1.ExperimentationService/GetExperiment', viewer('environment'), STAGING, (c) => ({ message: { environment_id: staging(c), experiment_id: c.shared.experimentId } })),
  rpc('svc.experiments.v1.ExperimentationService/DeleteExperiment', editor('environment'), STAGING, async (c) => ({
    message: { environment_id: staging(c), experiment_id: await freshIfAllowed(c, freshExperiment, c.shared.experimentId) },
  })),
  rpc('svc.experiments.v1.ExperimentationService/ListExperiments', viewer('environment'), STAGING, (c) => ({ message: { environment_id: staging(c) } })),
  rpc('svc.experiments.v1.ExperimentationService/TransitionExperiment', editor('environment'), STAGING, async (c) => ({
    message: { environment_id: staging(c), experiment_id: await freshIfAllowed(c, freshExperiment, c.shared.experimentId), new_status: 'EXPERIMENT_STATUS_ACTIVE' },
  })),
  rpc('svc.experiments.v1.ExperimentationService/ListIterations', viewer('environment'), STAGING, (c) => ({ message: { environment_id: staging(c), experiment_id: c.shared.experimentId } })),
  rpc('svc.experiments.v1.ExperimentationService/GetResults', viewer('environment'), STAGING, (c) => ({ message: { environment_id: staging(c), experiment_id: c.shared.experimentId } })),
  rpc('svc.experiments.v1.ExperimentationService/EstimatePower', viewer('environment'), STAGING, (c) => ({ message: { environment_id: staging(c), mde: 0.05, mean: 10, variance: 4, exposures_per_day: 100 } })),
  rpc('svc.experiments.v1.ExperimentationService/GetExperimentPower', viewer('environment'), STAGING, (c) => ({ message: { environment_id: staging(c), experiment_id: c.shared.experimentId, mde: 0.05 } })),

  rpc('svc.stats.v1.StatsService/TriggerRecompute', editor('environment'), STAGING, (c) => ({ message: { experiment_id: c.shared.experimentId } })),
  rpc('svc.stats.v1.StatsService/GetJobStatus', viewer('environment'), STAGING, (c) => ({ message: { job_id: c.shared.jobId } })),
];

// Approval policies and change requests (as on REST: staging; see rest/change-requests.ts).
const crCall = (environment_id: string, change_request_id = '', body: unknown = {}) => ({
  message: { environment_id, change_request_id, body_json: Buffer.from(JSON.stringify(body)) },
});
const crRequest = async (c: RowContext, options: Parameters<typeof rowRequest>[1] = {}) => rowRequest(c, options);
export const changeRequestRpcs: GrpcDescriptor[] = [
  rpc('svc.flags.v1.ChangeRequestService/GetApprovalPolicy', viewer('environment'), STAGING, (c) => crCall(staging(c))),
  rpc('svc.flags.v1.ChangeRequestService/PutApprovalPolicy', admin('environment'), STAGING, async (c) => {
    await sharedChangeRequest(c.world);
    return crCall(staging(c), '', { allow_self_approval: true });
  }),
  rpc('svc.flags.v1.ChangeRequestService/ListChangeRequests', viewer('environment'), STAGING, (c) => crCall(staging(c))),
  rpc('svc.flags.v1.ChangeRequestService/CreateChangeRequest', editor('environment'), STAGING, (c) =>
    crCall(staging(c), '', { title: 'access', changes: [{ flag_key: c.shared.flagKey, operations: [{ op: 'set_enabled', enabled: true }] }] })),
  rpc('svc.flags.v1.ChangeRequestService/GetChangeRequest', viewer('environment'), STAGING, async (c) => crCall(staging(c), await sharedChangeRequest(c.world))),
  rpc('svc.flags.v1.ChangeRequestService/PreviewChangeRequest', viewer('environment'), STAGING, async (c) => crCall(staging(c), await sharedChangeRequest(c.world))),
  rpc('svc.flags.v1.ChangeRequestService/UpdateChangeRequest', editor('environment'), STAGING, async (c) => crCall(staging(c), await crRequest(c, { ownDraft: false }), { title: 'edited' })),
  rpc('svc.flags.v1.ChangeRequestService/SubmitChangeRequest', editor('environment'), STAGING, async (c) => crCall(staging(c), await crRequest(c, { ownDraft: true }))),
  rpc('svc.flags.v1.ChangeRequestService/CancelChangeRequest', editor('environment'), STAGING, async (c) => crCall(staging(c), await crRequest(c, { ownDraft: false }))),
  rpc('svc.flags.v1.ChangeRequestService/ReviewChangeRequest', noTokens(editor('environment')), STAGING, async (c) => crCall(staging(c), await crRequest(c), { verdict: 'approve' })),
  rpc('svc.flags.v1.ChangeRequestService/ApplyChangeRequest', editor('environment'), STAGING, async (c) => crCall(staging(c), await crRequest(c))),
];
