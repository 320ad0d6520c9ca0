#!/usr/bin/env bash
# Installs the pinned agent CLIs that the real-CLI tests drive, into an ignored folder.
#
# The versions are pinned because the tests assert wire shapes (stream-json events, `codex exec
# --json` items) that drift between releases; bump them deliberately and re-run smoke.sh.
# These are the versions the captures in tests/fixtures/streams/*/captured-* came from.
set -euo pipefail
cd "$(dirname "$0")/../.."

CLAUDE_CODE_VERSION=2.1.197
CODEX_VERSION=0.171.0
# 0.15.x is the last Qwen Code line whose `engines` allow Node 20 (0.21 and later need Node 22).
QWEN_CODE_VERSION=0.15.10
# A self-contained executable (about 185 MB) in the npm package; no provider package is
# fetched at run time (`@ai-sdk/openai-compatible` is built in).
OPENCODE_VERSION=1.18.33
PREFIX=${LOOPX_AGENT_CLIS:-.ci-tools/agent-clis}

mkdir -p "$PREFIX"
# --no-save keeps no package.json churn; --no-fund/--no-audit avoid extra registry calls.
npm install --prefix "$PREFIX" --no-fund --no-audit --no-save \
    "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" \
    "@openai/codex@$CODEX_VERSION" \
    "@qwen-code/qwen-code@$QWEN_CODE_VERSION" \
    "opencode-ai@$OPENCODE_VERSION"

"$PREFIX/node_modules/.bin/claude" --version
"$PREFIX/node_modules/.bin/codex" --version
"$PREFIX/node_modules/.bin/qwen" --version
"$PREFIX/node_modules/.bin/opencode" --version
echo "installed into $PREFIX (set LOOPX_AGENT_CLIS=$(cd "$PREFIX" && pwd) to run the real-CLI tests)"
