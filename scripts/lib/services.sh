# shellcheck shell=bash
# Local services for Ironclad: Debian packages, PostgreSQL and Redis.
#
# Source this file (it is safe under `set -euo pipefail`) and call:
#   ensure_packages   install missing Debian packages (apt-get; sudo when not root)
#   ensure_postgres   reuse PostgreSQL on 127.0.0.1:$PGPORT or start a project-local cluster;
#                     exports DATABASE_URL (database "ironclad", created if absent)
#   ensure_redis      reuse Redis on 127.0.0.1:$REDIS_PORT or start a project-local server;
#                     exports REDIS_URL
#   ensure_services   all three
#   ensure_database URL     create the database named in URL if absent
#   pg_url_with_db URL DB   print URL with its database replaced by DB
#   stop_services     stop the project-local PostgreSQL/Redis started by this file (if any)
#   ensure_cargo      put ~/.cargo/bin on PATH when cargo is not found
#
# Environment (all optional):
#   DATABASE_URL, REDIS_URL   when set, they are used as they are (only reachability is checked)
#   PGPORT (5432), REDIS_PORT (6379)
#   IRONCLAD_STATE_DIR        project-local state (default: <repo>/.state)
#   IRONCLAD_SKIP_PACKAGES=1  never call apt-get (non-Debian hosts, offline machines)
#   IRONCLAD_PG_DURABLE=1     keep fsync on in the project-local cluster (off by default: it is a
#                             throw-away dev/test cluster and per-test databases are created often)

if [[ -n "${IRONCLAD_SERVICES_SH_LOADED:-}" ]]; then
  return 0
fi
IRONCLAD_SERVICES_SH_LOADED=1

IRONCLAD_REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

IRONCLAD_PACKAGES=(
  postgresql postgresql-client redis-server redis-tools
  poppler-utils tesseract-ocr tesseract-ocr-eng tesseract-ocr-fra tesseract-ocr-osd
  libtesseract-dev libleptonica-dev clang libclang-dev pkg-config
  imagemagick python3 curl jq pgbouncer
  build-essential ca-certificates
)

svc_log() { printf '[services] %s\n' "$*" >&2; }
svc_die() { printf '[services] ERROR: %s\n' "$*" >&2; return 1; }

ironclad_state_dir() { printf '%s\n' "${IRONCLAD_STATE_DIR:-$IRONCLAD_REPO_ROOT/.state}"; }

# Run a command as root: directly when root, through sudo otherwise.
as_root() {
  if [[ "$(id -u)" -eq 0 ]]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    svc_die "need root for: $* (install sudo or run as root)"
  fi
}

ensure_cargo() {
  if ! command -v cargo >/dev/null 2>&1; then
    if [[ -f "${HOME:-}/.cargo/env" ]]; then
      # shellcheck disable=SC1091
      . "${HOME:-}/.cargo/env"
    elif [[ -x "${HOME:-}/.cargo/bin/cargo" ]]; then
      export PATH="${HOME:-}/.cargo/bin:$PATH"
    fi
  fi
  command -v cargo >/dev/null 2>&1 || svc_die "cargo not found (install Rust with rustup)"
}

# --------------------------------------------------------------------------------------------
# Packages
# --------------------------------------------------------------------------------------------

ensure_packages() {
  if [[ -n "${IRONCLAD_PACKAGES_CHECKED:-}" || "${IRONCLAD_SKIP_PACKAGES:-}" == 1 ]]; then
    return 0
  fi
  if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
    svc_log "not a Debian system (no dpkg-query/apt-get): skipping package installation"
    export IRONCLAD_PACKAGES_CHECKED=1
    return 0
  fi
  local missing=() pkg status
  for pkg in "${IRONCLAD_PACKAGES[@]}"; do
    status="$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)"
    if [[ "$status" != "install ok installed" ]]; then
      missing+=("$pkg")
    fi
  done
  if ((${#missing[@]} > 0)); then
    svc_log "installing: ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
  fi
  export IRONCLAD_PACKAGES_CHECKED=1
}

# --------------------------------------------------------------------------------------------
# PostgreSQL
# --------------------------------------------------------------------------------------------

# pg_url_with_db postgres://u:p@h:port/olddb?x=y newdb  ->  postgres://u:p@h:port/newdb?x=y
pg_url_with_db() {
  local url="$1" db="$2" base query="" scheme rest authority
  base="${url%%\?*}"
  if [[ "$url" == *\?* ]]; then query="?${url#*\?}"; fi
  scheme="${base%%://*}"
  rest="${base#*://}"
  authority="${rest%%/*}"
  printf '%s://%s/%s%s\n' "$scheme" "$authority" "$db" "$query"
}

# Print the database name of a URL.
pg_url_db() {
  local base="${1%%\?*}" rest
  rest="${base#*://}"
  if [[ "$rest" == */* ]]; then printf '%s\n' "${rest#*/}"; else printf '\n'; fi
}

# ensure_database URL: create the database named in URL (connecting to "postgres" on the same server).
ensure_database() {
  local url="$1" db admin exists
  db="$(pg_url_db "$url")"
  [[ -n "$db" ]] || svc_die "no database name in $url"
  [[ "$db" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || svc_die "unsupported database name: $db"
  admin="$(pg_url_with_db "$url" postgres)"
  exists="$(PGCONNECT_TIMEOUT=5 psql "$admin" -XAtq -v ON_ERROR_STOP=1 \
    -c "SELECT 1 FROM pg_database WHERE datname = '$db'")" ||
    svc_die "cannot connect to PostgreSQL with $admin"
  if [[ "$exists" != 1 ]]; then
    svc_log "creating database $db"
    if ! PGCONNECT_TIMEOUT=5 psql "$admin" -XAtq -v ON_ERROR_STOP=1 -c "CREATE DATABASE \"$db\"" >/dev/null; then
      # A concurrent run may have created it in between.
      exists="$(psql "$admin" -XAtq -c "SELECT 1 FROM pg_database WHERE datname = '$db'")" || true
      [[ "$exists" == 1 ]] || svc_die "could not create database $db"
    fi
  fi
}

pg_bin_dir() {
  if [[ -n "${PG_BIN:-}" ]]; then printf '%s\n' "$PG_BIN"; return 0; fi
  local dir="" d
  for d in /usr/lib/postgresql/*/bin; do
    [[ -x "$d/initdb" ]] || continue
    if [[ -z "$dir" ]] || [[ "$(printf '%s\n%s\n' "$dir" "$d" | sort -V | tail -n 1)" == "$d" ]]; then dir="$d"; fi
  done
  if [[ -z "$dir" ]]; then
    dir="$(dirname "$(command -v pg_ctl 2>/dev/null || command -v initdb 2>/dev/null || echo /nonexistent/x)")"
  fi
  [[ -x "$dir/initdb" && -x "$dir/pg_ctl" ]] || svc_die "PostgreSQL server binaries not found (install postgresql)"
  printf '%s\n' "$dir"
}

# Run a PostgreSQL server binary: as the "postgres" user when we are root (PostgreSQL refuses to
# run as root), as ourselves otherwise. Runs from / so an unreadable cwd is harmless.
run_pg() {
  if [[ "$(id -u)" -eq 0 ]]; then
    id postgres >/dev/null 2>&1 || svc_die "user postgres does not exist (install postgresql)"
    if command -v runuser >/dev/null 2>&1; then
      (cd / && runuser -u postgres -- "$@")
    else
      # shellcheck disable=SC2016 # expanded by the inner sh
      (cd / && su postgres -s /bin/sh -c 'exec "$0" "$@"' "$@")
    fi
  else
    (cd / && "$@")
  fi
}

# Where the project-local cluster lives: $STATE/pg, unless root and the postgres user cannot
# reach that path (e.g. the repository sits under a 0700 home); then a directory under /var/tmp.
pg_base_dir() {
  local state base
  state="$(ironclad_state_dir)"
  base="$state/pg"
  if [[ "$(id -u)" -eq 0 ]]; then
    mkdir -p "$state"
    if ! run_pg test -x "$state" 2>/dev/null; then
      local key
      key="$(printf '%s' "$state" | cksum | cut -d' ' -f1)"
      base="/var/tmp/ironclad-pg-$key"
    fi
  fi
  printf '%s\n' "$base"
}

pg_trust_ok() { # host port
  PGCONNECT_TIMEOUT=5 psql -h "$1" -p "$2" -U postgres -d postgres -XAtqw -c 'SELECT 1' >/dev/null 2>&1
}

# Run a command as the "postgres" OS user (root: runuser/su; otherwise sudo -n, never prompting).
as_postgres_user() {
  if [[ "$(id -u)" -eq 0 ]]; then
    run_pg "$@"
  elif command -v sudo >/dev/null 2>&1; then
    (cd / && sudo -n -u postgres "$@")
  else
    return 1
  fi
}

# For a server that does not trust 127.0.0.1 (e.g. Debian's packaged cluster): connect as the
# postgres OS user over the local socket (peer auth) and create the login role ironclad/ironclad
# with CREATEDB if it is missing. Returns non-zero when that is not possible.
pg_provision_role() {
  local port="$1"
  id postgres >/dev/null 2>&1 || return 1
  as_postgres_user psql -X -p "$port" -d postgres -Atq -v ON_ERROR_STOP=1 -c 'SELECT 1' >/dev/null 2>&1 || return 1
  svc_log "PostgreSQL on port $port does not trust user postgres: using role ironclad (password ironclad)"
  as_postgres_user psql -X -p "$port" -d postgres -Atq -v ON_ERROR_STOP=1 >/dev/null <<'SQL' || return 1
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ironclad') THEN
    CREATE ROLE ironclad LOGIN CREATEDB PASSWORD 'ironclad';
  END IF;
END
$$;
SQL
  PGPASSWORD=ironclad PGCONNECT_TIMEOUT=5 psql -h 127.0.0.1 -p "$port" -U ironclad -d postgres -XAtqw \
    -c 'SELECT 1' >/dev/null 2>&1
}

start_local_postgres() {
  local port="$1" bin base data log
  bin="$(pg_bin_dir)"
  base="$(pg_base_dir)"
  data="$base/data"
  log="$base/postgres.log"
  mkdir -p "$base"
  if [[ "$(id -u)" -eq 0 ]]; then
    chown postgres: "$base"
    chmod 0700 "$base"
  fi
  if [[ ! -s "$data/PG_VERSION" ]]; then
    svc_log "initialising PostgreSQL cluster in $data"
    run_pg "$bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$base/initdb.log" 2>&1 ||
      { cat "$base/initdb.log" >&2; svc_die "initdb failed"; }
  fi
  local opts="-p $port -k /tmp -c listen_addresses=127.0.0.1 -c max_connections=300"
  if [[ "${IRONCLAD_PG_DURABLE:-}" != 1 ]]; then
    opts="$opts -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
  fi
  svc_log "starting PostgreSQL on 127.0.0.1:$port (data: $data, log: $log)"
  if ! run_pg "$bin/pg_ctl" -D "$data" -o "$opts" -w -t 60 -l "$log" start >/dev/null; then
    tail -n 30 "$log" >&2 || true
    svc_die "PostgreSQL did not start"
  fi
}

ensure_postgres() {
  if [[ -n "${DATABASE_URL:-}" ]]; then
    if ! pg_isready -q -d "$DATABASE_URL" -t 5; then
      svc_die "DATABASE_URL is set but PostgreSQL is not reachable: $DATABASE_URL"
    fi
    export DATABASE_URL
    return 0
  fi
  local port="${PGPORT:-5432}"
  if pg_isready -q -h 127.0.0.1 -p "$port" -t 3; then
    if ! pg_trust_ok 127.0.0.1 "$port"; then
      # A distribution-managed server (Debian's cluster started by the package: peer/scram auth).
      if pg_provision_role "$port"; then
        export DATABASE_URL="postgres://ironclad:ironclad@127.0.0.1:$port/ironclad"
        ensure_database "$DATABASE_URL"
        return 0
      fi
      svc_die "PostgreSQL on 127.0.0.1:$port refuses user postgres without a password.
  Either set DATABASE_URL=postgres://USER:PASSWORD@127.0.0.1:$port/ironclad (a role with CREATEDB),
  or choose a free port (e.g. PGPORT=55432) to get a project-local cluster."
    fi
  else
    start_local_postgres "$port"
    pg_trust_ok 127.0.0.1 "$port" || svc_die "cannot connect to the project-local cluster on port $port"
  fi
  export DATABASE_URL="postgres://postgres@127.0.0.1:$port/ironclad"
  ensure_database "$DATABASE_URL"
}

# --------------------------------------------------------------------------------------------
# Redis
# --------------------------------------------------------------------------------------------

redis_ping_ok() { # redis-cli connection args...
  [[ "$(timeout 5 redis-cli "$@" ping 2>/dev/null || true)" == PONG ]]
}

ensure_redis() {
  command -v redis-cli >/dev/null 2>&1 || svc_die "redis-cli not found (install redis-tools)"
  if [[ -n "${REDIS_URL:-}" ]]; then
    redis_ping_ok -u "$REDIS_URL" || svc_die "REDIS_URL is set but Redis is not reachable: $REDIS_URL"
    export REDIS_URL
    return 0
  fi
  local port="${REDIS_PORT:-6379}"
  if ! redis_ping_ok -h 127.0.0.1 -p "$port"; then
    command -v redis-server >/dev/null 2>&1 || svc_die "redis-server not found (install redis-server)"
    local dir
    dir="$(ironclad_state_dir)/redis"
    mkdir -p "$dir"
    svc_log "starting Redis on 127.0.0.1:$port (dir: $dir)"
    redis-server --port "$port" --bind 127.0.0.1 --daemonize yes \
      --pidfile "$dir/redis.pid" --dir "$dir" --logfile "$dir/redis.log" \
      --save '' --appendonly no >/dev/null
    local i
    for ((i = 0; i < 50; i++)); do
      redis_ping_ok -h 127.0.0.1 -p "$port" && break
      sleep 0.2
    done
    redis_ping_ok -h 127.0.0.1 -p "$port" || { tail -n 20 "$dir/redis.log" >&2 || true; svc_die "Redis did not start"; }
  fi
  export REDIS_URL="redis://127.0.0.1:$port/"
}

ensure_services() {
  ensure_packages
  ensure_postgres
  ensure_redis
}

# Stop what this file started (project-local instances only; shared services are left alone).
stop_services() {
  local state base data pidfile
  state="$(ironclad_state_dir)"
  base="$(pg_base_dir)"
  data="$base/data"
  if [[ -f "$data/postmaster.pid" ]]; then
    svc_log "stopping PostgreSQL ($data)"
    run_pg "$(pg_bin_dir)/pg_ctl" -D "$data" -m fast -w stop >/dev/null || true
  fi
  pidfile="$state/redis/redis.pid"
  if [[ -f "$pidfile" ]]; then
    local pid
    pid="$(cat "$pidfile")"
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
      svc_log "stopping Redis (pid $pid)"
      kill "$pid" || true
      local i
      for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
    rm -f "$pidfile"
  fi
}
