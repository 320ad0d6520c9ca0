#!/usr/bin/env bash
# Installs what the test suite drives besides Rust: the pinned agent CLIs (npm) and Debian's
# Chromium for the board's browser tests. Both are real programs the tests fail without.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/agent-clis/install.sh

if ! command -v chromium >/dev/null 2>&1 && [ -z "${LOOPX_CHROMIUM:-}" ]; then
    as_root=()
    if [ "$(id -u)" -ne 0 ]; then as_root=(sudo); fi
    "${as_root[@]}" apt-get update -q
    DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -q --no-install-recommends chromium
fi
"${LOOPX_CHROMIUM:-chromium}" --version
