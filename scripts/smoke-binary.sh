#!/usr/bin/env bash
# Builds the self-contained binary, imports a fixture, serves it and reads it back over HTTP.
set -euo pipefail
cd "$(dirname "$0")/.."

bun run build
work=$(mktemp -d)
db="$work/smoke.db"
cleanup() { [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

./dist/survey-service import test/fixtures/smoke.json --db "$db"

# Serves on a random port until /healthz answers (at most 60 s), or gives up when the process ends:
# another program may hold the port, so up to three ports are tried. The server's log is shown on failure.
up=false
for _attempt in 1 2 3; do
  port=$((20000 + RANDOM % 20000))
  # A copy of the binary, run outside the source tree: it needs none of its files.
  cp dist/survey-service "$work/survey-service"
  (cd "$work" && LOG_FORMAT=json exec ./survey-service serve --port "$port" --db "$db") >"$work/server.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do
    if curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; then up=true; break; fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  [ "$up" = true ] && break
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  echo "the server did not answer on port $port; its log:" >&2
  cat "$work/server.log" >&2
done
[ "$up" = true ] || { echo "binary smoke test: the server never answered" >&2; exit 1; }

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
# The console: its page under a strict CSP, and its script and style, carried in the binary.
console_headers=$(curl -fsS -D - -o "$work/console.html" "http://127.0.0.1:$port/console")
grep -qi "^content-security-policy: default-src 'none'; script-src 'self';.*frame-ancestors 'none'" <<<"$console_headers" ||
  { echo "the console page lacks its CSP" >&2; exit 1; }
script=$(grep -o '/console/console.js?v=[0-9a-f]*' "$work/console.html") || { echo "the console page names no script" >&2; exit 1; }
curl -fs "http://127.0.0.1:$port$script" | grep -q 'survey-console-key' || { echo "the console script is missing" >&2; exit 1; }
curl -fs "http://127.0.0.1:$port/console/console.css" | grep -q 'focus-visible' || { echo "the console style is missing" >&2; exit 1; }
# Opened in Chromium, the console's script runs under that CSP and renders the sign-in form.
if command -v chromium >/dev/null 2>&1; then
  timeout 60 chromium --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking --disable-component-update --user-data-dir="$work/chromium" \
    --virtual-time-budget=5000 --dump-dom "http://127.0.0.1:$port/console" 2>/dev/null | grep -q 'id="api-key"' ||
    { echo "the console did not render in Chromium" >&2; exit 1; }
fi
echo "binary smoke test: ok"
