#!/bin/sh
# Creates the cluster on the first start (an empty data volume): the
# superuser POSTGRES_USER with POSTGRES_PASSWORD (required), the database
# POSTGRES_DB, password (SCRAM) logins from the network and trusted ones on
# the container's own socket (as the official image has: only a process
# inside the container reaches it, e.g. `podman exec … pg_dump`), then runs
# postgres in the foreground. Later starts run postgres on the existing
# cluster.
set -eu
: "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}"
user=${POSTGRES_USER:-postgres}
db=${POSTGRES_DB:-$user}
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pw=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pw"
  initdb --username="$user" --pwfile="$pw" --auth-local=trust --auth-host=scram-sha-256 \
    --encoding=UTF8 --locale=C.UTF-8 >/dev/null
  rm -f "$pw"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  if [ "$db" != postgres ]; then
    # A server on the socket only, for the one statement.
    pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
    psql -v ON_ERROR_STOP=1 -q -U "$user" -d postgres \
      -c "CREATE DATABASE \"$db\" OWNER \"$user\""
    pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  fi
  echo "postgres-entrypoint: new cluster, user $user, database $db"
fi
exec postgres -c listen_addresses='*' "$@"
