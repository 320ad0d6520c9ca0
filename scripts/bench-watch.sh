#!/usr/bin/env bash
# `loopx watch` itself, whole, while `loopx run` runs 8 agents each printing 1 MiB/s: the CPU
# the watch process used (a share of one core) and its peak RSS, read from /proc. watch runs in
# a tmux window of 200x60. The agents' `max_output` is 1 GiB so their logs keep growing (at the
# default 2 MiB a log stops at its first MiB until the slice ends).
#   scripts/bench-watch.sh [--seconds 20] [--bin target/release/loopx]
# Needs tmux (scripts/install-test-tools.sh) and a built loopx.
set -euo pipefail
cd "$(dirname "$0")/.."
loopx="$PWD/target/release/loopx"
seconds=20
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) seconds=$2; shift 2 ;;
        --bin) loopx=$(realpath "$2"); shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
work=$(mktemp -d /tmp/loopx-bench-watch.XXXXXX)
socket="loopx-bench-watch-$$"
export XDG_STATE_HOME="$work/state" USER=bench
cleanup() {
    touch "$work/p/stop" 2>/dev/null || true
    tmux -L "$socket" kill-server 2>/dev/null || true
    [ -n "${run_pid:-}" ] && wait "$run_pid" 2>/dev/null || true
    rm -rf "$work" 2>/dev/null || true
}
trap cleanup EXIT

mkdir -p "$work/p" && cd "$work/p"
git init -q && git -c user.email=b@b -c user.name=b commit -q --allow-empty -m init
"$loopx" init >/dev/null
"$loopx" goal start "Flood the watch view" --isolation shared >/dev/null
# 64 KiB of coloured numbered lines, printed 16 times a second: 1 MiB/s.
for i in $(seq 1 1000); do printf '\033[3%dmline %d\033[0m compiling crate %d of the workspace, all is well\n' $((i % 7 + 1)) "$i" "$i"; done > lines.txt
head -c 65536 lines.txt > chunk.txt
for n in $(seq 1 8); do
    cat > "agent$n.sh" <<EOF
#!/bin/sh
cat >/dev/null
while [ ! -e '$work/p/stop' ]; do cat '$work/p/chunk.txt'; sleep 0.0625; done
EOF
    chmod +x "agent$n.sh"
    printf 'adapter = "generic"\nprogram = "%s"\npermission = "workspace-write"\n[limits]\nmax_time = "10m"\nmax_output = "1GiB"\n' "$work/p/agent$n.sh" > ".loopx/profiles/agent$n.toml"
    "$loopx" agent add "agent$n" --profile "agent$n" >/dev/null
    "$loopx" todo add "Flood $n" >/dev/null
done
"$loopx" run --max-slices 8 >/dev/null 2>&1 &
run_pid=$!
for _ in $(seq 1 100); do
    [ "$("$loopx" status --json | grep -o '"elapsed_secs"' | wc -l)" -ge 8 ] && break
    sleep 0.2
done
tmux -L "$socket" -f /dev/null new-session -d -x 200 -y 60 "'$loopx' watch; sleep 600"
sleep 2
pid=$(pgrep -f "^$loopx watch" | head -1)
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
before=$(ticks)
start=$(date +%s.%N)
sleep "$seconds"
after=$(ticks)
end=$(date +%s.%N)
hz=$(getconf CLK_TCK)
logged=$(du -sm --apparent-size .loopx/slices | cut -f1)
awk -v t=$((after - before)) -v hz="$hz" -v s="$start" -v e="$end" -v rss="$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")" -v mib="$logged" \
    'BEGIN { printf "loopx watch: 8 slices at 1 MiB/s (%d MiB logged); CPU %.1f%% of one core over %.1f s; peak RSS %.1f MiB\n", mib, 100 * t / hz / (e - s), e - s, rss / 1024 }'
tmux -L "$socket" capture-pane -p | head -3
