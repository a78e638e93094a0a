#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang + AddressSanitizer + UBSan into
# build-fuzz/ (or $GT_FUZZ_BUILD_DIR) and runs every target for SECONDS on a copy of its seed
# corpus (tests/fuzz/corpus/<target>/ is never written). Prints each target's exec count and
# any crash; exits non-zero if any target crashed (crash, leak, timeout, out-of-memory).
#
#   scripts/fuzz.sh SECONDS [TARGET...]     targets: frame_codec handshake client_batch worker_batch
#                                                     reply_payload
#   GT_FUZZ_CPU=1 scripts/fuzz.sh 60        pin each fuzzer to CPU 1 (taskset)
#   GT_FUZZ_WORK_DIR=/tmp/f scripts/fuzz.sh 60   keep the grown corpora and artifacts there
#   GT_FUZZ_JOBS=2                          build parallelism (default 2)
#   GT_SKIP_DEPS=1                          skip the dependency check (scripts/deps.sh)
#
# Each fuzzer runs in one process on one core. A crashing input is left in the work dir as
# <target>/crash-* (or leak-/timeout-/oom-); reproduce it with build-fuzz/bin/fuzz_<target> FILE.
set -euo pipefail

if [[ $# -lt 1 || ! "$1" =~ ^[0-9]+$ ]]; then
  echo "usage: scripts/fuzz.sh SECONDS [TARGET...]" >&2
  exit 2
fi
SECONDS_EACH=$1
shift
ALL_TARGETS=(frame_codec handshake client_batch worker_batch reply_payload)
TARGETS=("$@")
[[ ${#TARGETS[@]} -eq 0 ]] && TARGETS=("${ALL_TARGETS[@]}")

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${GT_FUZZ_BUILD_DIR:-$ROOT/build-fuzz}
JOBS=${GT_FUZZ_JOBS:-2}

if [[ "${GT_SKIP_DEPS:-0}" != 1 ]]; then
  "$ROOT/scripts/deps.sh"  # clang and libclang-rt-14-dev (libFuzzer, sanitizer runtimes)
fi

if [[ ! -f "$BUILD/CMakeCache.txt" ]]; then
  echo "fuzz.sh: configuring $BUILD (clang, GT_FUZZ=ON: -fsanitize=fuzzer,address,undefined)"
  # -O1 -g and no NDEBUG: assertions stay on, stack traces stay readable.
  CC=clang CXX=clang++ cmake -S "$ROOT" -B "$BUILD" -G Ninja -DGT_FUZZ=ON -DGT_CUDA=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g"
fi
build_targets=()
for t in "${TARGETS[@]}"; do build_targets+=("fuzz_$t"); done
echo "fuzz.sh: building ${build_targets[*]} with $JOBS jobs"
cmake --build "$BUILD" -j "$JOBS" --target "${build_targets[@]}"

WORK=${GT_FUZZ_WORK_DIR:-$(mktemp -d /tmp/gt-fuzz.XXXXXX)}
mkdir -p "$WORK"
PIN=()
if [[ -n "${GT_FUZZ_CPU:-}" ]] && command -v taskset >/dev/null; then PIN=(taskset -c "$GT_FUZZ_CPU"); fi

# Sanitizer reports are fatal, so libFuzzer records them as crashes with their input.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

declare -A EXECS RESULT
failed=0
for t in "${TARGETS[@]}"; do
  dir="$WORK/$t"
  mkdir -p "$dir/corpus"
  if [[ -d "$ROOT/tests/fuzz/corpus/$t" ]]; then cp -r "$ROOT/tests/fuzz/corpus/$t/." "$dir/corpus/"; fi
  log="$dir/fuzz.log"
  echo "fuzz.sh: $t for ${SECONDS_EACH}s (log: $log)"
  set +e
  # -timeout: a single input that runs this long is reported (a hang, or a harness bound that
  # is too loose); -rss_limit_mb bounds the process; inputs stay below 64 KiB.
  "${PIN[@]}" "$BUILD/bin/fuzz_$t" "$dir/corpus" -max_total_time="$SECONDS_EACH" \
    -timeout=30 -rss_limit_mb=2560 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$dir/" >"$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  EXECS[$t]=${execs:-?}
  artifacts=$(find "$dir" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | sort)
  if [[ $rc -ne 0 || -n "$artifacts" ]]; then
    RESULT[$t]="FAILED (exit $rc) ${artifacts//$'\n'/ }"
    failed=1
    echo "fuzz.sh: $t FAILED; the report:"
    grep -E 'ERROR|SUMMARY|GT_FUZZ_CHECK|runtime error|^ +#[0-9]+ ' "$log" | head -40 || true
  else
    RESULT[$t]="ok"
  fi
done

echo
echo "fuzz.sh: ${SECONDS_EACH}s per target, work dir $WORK"
printf '  %-14s %12s  %s\n' target execs result
for t in "${TARGETS[@]}"; do
  printf '  %-14s %12s  %s\n' "$t" "${EXECS[$t]}" "${RESULT[$t]}"
done
exit $failed
