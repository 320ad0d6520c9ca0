#!/usr/bin/env bash
# Drives the real Claude Code and Codex CLIs (installed by install.sh) against the scripted
# model server, offline: everything runs inside `unshare -rn`, a network namespace whose only
# interface is loopback, so the CLIs' own update checks and telemetry fail at once and no test
# traffic can leave 127.0.0.1.
#
# Usage: scripts/agent-clis/smoke.sh [OUT_DIR]
#   OUT_DIR (default target/agent-clis-smoke) receives, per run, the CLI's stdout/stderr, its
#   exit code and the server's request log. The Rust test `real_clis` checks the same runs
#   more strictly; this script is for looking at what the CLIs do.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
CLIS=${LOOPX_AGENT_CLIS:-$ROOT/.ci-tools/agent-clis}
OUT=${1:-$ROOT/target/agent-clis-smoke}
SCRIPTS=$ROOT/crates/loopx-model-server/tests/scripts

if [[ "${LOOPX_SMOKE_IN_NETNS:-}" != 1 ]]; then
    for cli in claude codex; do
        [[ -x "$CLIS/node_modules/.bin/$cli" ]] || {
            echo "error: no $cli in $CLIS (hint: run scripts/agent-clis/install.sh)" >&2
            exit 1
        }
    done
    CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-1} cargo build -q -p loopx-model-server
    rm -rf "$OUT" && mkdir -p "$OUT"
    # The new namespace's loopback starts down; bring it up before anything listens.
    exec env LOOPX_SMOKE_IN_NETNS=1 LOOPX_AGENT_CLIS="$CLIS" \
        unshare -rn -- sh -c 'ip link set lo up && exec "$0" "$@"' "$0" "$OUT"
fi

SERVER=$ROOT/target/debug/loopx-model-server
CLAUDE=$CLIS/node_modules/.bin/claude
CODEX=$CLIS/node_modules/.bin/codex
echo "claude $("$CLAUDE" --version), codex $("$CODEX" --version)"
FAILED=0

# run NAME SCRIPT CLI ARGS...: starts a server for SCRIPT, runs the CLI in a fresh HOME and
# working directory with stdin closed, and leaves everything in $OUT/NAME.
run() {
    local name=$1 script=$2 cli=$3
    shift 3
    local dir=$OUT/$name
    mkdir -p "$dir/home" "$dir/work"
    "$SERVER" --script "$SCRIPTS/$script" --port-file "$dir/port" \
        --requests-log "$dir/requests.jsonl" 2>"$dir/server.stderr" &
    local server=$!
    for _ in $(seq 100); do [[ -s "$dir/port" ]] && break; sleep 0.05; done
    PORT=$(cat "$dir/port")
    local args=("${@//\{port\}/$PORT}")
    local code=0
    (cd "$dir/work" && env -i PATH="$PATH" HOME="$dir/home" \
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 \
        ANTHROPIC_BASE_URL="http://127.0.0.1:$PORT" ANTHROPIC_API_KEY=test-key \
        OPENAI_API_KEY=test-key \
        timeout 180 "$cli" "${args[@]}" </dev/null >"$dir/stdout.jsonl" 2>"$dir/stderr.txt") ||
        code=$?
    kill "$server" && wait "$server" 2>/dev/null || true
    echo "$code" >"$dir/exit-code"
    local paths
    paths=$(node -e 'for (const l of require("fs").readFileSync(process.argv[1], "utf8").split("\n"))
        if (l) { const r = JSON.parse(l); process.stdout.write(`${r.method} ${r.target} -> ${JSON.stringify(r.answer)}; `) }' \
        "$dir/requests.jsonl")
    echo "== $name: exit $code; requests: $paths"
}

# check NAME JS: evaluates JS with `events` (the parsed stdout lines) and `work` (the run's
# working directory); a falsy result fails the smoke test.
check() {
    if node -e '
        const fs = require("fs"), dir = process.argv[1];
        const events = fs.readFileSync(dir + "/stdout.jsonl", "utf8").split("\n")
            .filter(Boolean).map(l => { try { return JSON.parse(l) } catch { return {} } });
        const last = t => events.filter(e => e.type === t).pop() || {};
        const work = dir + "/work";
        process.exit(eval(process.argv[2]) ? 0 : 1);' "$OUT/$1" "$2"; then
        echo "   ok: $2"
    else
        echo "   FAILED: $2"
        FAILED=1
    fi
}

CLAUDE_ARGS=(--output-format stream-json --verbose --permission-mode acceptEdits)
run claude-write claude-write.json "$CLAUDE" -p "Write hi to hello.txt" "${CLAUDE_ARGS[@]}"
check claude-write 'fs.readFileSync(work + "/hello.txt", "utf8") === "hi\n"'
check claude-write 'const r = last("result"); r.is_error === false && r.session_id && r.usage && r.total_cost_usd > 0'

run claude-429 claude-429.json "$CLAUDE" -p "Say hi" "${CLAUDE_ARGS[@]}"
check claude-429 'const r = last("result"); r.is_error === true && r.api_error_status === 429'

PROVIDER='model_providers.loopx={name="loopx",base_url="http://127.0.0.1:{port}/v1",env_key="OPENAI_API_KEY",wire_api="responses"}'
CODEX_ARGS=(exec --json --skip-git-repo-check -s workspace-write -c 'model_provider="loopx"' -c "$PROVIDER")
run codex-report codex-report.json "$CODEX" "${CODEX_ARGS[@]}" "Say nothing changed"
check codex-report 'events.some(e => e.type === "item.completed" && e.item.type === "agent_message" && e.item.text.includes("```loopx-report"))'
check codex-report 'last("turn.completed").usage.input_tokens === 1500'

run codex-shell codex-shell.json "$CODEX" "${CODEX_ARGS[@]}" "Write hi to hello.txt"
check codex-shell 'events.some(e => e.type === "item.completed" && e.item.type === "command_execution" && e.item.exit_code === 0)'
check codex-shell 'fs.readFileSync(work + "/hello.txt", "utf8") === "hi\n"'

echo "outputs in $OUT"
exit "$FAILED"
