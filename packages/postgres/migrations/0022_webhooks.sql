-- Issue 38, signed webhooks (docs/workflow.md "Webhooks"): an org's endpoints, and the outbox of
-- their deliveries. A delivery row is written in the transaction of the change-history entry it
-- announces (recordChange), so a rolled-back write announces nothing and a committed one is
-- always delivered; the delivery worker claims due rows with a lease (FOR UPDATE SKIP LOCKED).
-- Secrets are sealed (AES-256-GCM, SSO_SECRETS_KEY) like identity providers' client secrets; the
-- previous one signs too until previous_secret_expires_at_ms (rotation).
CREATE TABLE IF NOT EXISTS webhook_endpoints (
  id                             uuid PRIMARY KEY,
  org_id                         uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
  name                           text NOT NULL,
  url                            text NOT NULL,
  enabled                        boolean NOT NULL,
  event_types                    jsonb NOT NULL,
  project_ids                    jsonb NOT NULL,
  environment_ids                jsonb NOT NULL,
  format                         text NOT NULL CHECK (format IN ('standard', 'slack')),
  sealed_secret                  text NOT NULL,
  sealed_previous_secret         text,
  previous_secret_expires_at_ms  bigint,
  consecutive_failures           integer NOT NULL DEFAULT 0,
  disabled_reason                text,
  created_at_ms                  bigint NOT NULL,
  updated_at_ms                  bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS webhook_endpoints_by_org ON webhook_endpoints (org_id, created_at_ms);

-- One row per (entry, endpoint): its payload (the bytes signed), and the outcome of its last attempt
-- (the delivery log: status code, duration, error, the first 1 KiB of the answer).
CREATE TABLE IF NOT EXISTS webhook_deliveries (
  id                    uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  endpoint_id           uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  org_id                uuid NOT NULL,
  message_id            text NOT NULL,
  event_type            text NOT NULL,
  payload               text NOT NULL,
  status                text NOT NULL CHECK (status IN ('pending', 'sending', 'delivered', 'failed')),
  attempts              integer NOT NULL DEFAULT 0,
  next_attempt_at_ms    bigint NOT NULL,
  lease_expires_at_ms   bigint NOT NULL DEFAULT 0,
  last_status_code      integer,
  last_duration_ms      integer,
  last_error            text,
  last_response         text,
  created_at_ms         bigint NOT NULL,
  finished_at_ms        bigint
);
CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (next_attempt_at_ms) WHERE status IN ('pending', 'sending');
CREATE INDEX IF NOT EXISTS webhook_deliveries_by_endpoint ON webhook_deliveries (endpoint_id, created_at_ms DESC, id);
CREATE INDEX IF NOT EXISTS webhook_deliveries_by_age ON webhook_deliveries (created_at_ms);
