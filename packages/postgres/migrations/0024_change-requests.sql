-- Issue 38, change requests and approvals (docs/workflow.md "Change requests and approvals"): an environment's approval
-- policy (absent row: no approvals required), the change requests of an environment (their changes
-- as JSON with the versions they were made against, and the hash reviews are given on), and the
-- reviews. Every row is scoped by org, project and environment, and goes with its environment.
CREATE TABLE IF NOT EXISTS approval_policies (
  environment_id       uuid PRIMARY KEY,
  org_id               uuid NOT NULL,
  project_id           uuid NOT NULL,
  required             boolean NOT NULL DEFAULT false,
  min_approvals        integer NOT NULL DEFAULT 1 CHECK (min_approvals BETWEEN 1 AND 5),
  allow_self_approval  boolean NOT NULL DEFAULT false,
  reset_on_change      boolean NOT NULL DEFAULT true,
  kill_switch_exempt   boolean NOT NULL DEFAULT false,
  updated_at_ms        bigint NOT NULL,
  FOREIGN KEY (environment_id, project_id, org_id) REFERENCES environments (id, project_id, org_id) ON DELETE CASCADE
);

CREATE TABLE IF NOT EXISTS change_requests (
  id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id           uuid NOT NULL,
  project_id       uuid NOT NULL,
  environment_id   uuid NOT NULL,
  title            text NOT NULL,
  description      text NOT NULL DEFAULT '',
  changes          jsonb NOT NULL,
  content_hash     text NOT NULL,
  status           text NOT NULL CHECK (status IN ('draft', 'open', 'applied', 'cancelled', 'conflicted', 'scheduled')),
  author_id        uuid NOT NULL,
  author_email     text,
  revision         integer NOT NULL DEFAULT 1,
  conflict         text,
  applied_by       jsonb,
  created_at_ms    bigint NOT NULL,
  updated_at_ms    bigint NOT NULL,
  submitted_at_ms  bigint,
  applied_at_ms    bigint,
  FOREIGN KEY (environment_id, project_id, org_id) REFERENCES environments (id, project_id, org_id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS change_requests_by_environment ON change_requests (environment_id, created_at_ms DESC);

CREATE TABLE IF NOT EXISTS change_request_reviews (
  id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  change_request_id  uuid NOT NULL REFERENCES change_requests (id) ON DELETE CASCADE,
  reviewer_id        uuid NOT NULL,
  reviewer_email     text,
  verdict            text NOT NULL CHECK (verdict IN ('approve', 'reject', 'comment')),
  comment            text,
  content_hash       text NOT NULL,
  at_ms              bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS change_request_reviews_by_request ON change_request_reviews (change_request_id, at_ms);
