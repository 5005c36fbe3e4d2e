#!/usr/bin/env bash
# A new organisation, from its creation by the system administrator to an SDK key, with curl.
# (The first `npm start` already made one, "Default", with a project, environments and a key:
# docs/first-run.md. This script is for the next ones.) Needs the server on localhost:8080 and the
# system administrator's credentials: on the embedded development database, system@localhost and
# the password kept in .data/system-admin-password (or ADMIN_EMAIL and ADMIN_PASSWORD).
#
#   bash examples/admin-quickstart.sh
set -euo pipefail
BASE=${BASE:-http://localhost:8080}
ADMIN_EMAIL=${ADMIN_EMAIL:-system@localhost}
ADMIN_PASSWORD=${ADMIN_PASSWORD:-$(cat .data/system-admin-password)}
json() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s)[process.argv[1]]))' "$1"; }
post() { curl -sf -X POST "$BASE$1" -H 'content-type: application/json' ${3:+-H "authorization: Bearer $3"} -d "$2"; }

# 1. The system administrator creates an organisation and its first admin.
ROOT=$(post /v1/auth/login "{\"email\":\"$ADMIN_EMAIL\",\"password\":\"$ADMIN_PASSWORD\"}" | json token)
ORG=$(post /v1/admin/orgs '{"name":"acme"}' "$ROOT" | json org_id)
post "/v1/admin/orgs/$ORG/users" '{"email":"owner@acme.test","display_name":"Owner","password":"owner-password","org_role":"org_admin"}' "$ROOT" >/dev/null

# 2. The org admin creates a project, an environment and an SDK key (shown once).
OWNER=$(post /v1/auth/login '{"email":"owner@acme.test","password":"owner-password"}' | json token)
PROJECT=$(post "/v1/management/orgs/$ORG/projects" '{"name":"web"}' "$OWNER" | json project_id)
ENV=$(post "/v1/management/projects/$PROJECT/environments" '{"name":"production"}' "$OWNER" | json environment_id)
KEY=$(post "/v1/management/environments/$ENV/sdk-keys" '{}' "$OWNER" | json raw_key)
echo "org $ORG  project $PROJECT  environment $ENV"
echo "SDK key (store it now, it is not shown again): $KEY"
