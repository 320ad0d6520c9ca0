#!/usr/bin/env bash
# Installs what the test suite drives besides Rust: the pinned agent CLIs (npm), Debian's
# Chromium for the board's browser tests, tmux, the terminal `goal start --guided` is
# answered in, and Graphviz, whose `dot` reads `goal history --graph dot`. Each is a real program the tests fail without.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/agent-clis/install.sh

missing=()
if ! command -v chromium >/dev/null 2>&1 && [ -z "${LOOPX_CHROMIUM:-}" ]; then missing+=(chromium); fi
if ! command -v tmux >/dev/null 2>&1; then missing+=(tmux); fi
if ! command -v dot >/dev/null 2>&1; then missing+=(graphviz); fi
if [ "${#missing[@]}" -gt 0 ]; then
    as_root=()
    if [ "$(id -u)" -ne 0 ]; then as_root=(sudo); fi
    "${as_root[@]}" apt-get update -q
    DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
tmux -V
dot -V
"${LOOPX_CHROMIUM:-chromium}" --version
