#!/usr/bin/env bash
# Builds the CUDA binaries on this (GPU-less) machine and packs them for a GPU machine:
# the daemons, the [.gpu] test programs and the benchmarks device-check.sh runs (BINS below;
# debug info stripped) plus every shared library they load that a GPU machine cannot be
# assumed to have -- everything `ldd` lists except glibc, libstdc++/libgcc_s and the CUDA/driver libraries (the GPU machine brings
# its own CUDA 13 runtime and cuBLAS; NCCL, which gt-workerd loads at run time, is not shipped:
# libnccl.so.2 is ~200 MB). scripts/device-check.sh runs the result there.
#
#   scripts/device-bundle.sh        -> device-bundle/gt-device-bundle.tar.xz (+ MANIFEST)
#   GT_CUDA_BUILD_DIR=...           build folder (default build-cuda)
#   GT_BUNDLE_DIR=...               output folder (default device-bundle; must be git-ignored)
#   GT_JOBS=N                       build jobs (default: all cores), run under nice
#
# The bundle is one compressed file because the device tool carries at most 64 MiB of tree.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${GT_CUDA_BUILD_DIR:-$ROOT/build-cuda}
OUT=${GT_BUNDLE_DIR:-$ROOT/device-bundle}
JOBS=${GT_JOBS:-$(nproc)}
BINS=(gt-dispatcherd gt-workerd test_cuda_parity test_cuda_daemons test_nccl_link gt-bench-gpu
      gt-bench-kernels gt-bench gt-bench-mlp gt-bench-chain gt-bench-dp gt-bench-bandwidth)

echo "device-bundle: configuring $BUILD (GT_CUDA=ON)"
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DGT_CUDA=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
echo "device-bundle: building ${BINS[*]} with $JOBS jobs"
nice -n 19 ninja -C "$BUILD" -j"$JOBS" "${BINS[@]}"

STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/gt-device-bundle/bin" "$STAGE/gt-device-bundle/lib"
for b in "${BINS[@]}"; do
  cp "$BUILD/bin/$b" "$STAGE/gt-device-bundle/bin/"
  strip --strip-debug "$STAGE/gt-device-bundle/bin/$b"
done

# System = glibc, the C++ runtime (the GPU machine's is at least as new) and CUDA/driver libs.
is_system() {
  case "$(basename "$1")" in
    libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux*|libresolv.so.*) return 0 ;;
    libstdc++.so.*|libgcc_s.so.*) return 0 ;;
    libcuda.so.*|libcudart.so.*|libcublas.so.*|libcublasLt.so.*|libnvidia-*|libnccl.so.*) return 0 ;;
  esac
  return 1
}
# A library ldd cannot find here would be missing there too: stop now, not on the GPU machine.
unresolved=$(for b in "${BINS[@]}"; do ldd "$BUILD/bin/$b" 2>&1 | sed "s|^|$b: |"; done | grep 'not found' || true)
if [[ -n "$unresolved" ]]; then
  echo "device-bundle: unresolved libraries:" >&2; echo "$unresolved" >&2; exit 1
fi
for b in "${BINS[@]}"; do
  ldd "$BUILD/bin/$b" | awk '/=> \//{print $3}'
done | sort -u | while read -r lib; do
  if ! is_system "$lib"; then cp -L "$lib" "$STAGE/gt-device-bundle/lib/"; fi
done

{
  echo "built $(date -u +%FT%TZ) on $(uname -n) from $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet 2>/dev/null || echo '+local changes')"
  echo "nvcc: $(nvcc --version 2>/dev/null | tail -1)"
  echo "bin:"; ls -l "$STAGE/gt-device-bundle/bin" | tail -n +2
  echo "lib:"; ls -l "$STAGE/gt-device-bundle/lib" | tail -n +2
} >"$STAGE/gt-device-bundle/MANIFEST"

mkdir -p "$OUT"
rm -f "$OUT/gt-device-bundle.tar.xz"
tar -C "$STAGE" -cf - gt-device-bundle | xz -T0 -6 >"$OUT/gt-device-bundle.tar.xz"
cp "$STAGE/gt-device-bundle/MANIFEST" "$OUT/MANIFEST"
echo "device-bundle: $(du -h "$OUT/gt-device-bundle.tar.xz" | cut -f1) in $OUT/gt-device-bundle.tar.xz"
# The device tool carries at most 64 MiB of ignored paths in all.
if (( $(stat -c %s "$OUT/gt-device-bundle.tar.xz") > 60 * 1024 * 1024 )); then
  echo "device-bundle: WARNING: over 60 MiB: the device tool's carry takes 64 MiB in all" >&2
fi
if ! git -C "$ROOT" check-ignore -q "$OUT/gt-device-bundle.tar.xz" 2>/dev/null; then
  echo "device-bundle: WARNING: $OUT is not git-ignored (add '/device-bundle/' to .gitignore)" >&2
fi
