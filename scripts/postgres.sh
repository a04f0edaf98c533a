#!/usr/bin/env bash
# A throwaway PostgreSQL 15 for the checkpoint package's integration tests and benchmarks.
#
#   scripts/postgres.sh start   # starts it (idempotent) and prints `export DATABASE_URL=...`
#   scripts/postgres.sh env     # prints `export DATABASE_URL=...` for a running server
#   scripts/postgres.sh stop    # stops it and deletes its data directory
#   eval "$(scripts/postgres.sh start)"
#
# Debian's binaries (/usr/lib/postgresql/15/bin, not on PATH; installed with apt-get when
# missing) run as the `postgres` user, with a data directory under /tmp, listening on
# 127.0.0.1 only, on a fixed port (PGPORT_LOOPGUARD, default 54329). Only stdout carries the
# export line, so `eval` is safe; progress goes to stderr.
set -euo pipefail

PORT="${PGPORT_LOOPGUARD:-54329}"
BIN="/usr/lib/postgresql/15/bin"
DATA="/tmp/loopguard-pg-${PORT}/data"
SOCKETS="/tmp/loopguard-pg-${PORT}/sockets"
LOG="/tmp/loopguard-pg-${PORT}/server.log"
DATABASE="loopguard_test"
URL="postgres://postgres@127.0.0.1:${PORT}/${DATABASE}"

say() { echo "[postgres.sh] $*" >&2; }

as_postgres() {
  if [ "$(id -un)" = "postgres" ]; then
    "$@"
  else
    runuser -u postgres -- "$@"
  fi
}

ensure_installed() {
  if [ -x "$BIN/postgres" ]; then return 0; fi
  if [ "$(id -u)" != "0" ]; then
    say "PostgreSQL 15 is not installed and this is not root: run 'apt-get install postgresql-15' as root"
    exit 1
  fi
  say "installing postgresql-15 with apt-get"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15 >/dev/null) >&2
}

is_running() {
  [ -f "$DATA/postmaster.pid" ] && as_postgres "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1
}

start() {
  ensure_installed
  if [ "$(id -u)" = "0" ]; then
    mkdir -p "/tmp/loopguard-pg-${PORT}"
    chown postgres: "/tmp/loopguard-pg-${PORT}"
  fi
  as_postgres mkdir -p "$SOCKETS"
  if [ ! -f "$DATA/PG_VERSION" ]; then
    say "initialising a data directory in $DATA"
    as_postgres "$BIN/initdb" -D "$DATA" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >/dev/null 2>&1 ||
      as_postgres "$BIN/initdb" -D "$DATA" -U postgres --auth=trust --encoding=UTF8 --locale=C >/dev/null
  fi
  if is_running; then
    say "already running on 127.0.0.1:${PORT}"
  else
    # Tuned for throwaway test data: durability off is fine here and makes tests faster.
    as_postgres "$BIN/pg_ctl" -D "$DATA" -l "$LOG" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p ${PORT} -k ${SOCKETS} -c max_connections=300 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
      start >/dev/null
    say "started on 127.0.0.1:${PORT} (log: $LOG)"
  fi
  if ! as_postgres "$BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '${DATABASE}'" postgres | grep -q 1; then
    as_postgres "$BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -qc "CREATE DATABASE ${DATABASE}" postgres >/dev/null
    say "created database ${DATABASE}"
  fi
  print_env
}

stop() {
  if is_running; then
    as_postgres "$BIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null
    say "stopped"
  else
    say "not running"
  fi
  rm -rf "/tmp/loopguard-pg-${PORT}"
}

print_env() {
  echo "export DATABASE_URL=${URL}"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  env)
    if ! is_running; then
      say "not running: run scripts/postgres.sh start"
      exit 1
    fi
    print_env
    ;;
  *)
    echo "usage: scripts/postgres.sh start|stop|env" >&2
    exit 2
    ;;
esac
