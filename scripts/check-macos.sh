#!/usr/bin/env bash
# Type-checks the whole workspace, tests and benches included, for both Apple targets: macOS
# cannot run here, but code that does not compile there cannot creep in (docs/platforms.md).
# `cargo check` needs the targets' standard library only; nothing is linked.
set -euo pipefail
cd "$(dirname "$0")/.."

targets=(x86_64-apple-darwin aarch64-apple-darwin)
rustup target add "${targets[@]}"
for target in "${targets[@]}"; do
    echo "== cargo check --target $target"
    cargo check --workspace --all-targets --target "$target"
done
echo "== macOS type-check done in ${SECONDS} s"
