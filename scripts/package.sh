#!/usr/bin/env bash
# Builds the Debian packages (deploy/debian/packaging.cmake) into build/packages:
#   gt-dispatcher, gt-worker, libgtclient0, libgtclient-dev, python3-gt   (*.deb)
# from a build tree of its own (build/deb-build), configured for the packages' paths:
# prefix /usr (multiarch libdir) and the gt Python package in /usr/lib/python3/dist-packages.
# Only what the packages hold is built there (not the tests), so with ccache it is quick.
#
#   scripts/package.sh [extra cmake args...]
#   GT_DEB_BUILD_DIR (default build/deb-build), GT_DEB_OUT (default build/packages)
#   GT_DEB_CUDA (default OFF): ON packages a CUDA worker, which then needs the CUDA runtime from
#     /usr/local/cuda on the target (no Debian package provides it; see packaging.cmake).
#   GT_CMAKE_ARGS, GT_SKIP_DEPS as for build.sh
#
# Install: apt install ./build/packages/*.deb   Check: tests/deb/check_packages.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
if [[ "${GT_SKIP_DEPS:-0}" != 1 ]]; then
  "$ROOT/scripts/deps.sh"
fi
# Absolute: cpack runs inside $BUILD.
BUILD=$(realpath -m "${GT_DEB_BUILD_DIR:-$ROOT/build/deb-build}")
OUT=$(realpath -m "${GT_DEB_OUT:-$ROOT/build/packages}")
read -r -a env_args <<<"${GT_CMAKE_ARGS:-}"
# A tree of its own would otherwise recompile everything the dev build compiled; ccache (where
# installed) makes those compiles hits. Arguments given below still override it.
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi

echo "package.sh: configuring $BUILD"
mkdir -p "$BUILD"
# CMAKE_SKIP_INSTALL_ALL_DEPENDENCY: cpack would otherwise build `all` (tests, benchmarks) first.
# :STRING, as a relative PATH given with -D would be made absolute (against the cwd).
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_INSTALL_PREFIX=/usr -DGT_PYTHON_INSTALL_DIR:STRING=lib/python3/dist-packages \
  -DGT_CUDA="${GT_DEB_CUDA:-OFF}" -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON \
  "${launcher[@]}" "${env_args[@]}" "$@" >"$BUILD/configure.log" 2>&1 || {
  cat "$BUILD/configure.log"; echo "package.sh: configure FAILED" >&2; exit 1; }

targets=(gt-dispatcherd gt-top gt-trace gt-workerd gtclient_shared gtclient_sdk_static)
# gt_python exists only where pybind11 and python3-dev were found (python3-gt is skipped then).
if ninja -C "$BUILD" -t query gt_python >/dev/null 2>&1; then
  targets+=(gt_python)
fi
echo "package.sh: building ${targets[*]}"
cmake --build "$BUILD" --target "${targets[@]}" -- -j"$(nproc)"

echo "package.sh: cpack -G DEB -> $OUT"
rm -rf "$OUT"
mkdir -p "$OUT"
(cd "$BUILD" && cpack -G DEB -B "$OUT/_cpack") || {
  echo "package.sh: cpack FAILED" >&2; exit 1; }
mv "$OUT"/_cpack/*.deb "$OUT"/
rm -rf "$OUT/_cpack"
ls -l "$OUT"
