#!/usr/bin/env bash
# Installs and starts what `make check` needs. As root it installs missing
# Debian packages; otherwise it only checks and fails with what is missing.
set -euo pipefail

need_pkgs=()
command -v psql >/dev/null 2>&1 && ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || need_pkgs+=(postgresql)
command -v soffice >/dev/null 2>&1 || need_pkgs+=(libreoffice-writer-nogui libreoffice-calc-nogui)
command -v pdftoppm >/dev/null 2>&1 || need_pkgs+=(poppler-utils)

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
echo "deps: ok (PostgreSQL ready, LibreOffice $(soffice --version 2>/dev/null | awk '{print $2}' | head -n1))"
