#!/usr/bin/env bash
# Builds GT and runs the quickstart example against the embedded default: with no GT_ADDRESS
# the client spawns a private dispatcher and worker(s) on a private Unix socket and tears
# them down at exit.
#
#   scripts/demo.sh [extra cmake args...]       e.g. scripts/demo.sh -DGT_CUDA=OFF
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
BUILD=${GT_BUILD_DIR:-$ROOT/build}

"$ROOT/scripts/build.sh" "$@"

QUICKSTART="$BUILD/bin/quickstart"
if [[ ! -x "$QUICKSTART" ]]; then
  echo "demo.sh: $QUICKSTART was not built" >&2
  exit 1
fi

echo
echo "demo.sh: running $QUICKSTART (embedded default: no GT_ADDRESS)"
echo "------------------------------------------------------------"
env -u GT_ADDRESS "$QUICKSTART"
echo "------------------------------------------------------------"
echo "demo.sh: quickstart finished"
