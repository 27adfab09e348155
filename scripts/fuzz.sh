#!/usr/bin/env bash
# Runs the framer/classifier fuzz target for a bounded time (default 30 s):
# cargo-fuzz from crates.io, pinned and installed once into .cache/, built
# by the stable toolchain with RUSTC_BOOTSTRAP (libFuzzer's flags are
# nightly-only, and CI machines have stable alone). A crash fails with its
# log; the input is saved under fuzz/artifacts/.
#   bash scripts/fuzz.sh [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
version=0.13.2
bin=.cache/cargo-fuzz/bin/cargo-fuzz
if [ "$("$bin" --version 2>/dev/null)" != "cargo-fuzz $version" ]; then
  cargo install --quiet --locked "cargo-fuzz@$version" --root .cache/cargo-fuzz
fi
mkdir -p .cache
if ! RUSTC_BOOTSTRAP=1 RUSTUP_TOOLCHAIN=stable "$bin" run framer_classifier \
    -- -max_total_time="$seconds" >.cache/fuzz.log 2>&1; then
  tail -60 .cache/fuzz.log
  echo "fuzz: framer_classifier failed (input saved under fuzz/artifacts/)" >&2
  exit 1
fi
grep -E '^Done [0-9]+ runs' .cache/fuzz.log
