#!/usr/bin/env bash
# Starts and stops a throwaway PostgreSQL server on loopback for the test suite (CI and local).
#
#   scripts/pg-test-cluster.sh start DIR   # init (first time) + start; prints the URL as the last line
#   scripts/pg-test-cluster.sh stop DIR    # fast shutdown; fine if already stopped
#   scripts/pg-test-cluster.sh url DIR     # prints the URL written by `start`
#
# Everything lives in DIR: data/ (cluster), sock/ (Unix socket), log (server log), port, url,
# bindir (where pg_ctl was found, so `stop` uses the same installation). `start` on a running
# cluster only prints the URL; `start` after `stop` reuses data/ and the port from DIR/port, so
# the URL stays valid across restarts. Only the URL goes to stdout; all chatter goes to stderr.
set -euo pipefail

PG_OS_USER=loopxpg # PostgreSQL refuses to run as root, so as root we run it as this user
PG_DB_USER=loopx   # bootstrap superuser inside the cluster
PG_DB_NAME=loopx

usage() {
    echo "usage: $0 {start|stop|url} DIR" >&2
    exit 2
}

log() { echo "pg-test-cluster: $*" >&2; }
die() {
    log "error: $*"
    exit 1
}

[ $# -eq 2 ] || usage
cmd=$1
[ -n "$2" ] || usage

# The socket directory is passed inside pg_ctl's -o string, which goes through a shell; refuse
# paths that would need quoting rather than risk mis-splitting them.
case "$2" in
*[[:space:]\'\"\\\$\`]*) die "DIR must not contain whitespace, quotes, backslashes, \$ or backticks: $2" ;;
esac

is_root() { [ "$(id -u)" -eq 0 ]; }

# Runs a command as the OS user that owns the cluster: ourselves normally, $PG_OS_USER as root.
as_pg() {
    if ! is_root; then
        "$@"
    elif command -v runuser >/dev/null 2>&1; then
        runuser -u "$PG_OS_USER" -- "$@"
    elif command -v su >/dev/null 2>&1; then
        # su takes a shell command line; pass argv through "$0" "$@" so nothing is re-split.
        # The `--` stops su parsing our arguments as its own options (e.g. `test -w` would be
        # taken as su's --whitelist-environment).
        su -s /bin/sh -c 'exec "$0" "$@"' "$PG_OS_USER" -- "$@"
    else
        die "running as root but neither runuser nor su exists to drop to $PG_OS_USER"
    fi
}

ensure_pg_os_user() {
    is_root || return 0
    id -u "$PG_OS_USER" >/dev/null 2>&1 && return 0
    command -v useradd >/dev/null 2>&1 || die "running as root and user $PG_OS_USER is missing, but useradd is not available"
    log "creating system user $PG_OS_USER (PostgreSQL refuses to run as root)"
    # `|| id -u` tolerates a concurrent job having created it between the check and here.
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$PG_OS_USER" ||
        id -u "$PG_OS_USER" >/dev/null 2>&1
}

# Sets INITDB, PG_CTL, POSTGRES, PSQL to absolute paths, or returns 1 if the server binaries
# are not all found. PATH wins (so a developer can choose an installation by putting its bin
# dir first); otherwise the highest-versioned Debian layout /usr/lib/postgresql/N/bin.
find_pg_bins() {
    INITDB= PG_CTL= POSTGRES= PSQL=
    if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1 &&
        command -v postgres >/dev/null 2>&1; then
        INITDB=$(command -v initdb)
        PG_CTL=$(command -v pg_ctl)
        POSTGRES=$(command -v postgres)
    else
        local d
        # sort -V so that 9.6 < 15 < 16; first complete dir from the top wins.
        for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -rV); do
            if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && [ -x "$d/postgres" ]; then
                INITDB=$d/initdb PG_CTL=$d/pg_ctl POSTGRES=$d/postgres
                break
            fi
        done
        [ -n "$INITDB" ] || return 1
    fi
    # Prefer the psql shipped next to the real pg_ctl (PATH entries may be symlinks, and
    # Debian's /usr/bin/psql is a version-picking wrapper), else whatever psql is on PATH.
    local real_bin
    real_bin=$(dirname "$(readlink -f "$PG_CTL")")
    if [ -x "$real_bin/psql" ]; then
        PSQL=$real_bin/psql
    elif command -v psql >/dev/null 2>&1; then
        PSQL=$(command -v psql)
    else
        return 1
    fi
}

install_pg() {
    local sudo=()
    is_root || sudo=(sudo)
    log "PostgreSQL binaries not found; installing Debian's postgresql package"
    # Fresh CI images have empty apt lists, so update first.
    "${sudo[@]}" apt-get update -q >&2
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends postgresql >&2
}

# Free loopback port chosen by the kernel. There is a small window between closing this socket
# and postgres binding it; start_server retries with a new port if that race is lost.
pick_port() {
    python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'
}

is_running() {
    [ -f "$DATA/PG_VERSION" ] && as_pg "$PG_CTL" -D "$DATA" status >/dev/null 2>&1
}

# Starts the server on $1. Returns pg_ctl's status; the server log is in $DIR/log.
start_server() {
    local port=$1
    # fsync/synchronous_commit/full_page_writes off: this cluster is throwaway test data, so
    # crash safety is worth nothing and durability costs the suite a lot of time.
    # listen_addresses=127.0.0.1: loopback only, which (with the private 0700 data dir) is what
    # makes trust auth acceptable. max_connections=400: the suite runs many tests in parallel,
    # each with its own pool.
    as_pg "$PG_CTL" -D "$DATA" -l "$DIR/log" -w -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories=$DIR/sock -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=400 -c shared_buffers=128MB" start >&2
}

psql_admin() {
    # -X: ignore the caller's ~/.psqlrc; ON_ERROR_STOP: fail loudly. Connects over TCP like the
    # tests do, so this also proves the URL works.
    PGCONNECT_TIMEOUT=10 "$PSQL" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$1" -U "$PG_DB_USER" -d postgres "${@:2}"
}

cmd_start() {
    if ! find_pg_bins; then
        install_pg
        find_pg_bins || die "PostgreSQL binaries still not found after installing the postgresql package"
    fi
    log "using $("$POSTGRES" --version) from $(dirname "$(readlink -f "$PG_CTL")")"

    ensure_pg_os_user
    mkdir -p "$DIR/sock"
    if is_root; then
        # The server process must own its data, socket and log; DIR itself must be writable by
        # it for the log file. -R also covers a data dir left by an earlier run.
        chown -R "$PG_OS_USER:" "$DIR"
        as_pg test -w "$DIR" ||
            die "$PG_OS_USER cannot reach $DIR (is a parent directory private to root?); use a DIR under /tmp"
    fi
    dirname "$(readlink -f "$PG_CTL")" >"$DIR/bindir"

    if [ ! -f "$DATA/PG_VERSION" ]; then
        log "initdb in $DATA"
        # Trust auth is fine: the server listens only on 127.0.0.1 and its Unix socket lives in
        # this private temp dir; it holds nothing but test data. --no-sync: throwaway, see below.
        # initdb removes a half-created data dir itself if it fails, so a rerun starts clean.
        if ! as_pg "$INITDB" -D "$DATA" -A trust -U "$PG_DB_USER" --no-sync -E UTF8 --locale=C \
            >"$DIR/initdb.log" 2>&1; then
            cat "$DIR/initdb.log" >&2
            die "initdb failed"
        fi
    fi

    local port
    if is_running; then
        port=$(cat "$DIR/port" 2>/dev/null) || die "server in $DATA is running but $DIR/port is missing"
        log "already running on port $port"
    elif [ -s "$DIR/port" ]; then
        # Restart: keep the old port so URLs handed out earlier (DIR/url) stay valid.
        port=$(cat "$DIR/port")
        if ! start_server "$port"; then
            tail -n 30 "$DIR/log" >&2 || true
            die "server failed to start on port $port (reused from $DIR/port; is something else using it?)"
        fi
    else
        local attempt
        for attempt in 1 2 3; do
            port=$(pick_port)
            if start_server "$port"; then
                break
            fi
            # Most likely someone grabbed the port between pick_port and bind; try another.
            tail -n 30 "$DIR/log" >&2 || true
            [ "$attempt" -lt 3 ] || die "server failed to start (see $DIR/log)"
            log "start on port $port failed; retrying with another port"
        done
        echo "$port" >"$DIR/port"
    fi

    # Checked rather than assumed: a restart or an earlier interrupted start may already have it.
    if [ "$(psql_admin "$port" -tA -c "select 1 from pg_database where datname = '$PG_DB_NAME'")" != 1 ]; then
        psql_admin "$port" -c "create database $PG_DB_NAME" >&2
    fi

    local url="postgres://$PG_DB_USER@127.0.0.1:$port/$PG_DB_NAME"
    echo "$url" >"$DIR/url"
    echo "$url"
}

cmd_stop() {
    if [ ! -f "$DATA/PG_VERSION" ]; then
        log "no cluster in $DATA; nothing to stop"
        return 0
    fi
    # Use the installation that started it; fall back to a fresh lookup (no install on stop).
    if [ -s "$DIR/bindir" ] && [ -x "$(cat "$DIR/bindir")/pg_ctl" ]; then
        PG_CTL=$(cat "$DIR/bindir")/pg_ctl
    else
        find_pg_bins || die "pg_ctl not found"
    fi
    if ! is_running; then
        log "server in $DATA is not running"
        return 0
    fi
    as_pg "$PG_CTL" -D "$DATA" -m fast -w stop >&2
}

cmd_url() {
    [ -s "$DIR/url" ] || die "$DIR/url not found; run '$0 start $DIR' first"
    cat "$DIR/url"
}

case "$cmd" in
start)
    mkdir -p "$2"
    # Absolute, symlink-free path: it is baked into the server's socket setting and used after
    # switching users, so it must not depend on the caller's cwd.
    DIR=$(cd "$2" && pwd -P)
    ;;
stop | url)
    [ -d "$2" ] || {
        [ "$cmd" = stop ] && { log "$2 does not exist; nothing to stop"; exit 0; }
        die "$2 does not exist"
    }
    DIR=$(cd "$2" && pwd -P)
    ;;
*) usage ;;
esac
DATA=$DIR/data
# The server user may not be able to enter the caller's cwd (e.g. /root); tools run from DIR.
cd "$DIR"

"cmd_$cmd"
