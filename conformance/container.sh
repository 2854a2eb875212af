#!/usr/bin/env bash
# The container image and the compose stack, end to end, with podman:
#
#   conformance/container.sh            # writes conformance/out/container.tap
#
# 1. builds the image (make image: the static binary, then Containerfile),
#    checks what is in it (non-root, health check, LibreOffice, poppler,
#    tesseract with English);
# 2. runs it alone on its SQLite default: healthy by its own HEALTHCHECK,
#    an API key made with `faxhub admin demo` inside it, an RTF (converted
#    by the image's LibreOffice) sent and delivered, a clean stop on SIGTERM;
# 3. starts compose.yaml (PostgreSQL, three replicas each migrating at
#    start, nginx in front) and sends faxes through the front until each replica has
#    served one send, every one delivered: the replica is named by its own
#    log line for the send's X-Request-Id; every migration recorded once;
# 4. tears everything down (containers, volumes, network).
#
# It never skips: no podman, or a podman that cannot run a container, is a
# failure (`make deps` installs it as root). Podman here needs the settings
# of conformance/container/containers.conf (CONTAINERS_CONF, unless set).
# Images come from Debian's archive (conformance/container/debian-base.sh)
# unless FAXHUB_DEBIAN_IMAGE names a base image to use.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/conformance/out
TAP=$OUT/container.tap
mkdir -p "$OUT"
: >"$TAP"
export CONTAINERS_CONF=${CONTAINERS_CONF:-$ROOT/conformance/container/containers.conf}
# Images keep their HEALTHCHECK (podman-compose's builds included).
export BUILDAH_FORMAT=docker
GO=${GO:-go}
IMAGE=localhost/faxhub:check
PROJECT=faxhubcheck
RUN_ID=$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
SINGLE=faxhub-check-$RUN_ID
LOG=$OUT/container.log
: >"$LOG"
n=0
failed=0
started=$(date +%s)

ok() { n=$((n + 1)); echo "ok $n - $1" >>"$TAP"; echo "container: ok - $1"; }
not_ok() { # name [detail]
  n=$((n + 1)); failed=1
  echo "not ok $n - $1" >>"$TAP"
  [ -n "${2:-}" ] && printf '%s\n' "$2" | tail -n 30 | sed 's/^/# /' >>"$TAP"
  echo "container: not ok - $1" >&2
}
note() { echo "# $1" >>"$TAP"; echo "container: $1"; }
finish() {
  echo "1..$n" >>"$TAP"
  note "total $(($(date +%s) - started)) s"
  exit "$failed"
}
# A step that cannot go on ends the run (the plan line still closes the TAP).
fatal() { not_ok "$@"; cleanup; finish; }

container() { podman ps -a -q --filter "label=io.podman.compose.project=$PROJECT" --filter "label=com.docker.compose.service=$1" | head -n1; }
compose() { podman-compose -p "$PROJECT" -f "$ROOT/compose.yaml" "$@" >>"$LOG" 2>&1; }
cleanup() {
  podman rm -f -t 5 "$SINGLE" >/dev/null 2>&1 || true
  podman volume rm -f "$SINGLE-data" >/dev/null 2>&1 || true
  if [ -n "${COMPOSE_UP:-}" ]; then
    local s c
    for s in db faxhub-a faxhub-b faxhub-c proxy; do # kept for a failure's diagnosis
      c=$(container "$s")
      [ -n "$c" ] && { echo "== logs of $s"; podman logs --tail 200 "$c" 2>&1; } >>"$LOG"
    done
    compose down -v -t 10 || true
    # podman-compose 1.0.3's down leaves the named volumes and the network.
    podman volume ls -q --filter "label=io.podman.compose.project=$PROJECT" | xargs -r podman volume rm -f >/dev/null 2>&1 || true
    podman network rm -f "${PROJECT}_faxhub" >/dev/null 2>&1 || true
  fi
}
trap 'cleanup' EXIT

# until SECONDS CMD…: runs CMD once a second until it succeeds.
until_ok() {
  local deadline=$(($(date +%s) + $1)); shift
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || return 1
    sleep 1
  done
}

# --- podman itself -------------------------------------------------------
for c in podman podman-compose curl; do
  command -v "$c" >/dev/null || fatal "podman runs containers" "$c is missing: run make deps as root (podman, runc, podman-compose)"
done
t0=$(date +%s)
if [ -n "${FAXHUB_DEBIAN_IMAGE:-}" ]; then
  BASE=$FAXHUB_DEBIAN_IMAGE
else
  BASE=localhost/faxhub-debian:bookworm
  out=$(./conformance/container/debian-base.sh "$BASE" 2>&1) || fatal "Debian base image from Debian's archive" "$out"
  [ -n "$out" ] && note "$out ($(($(date +%s) - t0)) s)"
fi
out=$(podman run --rm "$BASE" true 2>&1) || fatal "podman runs containers" "$out"
ok "podman runs containers ($(podman --version), runtime $(podman info --format '{{.Host.OCIRuntime.Name}}' 2>/dev/null))"

# --- the image -----------------------------------------------------------
t0=$(date +%s)
out=$(make -s image GO="$GO" IMAGE="$IMAGE" DEBIAN_IMAGE="$BASE" 2>&1) || fatal "the image builds (make image)" "$out"
size=$(podman image inspect --format '{{.Size}}' "$IMAGE")
ok "the image builds in $(($(date +%s) - t0)) s: $IMAGE, $((size / 1000000)) MB"

user=$(podman image inspect --format '{{.Config.User}}' "$IMAGE")
health=$(podman image inspect --format '{{json .Config.Healthcheck}}' "$IMAGE")
case "$user:$health" in
  root:* | 0:* | :* | *:null | *:) not_ok "the image runs as a non-root user and has a HEALTHCHECK" "user=$user healthcheck=$health" ;;
  *) ok "the image runs as $user and checks /readyz" ;;
esac
out=$(podman run --rm --entrypoint sh "$IMAGE" -c '
  set -e; id -u; for t in soffice pdftoppm pdftotext tesseract tini curl; do command -v $t; done
  tesseract --list-langs 2>&1 | grep -qx eng; soffice --version' 2>&1)
if [ $? -eq 0 ] && [ "$(printf '%s\n' "$out" | head -n1)" != 0 ]; then
  ok "LibreOffice, poppler, tesseract (eng) are in the image ($(printf '%s\n' "$out" | tail -n1 | cut -c1-40))"
else
  not_ok "LibreOffice, poppler, tesseract (eng) are in the image" "$out"
fi

# --- one container on SQLite ---------------------------------------------
free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})' 2>/dev/null \
  || python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }

# send_fax BASE KEY FILE TYPE TO RID: upload, PUT, send (X-Request-Id RID);
# prints the fax id.
send_fax() {
  local api=$1/api/v1 key=$2 up url token fax
  up=$(curl -fsS -X POST "$api/uploads" -H "Authorization: Bearer $key") || return 1
  url=$(printf '%s' "$up" | sed -n 's/.*"uploadUrl":"\([^"]*\)".*/\1/p')
  token=$(printf '%s' "$up" | sed -n 's/.*"uploadToken":"\([^"]*\)".*/\1/p')
  curl -fsS -X PUT -H "Content-Type: $4" --data-binary "@$3" "$url" >/dev/null || return 1
  fax=$(curl -fsS -X POST "$api/faxes" -H "Authorization: Bearer $key" -H "Idempotency-Key: $6" -H "X-Request-Id: $6" \
    -H 'Content-Type: application/json' -d "{\"to\":\"$5\",\"uploadToken\":\"$token\"}") || return 1
  printf '%s' "$fax" | sed -n 's/^{"id":"\(fax_[^"]*\)".*/\1/p'
}
fax_status() { curl -fsS "$1/api/v1/faxes/$3" -H "Authorization: Bearer $2" | sed -n 's/^{[^{]*"status":"\([a-z_]*\)".*/\1/p'; }
delivered() { [ "$(fax_status "$@")" = delivered ]; }
demo_key() { podman exec "$1" faxhub admin demo --log-level error | sed -n 's/^test API key (shown once): //p'; }

PORT=$(free_port)
BASE_URL=http://localhost:$PORT
t0=$(date +%s)
out=$(podman run -d --name "$SINGLE" -p "127.0.0.1:$PORT:8080" -v "$SINGLE-data:/var/lib/faxhub" \
  -e FAXHUB_BASE_URL="$BASE_URL" -e FAXHUB_SIM_TIMESCALE=0 "$IMAGE" 2>&1) || fatal "the image starts on SQLite" "$out"
# The image's own HEALTHCHECK (curl of /readyz inside the container) decides.
if until_ok 120 podman healthcheck run "$SINGLE"; then
  ok "healthy (its HEALTHCHECK on /readyz) $(($(date +%s) - t0)) s after start, on SQLite in its volume"
else
  fatal "the container becomes healthy" "$(podman logs --tail 30 "$SINGLE" 2>&1)"
fi

KEY=$(demo_key "$SINGLE")
[ -n "$KEY" ] || fatal "faxhub admin demo inside the container makes a test API key" "$(podman exec "$SINGLE" faxhub admin demo 2>&1)"
RTF=$(mktemp "${TMPDIR:-/tmp}/faxhub-check.XXXXXX.rtf")
printf '{\\rtf1\\ansi{\\fonttbl{\\f0 DejaVu Sans;}}\\f0\\fs28 faxhub container check %s\\par}\n' "$RUN_ID" >"$RTF"
t0=$(date +%s)
FAX=$(send_fax "$BASE_URL" "$KEY" "$RTF" application/rtf +12125550100 "check-$RUN_ID-single")
rm -f "$RTF"
if [ -n "$FAX" ] && until_ok 60 delivered "$BASE_URL" "$KEY" "$FAX"; then
  ok "an RTF (LibreOffice in the image) sent with an admin-made API key is delivered: $FAX in $(($(date +%s) - t0)) s"
else
  not_ok "an RTF sent through the container is delivered" "fax=${FAX:-none} status=$(fax_status "$BASE_URL" "$KEY" "${FAX:-x}" 2>&1)
$(podman logs --tail 20 "$SINGLE" 2>&1)"
fi
t0=$(date +%s)
podman stop -t 30 "$SINGLE" >/dev/null 2>&1
code=$(podman inspect --format '{{.State.ExitCode}}' "$SINGLE")
if [ "$code" = 0 ]; then
  ok "podman stop ends it cleanly (SIGTERM through tini, exit 0) in $(($(date +%s) - t0)) s"
else
  not_ok "podman stop ends it cleanly" "exit code $code; $(podman logs --tail 10 "$SINGLE" 2>&1)"
fi
podman rm -f "$SINGLE" >/dev/null 2>&1; podman volume rm -f "$SINGLE-data" >/dev/null 2>&1

# --- the compose stack ---------------------------------------------------
PORT=$(free_port)
export FAXHUB_IMAGE=$IMAGE FAXHUB_DEBIAN_IMAGE=$BASE FAXHUB_PORT=127.0.0.1:$PORT FAXHUB_BASE_URL=http://localhost:$PORT \
  FAXHUB_SIM_TIMESCALE=0 FAXHUB_DB_PASSWORD=check-$RUN_ID
FRONT=http://localhost:$PORT
t0=$(date +%s)
COMPOSE_UP=1
compose build || fatal "compose.yaml's PostgreSQL and nginx images build" "$(tail -n 30 "$LOG")"
ok "compose.yaml's PostgreSQL and nginx images build ($(($(date +%s) - t0)) s)"
t0=$(date +%s)
compose up -d || fatal "podman-compose up starts compose.yaml" "$(tail -n 30 "$LOG")"
ready_all() { # every replica healthy, and the front answering /readyz
  local s
  for s in faxhub-a faxhub-b faxhub-c; do podman healthcheck run "$(container $s)" || return 1; done
  curl -fsS "$FRONT/readyz"
}
if until_ok 180 ready_all; then
  ok "PostgreSQL, three replicas (each migrating at start on its empty database) and nginx are up, every replica healthy, in $(($(date +%s) - t0)) s"
else
  fatal "the compose stack becomes ready" "$(for s in db faxhub-a faxhub-b faxhub-c proxy; do echo "== $s"; podman logs --tail 5 "$(container $s)" 2>&1; done)"
fi

# Every migration recorded once although each replica migrates at start
# (podman-compose starts them seconds apart; cmd/faxhub TestReplicas races
# three at the same moment).
dups=$(podman exec -e PGPASSWORD="$FAXHUB_DB_PASSWORD" "$(container db)" psql -h 127.0.0.1 -U faxhub -d faxhub -tA \
  -c "SELECT version_id FROM goose_db_version GROUP BY version_id HAVING count(*) > 1" 2>&1)
versions=$(podman exec -e PGPASSWORD="$FAXHUB_DB_PASSWORD" "$(container db)" psql -h 127.0.0.1 -U faxhub -d faxhub -tA \
  -c "SELECT count(*) FROM goose_db_version WHERE version_id > 0" 2>&1)
if [ -z "$dups" ] && [ "${versions:-0}" -gt 0 ] 2>/dev/null; then
  ok "every migration recorded once ($versions) with three replicas migrating at start"
else
  not_ok "every migration recorded once" "duplicates: $dups; versions: $versions"
fi

KEY=$(demo_key "$(container faxhub-a)")
[ -n "$KEY" ] || fatal "faxhub admin demo in a replica makes a test API key" "$(podman exec "$(container faxhub-a)" faxhub admin demo 2>&1)"
# served_by RID: the replica whose log has the access line of request RID.
served_by() {
  local s
  for s in faxhub-a faxhub-b faxhub-c; do
    if podman logs "$(container $s)" 2>&1 | grep -F "\"request_id\":\"$1\"" | grep -q '"msg":"http"'; then echo "$s"; return; fi
  done
}
has_server() { [ -n "$(served_by "$1")" ]; }
declare -A SENT=()
tries=0
t0=$(date +%s)
while [ ${#SENT[@]} -lt 3 ] && [ $tries -lt 12 ]; do
  tries=$((tries + 1))
  rid=check-$RUN_ID-compose-$tries
  fax=$(send_fax "$FRONT" "$KEY" docs/sample-letter.pdf application/pdf +12125550100 "$rid")
  if [ -z "$fax" ]; then not_ok "a fax sent through the front is accepted" "request $rid"; break; fi
  if ! until_ok 60 delivered "$FRONT" "$KEY" "$fax"; then
    not_ok "a fax sent through the front is delivered" "$fax: $(fax_status "$FRONT" "$KEY" "$fax")"
    break
  fi
  until_ok 10 has_server "$rid"
  s=$(served_by "$rid")
  if [ -n "$s" ] && [ -z "${SENT[$s]:-}" ]; then
    SENT[$s]=$fax
    ok "a fax sent through nginx, served by $s (its log has request $rid), is delivered: $fax"
  fi
done
for s in faxhub-a faxhub-b faxhub-c; do
  [ -n "${SENT[$s]:-}" ] || not_ok "a send through the front lands on $s" "after $tries sends: ${!SENT[*]}"
done
note "compose: $tries sends through the front in $(($(date +%s) - t0)) s"

# The front passes X-Forwarded-For and the replicas trust it: the access
# line names the client's address (the host, as nginx saw it), not nginx's.
line=$(podman logs "$(container faxhub-a)" 2>&1 | grep -F "\"request_id\":\"check-$RUN_ID-compose-" | grep '"msg":"http"' | head -n1)
client=$(printf '%s' "$line" | sed -n 's/.*"client":"\([^"]*\)".*/\1/p')
proxy_ip=$(podman inspect --format '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$(container proxy)")
if [ -n "$client" ] && [ -n "$proxy_ip" ] && [ "$client" != "$proxy_ip" ]; then
  ok "replicas log the client's address from X-Forwarded-For ($client), not the front's ($proxy_ip)"
else
  not_ok "replicas log the client's address from X-Forwarded-For" "proxy ${proxy_ip:-?}; line: $line"
fi

t0=$(date +%s)
cleanup
COMPOSE_UP=
left=$(podman ps -a -q --filter "label=io.podman.compose.project=$PROJECT"; podman volume ls -q --filter "label=io.podman.compose.project=$PROJECT")
if [ -z "$left" ]; then ok "the stack is torn down, volumes included ($(($(date +%s) - t0)) s)"; else not_ok "the stack is torn down" "$left"; fi
finish
