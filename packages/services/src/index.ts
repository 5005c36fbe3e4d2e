export * from './authorization.ts';
export * from './audit/audit-log-service.ts';
export * from './audit/audit-trail.ts';
export * from './audit/audit-retention.ts';
export * from './auth/auth-service.ts';
export * from './auth/bcrypt-password-hasher.ts';
export * from './auth/credential-verifier.ts';
export * from './auth/login-throttle.ts';
export * from './auth/secrets.ts';
export * from './auth/token-service.ts';
export * from './auth/session-registry.ts';
export * from './management/management-service.ts';
export * from './management/invitation-service.ts';
export * from './management/admin-grant-withdrawal.ts';
export * from './management/records.ts';
export * from './management/key-usage.ts';
export * from './flags/context-attribute-service.ts';
export * from './client/client-key-input.ts';
export * from './client/client-origins.ts';
export * from './client/client-metrics.ts';
export * from './client/client-rate-limiter.ts';
export * from './client/client-visibility.ts';
export * from './client/project-settings-input.ts';
export * from './scopes.ts';
export * from './flags/definition-events.ts';
export * from './flags/flag-service.ts';
export * from './segments/segment-service.ts';
export * from './evaluation/definition-snapshots.ts';
export * from './evaluation/evaluation-service.ts';
export * from './events/batching-writer.ts';
export * from './events/event-definition-cache.ts';
export * from './events/event-definition-service.ts';
export * from './events/event-service.ts';
export * from './events/event-validation.ts';
export * from './events/flag-variants.ts';
export * from './sync/definition-diff.ts';
export * from './sync/sync-hub.ts';
export * from './sync/sync-types.ts';
export {
  MAX_EXPERIMENT_DESCRIPTION,
  MAX_EXPERIMENT_NAME,
  MAX_METRIC_KEYS,
  MAX_TRANSITION_REASON,
  MAX_VARIANT_KEYS,
  type ExperimentBody,
  type TransitionBody,
} from './experiments/experiment-input.ts';
export * from './experiments/experiment-records.ts';
export * from './experiments/experiment-service.ts';
export * from './experiments/results-computer.ts';
export * from './experiments/stats-service.ts';
export * from './experiments/stats-worker.ts';
export * from './local-echo-notifier.ts';
export * from './maintenance/pruner.ts';
export * from './metrics.ts';
export * from './sso/auth-provider-service.ts';
export * from './sso/browser-login-cookie.ts';
export * from './sso/create-sso-services.ts';
export * from './sso/idp-metadata-source.ts';
export * from './sso/network-guard.ts';
export * from './sso/oidc-flow.ts';
export * from './sso/provider-input.ts';
export * from './sso/provider-records.ts';
export * from './sso/saml-flow.ts';
export * from './sso/saml-metadata.ts';
export * from './sso/secret-box.ts';
export * from './sso/sso-login-service.ts';
export * from './sso/sso-options.ts';
export * from './limits/ingest-rate-limiter.ts';
export * from './limits/row-quota.ts';
export * from './maintenance/ingest-retention.ts';
export * from './accounts/address-claim.ts';
export * from './accounts/address-verification.ts';
export * from './accounts/password-reset-service.ts';
export * from './mail/mail-outbox-service.ts';
export * from './mail/mail-settings.ts';
export * from './mail/mail-worker.ts';
export * from './mail/smtp-mail-sender.ts';
export * from './org-domains/dns-txt-resolver.ts';
export * from './org-domains/org-domain-service.ts';
export * from './client/context-signing-service.ts';
export * from './client/context-signing-keys.ts';
export * from './client/context-token-verifier.ts';
export * from './client/client-ingest-guard.ts';
export * from './api-tokens/api-token-service.ts';
export * from './api-tokens/api-token-records.ts';
export * from './api-tokens/api-token-input.ts';
export * from './auth/api-token-throttle.ts';
export * from './auth/api-token-uses.ts';
