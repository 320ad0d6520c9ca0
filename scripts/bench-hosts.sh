#!/usr/bin/env bash
# Slices per second with several supervisors on one project: N checkouts ("hosts") sharing a
# PostgreSQL store (`--store postgres://…`), or N `loopx run` on one redb project (no URL).
# Each supervisor runs one agent, a trivial shell script that reports its todo done at once, so
# the figure is loopx's own cost per slice (decision, claim, sandbox, PTY, writeback).
#   scripts/bench-hosts.sh [--hosts 3] [--todos 90] [--store postgres://…]
# Needs the release binary: cargo build --release.
set -euo pipefail
cd "$(dirname "$0")/.."
loopx="$PWD/target/release/loopx"
hosts=3 todos=90 store=""
while [ $# -gt 0 ]; do
    case "$1" in
        --hosts) hosts=$2; shift 2 ;;
        --todos) todos=$2; shift 2 ;;
        --store) store=$2; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
work=$(mktemp -d /tmp/loopx-bench-hosts.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; sleep 0.5; rm -rf "$work" 2>/dev/null || true' EXIT

dirs=()
for h in $(seq 1 "$hosts"); do
    if [ -n "$store" ]; then d="$work/host$h"; else d="$work/project"; fi
    mkdir -p "$d"
    dirs+=("$d")
done
init() {
    if [ -n "$store" ]; then (cd "$1" && "$loopx" init --store "$store" >/dev/null)
    else [ -d "$1/.loopx" ] || (cd "$1" && "$loopx" init >/dev/null); fi
}
for h in $(seq 1 "$hosts"); do
    d=${dirs[$((h-1))]}
    init "$d"
    printf '#!/bin/sh\ncat >/dev/null\n"%s" report done --summary ok >/dev/null\n' "$loopx" > "$d/agent$h.sh"
    chmod +x "$d/agent$h.sh"
    printf 'adapter = "generic"\nprogram = "%s"\npermission = "workspace-write"\n[limits]\nmax_time = "60s"\n' \
        "$d/agent$h.sh" > "$d/.loopx/profiles/a$h.toml"
done
first=${dirs[0]}
(cd "$first" && "$loopx" goal start "bench" >/dev/null)
for h in $(seq 1 "$hosts"); do
    (cd "${dirs[$((h-1))]}" && "$loopx" agent add "a$h" --profile "a$h" >/dev/null)
done
for i in $(seq 1 "$todos"); do (cd "$first" && "$loopx" todo add "job $i" >/dev/null); done

start=$(date +%s.%N)
for h in $(seq 1 "$hosts"); do
    (cd "${dirs[$((h-1))]}" && LOOPX_HOST_ID="h$h" "$loopx" run --agent "a$h" >/dev/null 2>&1) &
done
while :; do
    left=$(cd "$first" && "$loopx" status --json | python3 -c 'import json,sys; c=json.load(sys.stdin)["counts"]; print(c["open"]+c["claimed"])')
    [ "$left" = 0 ] && break
    sleep 0.05
done
end=$(date +%s.%N)
kill $(jobs -p) 2>/dev/null || true
wait 2>/dev/null || true
done_once=$(cd "$first" && "$loopx" log --json -n 1000000 | python3 -c '
import json,sys,collections
c=collections.Counter(json.loads(l)["data"]["todo"] for l in sys.stdin if json.loads(l)["kind"]=="todo_done")
print(len(c), max(c.values()))')
python3 -c "
t=$end-$start; print(f'{\"postgres\" if \"$store\" else \"redb\"}: $hosts supervisors, $todos slices in {t:.2f} s = {$todos/t:.1f} slices/s; todos done, most times one was done: $done_once')"
