#!/usr/bin/env bash
# Turns a flag on (or off) in one environment from a CI job, with an API token (docs/access.md
# "API tokens"). An org admin creates the token once, best limited to that environment with the
# editor role:
#
#   POST /v1/management/orgs/{org_id}/api-tokens {"name":"ci","role":"editor","scope":{"environment_ids":["<env>"]}}
#
# and stores its `token` (shown once) as the CI secret SWITCHYARD_TOKEN. Then:
#
#   SWITCHYARD_URL=https://flags.example.com SWITCHYARD_TOKEN=swy_... \
#     bash examples/ci-toggle.sh <environment_id> <flag_key> [on|off]
#
# Exits 0 once the flag is in that state; otherwise prints the server's {error, code} and exits 1.
set -euo pipefail
: "${SWITCHYARD_URL:?set SWITCHYARD_URL, e.g. https://flags.example.com}"
: "${SWITCHYARD_TOKEN:?set SWITCHYARD_TOKEN to an API token (swy_...)}"
usage="usage: ci-toggle.sh <environment_id> <flag_key> [on|off]"
ENVIRONMENT_ID=${1:?$usage}
FLAG_KEY=${2:?$usage}
case "${3:-on}" in
  on) ENABLED=true ;;
  off) ENABLED=false ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
# Both go into the URL path as they are: refuse anything that would need escaping.
[[ $ENVIRONMENT_ID =~ ^[A-Za-z0-9-]+$ ]] || { echo "not an environment id: $ENVIRONMENT_ID" >&2; exit 2; }
[[ $FLAG_KEY =~ ^[A-Za-z0-9._-]+$ ]] || { echo "not a flag key: $FLAG_KEY" >&2; exit 2; }

# The token goes in a header read from a file descriptor, never on curl's command line (visible to
# every user of the machine in the process list).
response=$(curl -sS -X PUT "${SWITCHYARD_URL%/}/v1/environments/$ENVIRONMENT_ID/flags/$FLAG_KEY" \
  -H @<(printf 'authorization: Bearer %s\n' "$SWITCHYARD_TOKEN") \
  -H 'content-type: application/json' \
  -d "{\"enabled\":$ENABLED}" \
  -w '\n%{http_code}')
status=${response##*$'\n'}
body=${response%$'\n'*}
if [[ $status == 200 ]]; then
  echo "flag $FLAG_KEY is ${3:-on} in environment $ENVIRONMENT_ID"
else
  echo "refused ($status): $body" >&2
  exit 1
fi
