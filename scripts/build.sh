#!/usr/bin/env bash
# Installs missing dependencies (deps.sh), configures build/ (or $GT_BUILD_DIR) with CMake +
# Ninja and builds everything.
#
#   scripts/build.sh [extra cmake args...]      e.g. scripts/build.sh -DGT_CUDA=OFF
#   GT_CMAKE_ARGS="-DGT_SANITIZE=ON" scripts/build.sh
#   GT_BUILD_DIR=/tmp/gt-build scripts/build.sh
#   GT_SKIP_DEPS=1 scripts/build.sh             skip the dependency check
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

if [[ "${GT_SKIP_DEPS:-0}" != 1 ]]; then
  "$ROOT/scripts/deps.sh"
fi

BUILD=${GT_BUILD_DIR:-$ROOT/build}
# Word-split GT_CMAKE_ARGS on purpose: it holds several -D flags.
read -r -a env_args <<<"${GT_CMAKE_ARGS:-}"

echo "build.sh: configuring $BUILD"
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "${env_args[@]}" "$@"
echo "build.sh: building with $(nproc) jobs"
cmake --build "$BUILD" -- -j"$(nproc)"
echo "build.sh: built in $BUILD"
