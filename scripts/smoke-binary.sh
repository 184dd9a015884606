#!/usr/bin/env bash
# Builds the self-contained binary, imports a fixture, serves it and reads it back over HTTP.
set -euo pipefail
cd "$(dirname "$0")/.."

bun run build
work=$(mktemp -d)
db="$work/smoke.db"
port=$((20000 + RANDOM % 20000))
cleanup() { [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

./dist/survey-service import test/fixtures/smoke.json --db "$db"
LOG_FORMAT=json ./dist/survey-service serve --port "$port" --db "$db" >"$work/server.log" 2>&1 &
pid=$!

for _ in $(seq 1 100); do
  curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done

body=$(curl -fs -H "Authorization: Bearer sk_test_smoke_key_0000000000" "http://127.0.0.1:$port/api/v1/surveys")
SMOKE_BODY="$body" bun -e '
  const body = JSON.parse(process.env.SMOKE_BODY ?? "")
  const survey = body.data?.[0]
  if (body.data.length !== 1 || survey.id !== "srv_smoke" || survey.responseCount !== 1 || survey.questionCount !== 1 || body.nextCursor !== null) {
    console.error("unexpected answer:", JSON.stringify(body)); process.exit(1)
  }
'
# The survey page and its assets are built into the binary.
page=$(curl -fs "http://127.0.0.1:$port/s/srv_smoke")
grep -q 'id="survey-form"' <<<"$page" || { echo "the survey page did not render" >&2; exit 1; }
asset=$(curl -fs "http://127.0.0.1:$port/assets/demo-dashboard.svg")
grep -q '<svg' <<<"$asset" || { echo "the demo asset is missing" >&2; exit 1; }
# The API reference page carries Scalar's script, embedded in the binary as a file.
docs=$(curl -fs "http://127.0.0.1:$port/docs")
grep -q 'Minified by jsDelivr' <<<"$docs" || { echo "the /docs page lacks its script" >&2; exit 1; }
echo "binary smoke test: ok"
