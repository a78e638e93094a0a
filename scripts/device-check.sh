#!/usr/bin/env bash
# One command on a machine with an NVIDIA GPU (issues 4, 10): records the machine (nvidia-smi,
# driver, the libraries resolved), runs each GPU-tagged test case ([.gpu] of test_cuda_parity and
# test_cuda_daemons) in its own process, failures again with CUDA_LAUNCH_BLOCKING=1, the kernel
# table (gt-bench-kernels: each kernel vs D2D copy, results checked), the service benchmarks
# (gt-bench-gpu, then its TF32 GEMM pass), gt-bench and gt-bench-mlp through a CUDA worker beside
# PyTorch on the same GPU (when a Python with CUDA torch is found), gt-bench-mlp with CUDA
# graphs on and off, in segments and without early fetches, and gt-bench-chain (fused NVRTC
# kernels; issue 11), two CUDA workers data parallel
# on GPU 0 with peer_transport auto (must fall back to the staged link and say so) and, with two
# GPUs, over NCCL (issue 5), and prints one summary table. A healthy run takes a few minutes on an
# H200. One deadline bounds the whole run (GT_DEVICE_CHECK_BUDGET_S, 480 s by default, so give the
# device tool 600 s): every step's timeout is cut to what is left, a step that would start with
# under 20 s left is skipped, and the summary is printed (and kept in $OUT/summary.txt) whatever
# happened. Processes are stopped with SIGTERM, then SIGKILL after 10 s.
#
# Binaries come from, first found:
#   $GT_BUNDLE, or device-bundle/gt-device-bundle.tar.xz  (made by scripts/device-bundle.sh on
#                                                        the build machine; CUDA libs excepted)
#   $GT_BIN_DIR                                          (a folder holding the bundle's binaries)
#   a fresh CUDA build into build-device/                (GT_DEVICE_BUILD=1 only: needs every
#                                                        build dependency, and minutes)
# Logs go to $OUT (the device tool's output folder) when set, else to a temporary folder.
#
#   scripts/device-check.sh [--quick]    --quick: smaller benchmark sizes (a smoke run)
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
QUICK=""
[[ "${1:-}" == "--quick" ]] && QUICK="--quick"
LOGS=${OUT:-$(mktemp -d /tmp/gt-device-check-XXXXXX)}
mkdir -p "$LOGS"
T0=$(date +%s)
BUDGET=${GT_DEVICE_CHECK_BUDGET_S:-480}

# Seconds left of the run's budget; a step's timeout cut to them (at least 1).
left() { echo $(( T0 + BUDGET - $(date +%s) )); }
tmo() { local want=$1 l; l=$(left); (( l < want )) && want=$l; (( want < 1 )) && want=1; echo "$want"; }
# True when a step may still start (else it is skipped, and says so).
may_start() {
  (( $(left) >= 20 )) && return 0
  echo "device-check: out of time, skipped: $1"
  SKIPPED+=("$1")
  return 1
}
SKIPPED=()
# Stops processes: SIGTERM, 10 s to go, then SIGKILL (a worker's shutdown waits for its GPU).
stop_procs() {
  local p
  (( $# )) || return 0
  kill "$@" 2>/dev/null
  for _ in $(seq 100); do
    local alive=0
    for p in "$@"; do kill -0 "$p" 2>/dev/null && alive=1; done
    (( alive )) || break
    sleep 0.1
  done
  kill -9 "$@" 2>/dev/null
  wait "$@" 2>/dev/null
  return 0
}

BUNDLE=${GT_BUNDLE:-$ROOT/device-bundle/gt-device-bundle.tar.xz}
UNPACK=""
if [[ -f "$BUNDLE" ]]; then
  UNPACK=$(mktemp -d /tmp/gt-bundle-XXXXXX)
  tar -C "$UNPACK" -xJf "$BUNDLE" || { echo "device-check: cannot unpack $BUNDLE (xz?)"; exit 1; }
  BIN=$UNPACK/gt-device-bundle/bin
  LIB=$UNPACK/gt-device-bundle/lib
  echo "device-check: bundle $BUNDLE"; head -2 "$UNPACK/gt-device-bundle/MANIFEST"
elif [[ -n "${GT_BIN_DIR:-}" ]]; then
  BIN=$GT_BIN_DIR
  LIB=""
elif [[ "${GT_DEVICE_BUILD:-0}" != 1 ]]; then
  echo "device-check: no bundle at $BUNDLE and no GT_BIN_DIR: pass the bundle (the device"
  echo "device-check: tool's carry: [\"device-bundle\"], made by scripts/device-bundle.sh), or set"
  echo "device-check: GT_DEVICE_BUILD=1 to build here (minutes)"
  exit 1
else
  echo "device-check: no bundle: building into build-device/"
  cmake -S "$ROOT" -B "$ROOT/build-device" -G Ninja -DGT_CUDA=ON >"$LOGS/build.log" 2>&1 &&
    ninja -C "$ROOT/build-device" gt-dispatcherd gt-workerd test_cuda_parity test_cuda_daemons \
      gt-bench-gpu gt-bench-kernels gt-bench gt-bench-mlp gt-bench-chain gt-bench-dp gt-bench-bandwidth test_nccl_link \
      >>"$LOGS/build.log" 2>&1 || { echo "device-check: build failed (see $LOGS/build.log)"; exit 1; }
  BIN=$ROOT/build-device/bin
  LIB=""
fi

# The bundle's libraries first, then wherever this machine keeps CUDA's runtime and cuBLAS
# (libnccl.so.2 and libnvrtc are loaded at run time from the machine's own library path). Only
# GT's programs get this path: Python and torch keep the machine's own (the bundle carries the
# build machine's copies of base libraries, and torch its own CUDA libraries).
ORIG_LDP=${LD_LIBRARY_PATH:-}
GT_LDP=""
for d in "$LIB" /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib \
         $ORIG_LDP; do
  [[ -n "$d" && -d "$d" ]] && GT_LDP="${GT_LDP:+$GT_LDP:}$d"
done
export LD_LIBRARY_PATH=$GT_LDP
export GT_BIN_DIR=$BIN

timeout 20 nvidia-smi -L 2>/dev/null || echo "device-check: nvidia-smi not available"
missing=$(for b in gt-dispatcherd gt-workerd test_cuda_parity test_cuda_daemons gt-bench-gpu \
            gt-bench-kernels gt-bench gt-bench-mlp gt-bench-chain gt-bench-dp gt-bench-bandwidth \
            test_nccl_link; do ldd "$BIN/$b" 2>&1 | sed "s|^|$b: |"; done | grep 'not found' | sort -u)
if [[ -n "$missing" ]]; then
  echo "device-check: unresolved libraries:"; echo "$missing"; exit 1
fi

# What the machine is, for the record.
{
  timeout 20 nvidia-smi 2>&1
  timeout 20 nvidia-smi --query-gpu=name,uuid,pci.bus_id,memory.total,driver_version,compute_cap \
    --format=csv 2>&1
  echo "--- libraries the binaries resolve"
  ldd "$BIN/gt-workerd" "$BIN/test_cuda_parity" 2>&1 | grep -E 'cuda|cublas|nccl|not found' | sort -u
  ls -l /usr/local/cuda/lib64/libcudart.so* /usr/local/cuda/lib64/libcublas.so* 2>/dev/null
  ls -l /usr/lib/x86_64-linux-gnu/libnccl.so* 2>/dev/null
  echo "--- run-time loaded: NVRTC and NCCL as the loader finds them"
  ldconfig -p 2>/dev/null | grep -E 'libnvrtc|libnccl' || true
  echo "LD_LIBRARY_PATH for GT: $GT_LDP"
} >"$LOGS/machine.log" 2>&1
# The test daemons' logs are kept (their /tmp folders are copied into $LOGS at the end).
export GT_KEEP_TEST_LOGS=1

# The summary table (printed at the end, or by the EXIT trap when the run is cut short).
summary() {
echo
echo "==================== device-check summary ($(( $(date +%s) - T0 )) s) ===================="
timeout 20 nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/GPU: /'
printf '| %-28s | %-18s | %-18s | %-6s | %-7s | %s |\n' metric GT baseline ratio target result
printf '| %-28s | %-18s | %-18s | %-6s | %-7s | %s |\n' "[.gpu] tests (rc $TEST_RC)" "${TEST_LINE:0:18}" - - - \
  "$([[ $TEST_RC == 0 ]] && echo PASS || echo FAIL)"
grep -h '^SUMMARY' "$LOGS/kernels.log" "$LOGS/bench.log" "$LOGS/bench_tf32.log" | sed 's/^SUMMARY //'
printf '| %-28s | %-18s | %-18s | %-6s | %-7s | %s |\n' "gt-bench: small-op stream" "${SMALL_LINE:0:18}" \
  - - ">=150k/s" "$([[ $SVC_RC == 0 ]] && echo ran || echo FAIL)"
printf '| %-28s | %-18s | %-18s | %-6s | %-7s | %s |\n' "MLP step, CUDA worker" "${MLP_LINE:0:18}" \
  "PyTorch, same GPU" - "<=1.5x" "$([[ $SVC_RC == 0 ]] && echo ran || echo FAIL)"
printf '| %-28s | %-18s | %-18s | %-6s | %-7s | %s |\n' "MLP hot step, graphs on/off" "${GRAPHS_LINE:0:18}" \
  "graphs off" - "faster" "$([[ $GRAPHS_RC == 0 ]] && echo ran || echo FAIL)"
printf '| %-28s | %-18s | %-18s | %-6s | %-7s | %s |\n' "MLP hot step, segments of 8" "${SEGMENTS_LINE:0:18}" \
  "whole (default)" - "faster?" "$([[ $GRAPHS_RC == 0 ]] && echo ran || echo FAIL)"
printf '| %-28s | %-18s | %-18s | %-6s | %-7s | %s |\n' "MLP hot step, early fetches" "${EARLY_LINE:0:18}" \
  "early_fetches off" - "faster" "$([[ $GRAPHS_RC == 0 ]] && echo ran || echo FAIL)"
echo "| (early fetches on vs off: $EARLY_LINE)"
printf '| %-28s | %-18s | %-18s | %-6s | %-7s | %s |\n' "fused chain 16M, loop" "${CHAIN_LINE:0:18}" \
  "GT eager" - ">=2.5x" "$([[ $CHAIN_RC == 0 && -n $CHAIN_LINE ]] && echo ran || echo FAIL)"
printf '| %-28s | %-18s | %-18s | %-6s | %-7s | %s |\n' "2 CUDA workers, 1 GPU, auto" "${DP_LINE:0:18}" \
  "1 worker" - "same loss" "$([[ $DP_RC == 0 ]] && echo PASS || echo FAIL) (${DP_FALLBACK:-no fallback message})"
printf '| %-28s | %-18s | %-18s | %-6s | %-7s | %s |\n' "2 CUDA workers, gt::compile" "${DP_HOT_LINE:0:18}" \
  "eager, 2 workers" - "bitwise" "$([[ $DP_RC == 0 ]] && echo PASS || echo FAIL)"
printf '| %-28s | %-18s | %-18s | %-6s | %-7s | %s |\n' "2 CUDA workers, NCCL (rc $NCCL_RC)" - \
  "1 worker" - "same loss" "$NCCL_RESULT"
[[ $BENCH_RC == 0 ]] || echo "| gt-bench-gpu exited $BENCH_RC (see $LOGS/bench.log)"
[[ $TF32_RC == 0 ]] || echo "| gt-bench-gpu --tf32 exited $TF32_RC (see $LOGS/bench_tf32.log)"
[[ $KERNELS_RC == 0 ]] || echo "| gt-bench-kernels exited $KERNELS_RC (a WRONG RESULT row, or see $LOGS/kernels.log)"
(( ${#SKIPPED[@]} )) && printf '| skipped (out of time): %s\n' "${SKIPPED[@]}"
echo "logs: $LOGS"
}

# What the summary reads, in case a step never runs; the summary is printed at the end, or by
# the trap if the run is cut short (the device tool's limit: SIGTERM).
TEST_RC=1; TEST_LINE="not run"; KERNELS_RC=1; BENCH_RC=1; TF32_RC=1; DP_RC=1; SVC_RC=1
GRAPHS_RC=1; CHAIN_RC=1; NCCL_RC=0; NCCL_RESULT="not run"; SMALL_LINE=""; MLP_LINE=""
GRAPHS_LINE=""; SEGMENTS_LINE=""; EARLY_LINE=""; CHAIN_LINE=""; DP_LINE=""; DP_HOT_LINE=""; DP_FALLBACK=""
SUMMARY_DONE=0
on_exit() {
  [[ -n "$UNPACK" ]] && rm -rf "$UNPACK"
  (( SUMMARY_DONE )) || { SUMMARY_DONE=1; summary | tee "$LOGS/summary.txt"; }
}
trap on_exit EXIT
trap 'echo "device-check: terminated"; exit 143' TERM INT

# 1. Parity, runtime and worker-process tests (Catch2 v2: hidden tag selected explicitly), each
# test case in its own process: a sticky CUDA error in one (an illegal address) cannot fail the
# cases after it. A failing case runs again with CUDA_LAUNCH_BLOCKING=1, so the error points at
# its launch.
echo "device-check: tests ([.gpu]), one process per case"
# GT_GPU_TESTS_REQUIRE_DEVICE: without a visible GPU the cases fail instead of skipping.
export GT_GPU_TESTS_REQUIRE_DEVICE=1
mkdir -p "$LOGS/tests"
TEST_RC=0
TESTS_RUN=0
TESTS_FAILED=()
TESTS_LISTED=0
TEST_DEADLINE=$(( $(date +%s) + $(tmo 180) ))
run_cases() {  # run_cases EXECUTABLE PER_CASE_TIMEOUT_S
  local exe=$1 limit=$2 name spec log
  timeout 30 "$BIN/$exe" '[.gpu]' --list-test-names-only 2>/dev/null </dev/null | sed '/^$/d' \
    >"$LOGS/tests/$exe.txt"
  local listed
  listed=$(wc -l <"$LOGS/tests/$exe.txt")
  TESTS_LISTED=$((TESTS_LISTED + listed))
  if (( listed == 0 )); then
    echo "device-check: $exe listed no [.gpu] case"
    TEST_RC=1
    return
  fi
  while IFS= read -r name; do
    # (a failing case runs twice: it needs room for both)
    (( $(date +%s) + 2 * limit > TEST_DEADLINE )) && limit=$(( (TEST_DEADLINE - $(date +%s)) / 2 ))
    (( limit < 5 )) && { echo "device-check: test time is up"; TEST_RC=1; return; }
    TESTS_RUN=$((TESTS_RUN + 1))
    log="$LOGS/tests/case-$TESTS_RUN.log"
    # Catch2 takes a name as a test spec: commas and brackets are escaped (else a list or a tag),
    # and -w NoTests makes a name that matched nothing a failure, not a silent pass.
    spec=$(printf '%s' "$name" | sed 's/\([],[]\)/\\\1/g')
    if ! timeout -k 10 "$limit" "$BIN/$exe" "$spec" -w NoTests -r compact --durations yes \
        >"$log" 2>&1 </dev/null; then
      TESTS_FAILED+=("$name")
      TEST_RC=1
      CUDA_LAUNCH_BLOCKING=1 timeout -k 10 "$limit" "$BIN/$exe" "$spec" -r compact \
        >"$LOGS/tests/case-$TESTS_RUN-blocking.log" 2>&1 </dev/null
      echo "FAILED: $name ($log; with CUDA_LAUNCH_BLOCKING=1: ${log%.log}-blocking.log)"
      grep -E 'failed|FAILED|elements differ|CUDA error' "$log" | head -8
    fi
  done <"$LOGS/tests/$exe.txt"
}
# The worker-process cases first (few, and the NCCL load check among them), then the parity ones.
run_cases test_cuda_daemons 40
run_cases test_cuda_parity 60
(( TESTS_RUN < TESTS_LISTED )) && TEST_RC=1
TEST_LINE="$((TESTS_RUN - ${#TESTS_FAILED[@]}))/$TESTS_RUN of $TESTS_LISTED pass"
echo "device-check: tests rc=$TEST_RC: $TEST_LINE"

# 2. Benchmarks (TF32 only in the second pass: gt-bench-gpu --tf32 starts its worker with
# --allow-tf32).
echo "device-check: kernel table (gt-bench-kernels)"
may_start "gt-bench-kernels" && {
  timeout -k 10 "$(tmo 60)" stdbuf -oL "$BIN/gt-bench-kernels" $QUICK >"$LOGS/kernels.log" 2>&1
  KERNELS_RC=$?
}
touch "$LOGS/kernels.log"
grep -v '^SUMMARY' "$LOGS/kernels.log"
echo "device-check: benchmarks"
may_start "gt-bench-gpu" && {
  timeout -k 10 "$(tmo 100)" stdbuf -oL "$BIN/gt-bench-gpu" $QUICK >"$LOGS/bench.log" 2>&1
  BENCH_RC=$?
}
touch "$LOGS/bench.log"
cat "$LOGS/bench.log" | grep -v '^SUMMARY'
may_start "gt-bench-gpu --tf32" && {
  timeout -k 10 "$(tmo 40)" stdbuf -oL "$BIN/gt-bench-gpu" --tf32 $QUICK >"$LOGS/bench_tf32.log" 2>&1
  TF32_RC=$?
}
touch "$LOGS/bench_tf32.log"
grep -v '^SUMMARY' "$LOGS/bench_tf32.log"

# 3. Sharding across two CUDA workers on GPU 0 (issue 5): gt-bench-dp trains the same MLP on 1
# worker and data parallel on 2, exits non-zero when the losses differ, and reports the bytes the
# workers exchanged per step. The workers run the default peer_transport (auto): with NCCL
# loadable, its header exchange sees one GPU shared and falls back to the staged TCP link; without
# NCCL they use the staged link from the start. Either way a worker must say so in its log.
echo "device-check: two CUDA workers on GPU 0, data parallel, peer_transport auto"
touch "$LOGS/dp.log"
if may_start "data parallel, 2 workers on GPU 0"; then
DPORT_FILE=$LOGS/dp-port
# Workers register over the dispatcher's Unix socket (no worker secret: TCP workers are refused).
DSOCK_DIR=$(mktemp -d /tmp/gt-dp-XXXXXX)
DSOCK=$DSOCK_DIR/dispatcher.sock
"$BIN/gt-dispatcherd" --port 0 --port-file "$DPORT_FILE" --unix-socket "$DSOCK" --min-workers 2 \
  --log-level warn >"$LOGS/dp-dispatcher.log" 2>&1 &
DPID=$!
for _ in $(seq 100); do [[ -s "$DPORT_FILE" ]] && break; sleep 0.1; done
if [[ -s "$DPORT_FILE" ]]; then
  DADDR=127.0.0.1:$(cat "$DPORT_FILE")
  "$BIN/gt-workerd" --dispatcher "unix:$DSOCK" --device 0 --log-level info >"$LOGS/dp-worker0.log" 2>&1 &
  W0=$!
  "$BIN/gt-workerd" --dispatcher "unix:$DSOCK" --device 0 --log-level info >"$LOGS/dp-worker1.log" 2>&1 &
  W1=$!
  GT_ADDRESS=$DADDR timeout -k 10 "$(tmo 80)" stdbuf -oL "$BIN/gt-bench-dp" 30 >"$LOGS/dp.log" 2>&1
  DP_RC=$?
  stop_procs "$W0" "$W1"
fi
stop_procs "$DPID"
rm -rf "$DSOCK_DIR"
cat "$LOGS/dp.log"
DP_LINE=$(grep -o 'ratio [0-9.]*x of 1 worker' "$LOGS/dp.log" | head -1)
DP_HOT_LINE=$(grep -o 'ratio [0-9.]*x of eager' "$LOGS/dp.log" | head -1)
DP_FALLBACK=$(grep -hoE 'share a GPU, which NCCL cannot serve|no NCCL \(|staging cuda tensors through host buffers' \
  "$LOGS/dp-worker0.log" "$LOGS/dp-worker1.log" | head -1)
echo "device-check: staged fallback said: ${DP_FALLBACK:-nothing}"
[[ -n "$DP_FALLBACK" ]] || DP_RC=1
fi

# 3b. The service with a CUDA worker: gt-bench (small-op stream, fetch round trip, matmul +
# fetch) and gt-bench-mlp, and the same MLP step in PyTorch on the same GPU when a Python with
# CUDA torch is found (the bundle's Python module is built for Debian's Python, so the Python
# client's own benchmark does not run here).
echo "device-check: gt-bench and gt-bench-mlp through a CUDA worker"
touch "$LOGS/svc-mlp.log" "$LOGS/svc-gt-bench.log"
# gt-bench-mlp as a Python program runs it: with GT's library path, Python without it.
MLP_WRAPPER=$LOGS/gt-bench-mlp.sh
printf '#!/bin/sh\nLD_LIBRARY_PATH=%q exec %q "$@"\n' "$GT_LDP" "$BIN/gt-bench-mlp" >"$MLP_WRAPPER"
chmod +x "$MLP_WRAPPER"
if may_start "gt-bench / gt-bench-mlp through a CUDA worker"; then
SVC_DIR=$(mktemp -d /tmp/gt-svc-XXXXXX)
"$BIN/gt-dispatcherd" --port 0 --port-file "$SVC_DIR/port" --unix-socket "$SVC_DIR/d.sock" \
  --log-level warn >"$LOGS/svc-dispatcher.log" 2>&1 &
SPID=$!
for _ in $(seq 100); do [[ -s "$SVC_DIR/port" ]] && break; sleep 0.1; done
"$BIN/gt-workerd" --dispatcher "unix:$SVC_DIR/d.sock" --device 0 --log-level warn \
  >"$LOGS/svc-worker.log" 2>&1 &
SWID=$!
sleep 2
SADDR=127.0.0.1:$(cat "$SVC_DIR/port" 2>/dev/null)
GT_ADDRESS=$SADDR timeout -k 10 "$(tmo 45)" stdbuf -oL "$BIN/gt-bench" >"$LOGS/svc-gt-bench.log" 2>&1
SVC_RC=$?
cat "$LOGS/svc-gt-bench.log"
TORCH_PY=""
for py in /opt/torch/.venv/bin/python3 python3; do
  if command -v "$py" >/dev/null 2>&1 && \
     LD_LIBRARY_PATH=$ORIG_LDP timeout -k 5 "$(tmo 40)" "$py" \
       -c 'import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    TORCH_PY=$py; break
  fi
done
if [[ -n "$TORCH_PY" ]]; then
  GT_ADDRESS=$SADDR LD_LIBRARY_PATH=$ORIG_LDP timeout -k 10 "$(tmo 60)" "$TORCH_PY" \
    "$ROOT/bench/compare_torch.py" --device cuda --gt-bench "$MLP_WRAPPER" >"$LOGS/svc-mlp.log" 2>&1 \
    || SVC_RC=1
else
  GT_ADDRESS=$SADDR timeout -k 10 "$(tmo 60)" stdbuf -oL "$BIN/gt-bench-mlp" >"$LOGS/svc-mlp.log" 2>&1 \
    || SVC_RC=1
  echo "(no Python with CUDA torch here: GT's MLP step alone)" >>"$LOGS/svc-mlp.log"
fi
grep -q 'GT (client autograd + daemons): median' "$LOGS/svc-mlp.log" || SVC_RC=1
cat "$LOGS/svc-mlp.log"
# Upload / fetch bandwidth through the CUDA worker (issue 15): a local client on the Unix socket
# (shared memory: the worker's device copies land in the client's arena), then the sockets.
touch "$LOGS/svc-bandwidth.log"
if may_start "gt-bench-bandwidth"; then
  GT_ADDRESS=unix:$SVC_DIR/d.sock timeout -k 10 "$(tmo 60)" stdbuf -oL "$BIN/gt-bench-bandwidth" \
    --reps 3 >"$LOGS/svc-bandwidth.log" 2>&1 || SVC_RC=1
fi
if may_start "gt-bench-bandwidth over sockets"; then
  GT_SHM=0 GT_ADDRESS=unix:$SVC_DIR/d.sock timeout -k 10 "$(tmo 90)" stdbuf -oL \
    "$BIN/gt-bench-bandwidth" --reps 3 >>"$LOGS/svc-bandwidth.log" 2>&1 || SVC_RC=1
fi
cat "$LOGS/svc-bandwidth.log"
stop_procs "$SWID" "$SPID"
rm -rf "$SVC_DIR"
fi

# 3c. Hot paths as CUDA graphs (issue 11): gt-bench-mlp's hot-path steps through a CUDA worker
# with device_graphs on and off, one after the other on the same GPU; then graphs on with the
# dispatcher cutting stretches into segments (hot_path_segment 8: the first segment's graph runs
# while the client builds the rest; off by default until this row shows it pays on a GPU host);
# then graphs on with early_fetches off (a step's loss answered only once its whole path ran).
echo "device-check: gt-bench-mlp with CUDA graphs on and off, in segments, without early fetches"
GRAPHS_RC=0
declare -A GRAPH_STEP GRAPH_LOOP
touch "$LOGS/chain.log"
for run in true false seg8 noearly; do
  flag=$run; SEGMENT=0; EARLY=true
  [[ $run == seg8 ]] && { flag=true; SEGMENT=8; }
  [[ $run == noearly ]] && { flag=true; EARLY=false; }
  may_start "gt-bench-mlp, device graphs $flag, hot_path_segment $SEGMENT" || { GRAPHS_RC=1; continue; }
  GDIR=$(mktemp -d /tmp/gt-graphs-XXXXXX)
  "$BIN/gt-dispatcherd" --port 0 --port-file "$GDIR/port" --unix-socket "$GDIR/d.sock" \
    --hot-path-segment "$SEGMENT" --log-level warn >"$LOGS/graphs-$run-dispatcher.log" 2>&1 &
  GPID=$!
  for _ in $(seq 100); do [[ -s "$GDIR/port" ]] && break; sleep 0.1; done
  "$BIN/gt-workerd" --dispatcher "unix:$GDIR/d.sock" --device 0 --device-graphs=$flag \
    --early-fetches=$EARLY --kernel-cache-dir "$GDIR/kernels" --log-level warn \
    >"$LOGS/graphs-$run-worker.log" 2>&1 &
  GWID=$!
  sleep 2
  GT_ADDRESS=127.0.0.1:$(cat "$GDIR/port" 2>/dev/null) timeout -k 10 "$(tmo 60)" stdbuf -oL \
    "$BIN/gt-bench-mlp" --steps 50 >"$LOGS/graphs-$run-mlp.log" 2>&1 || GRAPHS_RC=1
  GRAPH_STEP[$run]=$(sed -n 's/^  GT under gt::compile (hot path): *median \([0-9.]*\) ms.*/\1/p' \
    "$LOGS/graphs-$run-mlp.log")
  GRAPH_LOOP[$run]=$(sed -n 's/^  GT plain loop (hot path found): *median \([0-9.]*\) ms.*/\1/p' \
    "$LOGS/graphs-$run-mlp.log")
  cat "$LOGS/graphs-$run-mlp.log"
  if [[ $run == true ]] && may_start "gt-bench-chain"; then  # the fused chain (NVRTC kernels)
    GT_ADDRESS=127.0.0.1:$(cat "$GDIR/port" 2>/dev/null) timeout -k 10 "$(tmo 90)" stdbuf -oL \
      "$BIN/gt-bench-chain" >"$LOGS/chain.log" 2>&1
    CHAIN_RC=$?  # (non-zero also when the three ways' results differ)
    (( CHAIN_RC == 0 )) || GRAPHS_RC=1
    cat "$LOGS/chain.log"
    # the three modes call by call: each stretch follows another hot path (held and replayed all
    # the same: HotPathDetector::follows_hot_path), through graphs and generated kernels
    may_start "gt-bench-chain --interleave" &&
      { GT_ADDRESS=127.0.0.1:$(cat "$GDIR/port" 2>/dev/null) timeout -k 10 "$(tmo 90)" stdbuf -oL \
          "$BIN/gt-bench-chain" --interleave >"$LOGS/chain-interleaved.log" 2>&1 || GRAPHS_RC=1; }
    touch "$LOGS/chain-interleaved.log"
    cat "$LOGS/chain-interleaved.log"
    ls -l "$GDIR/kernels" 2>/dev/null | tail -n +2
  fi
  stop_procs "$GWID" "$GPID"
  rm -rf "$GDIR"
done
GRAPHS_LINE="${GRAPH_STEP[true]:-?} vs ${GRAPH_STEP[false]:-?} ms"
SEGMENTS_LINE="${GRAPH_STEP[seg8]:-?} vs ${GRAPH_STEP[true]:-?} ms"
EARLY_LINE="${GRAPH_STEP[true]:-?} vs ${GRAPH_STEP[noearly]:-?} ms (loop ${GRAPH_LOOP[true]:-?} vs ${GRAPH_LOOP[noearly]:-?})"
CHAIN_LINE=$(sed -n 's/^  GT loop (hot path replayed, fused) *\([0-9.]*\) *\([0-9.]*x\).*/\1 ms, \2 eager/p' "$LOGS/chain.log")
MLP_LINE=$(grep -oE 'GT / torch = [0-9.]+x' "$LOGS/svc-mlp.log" | head -1)
[[ -n "$MLP_LINE" ]] || MLP_LINE=$(sed -n 's/.*GT (client autograd + daemons): median \([0-9.]*\) ms.*/\1 ms (GT alone)/p' \
  "$LOGS/svc-mlp.log" | head -1)
SMALL_LINE=$(grep -oE 'median [0-9]+ ops/s' "$LOGS/svc-gt-bench.log" | head -1)

# 4. The NCCL peer link: two CUDA workers on GPUs 0 and 1 (peer_transport nccl), data parallel
# like step 3 (test_nccl_link '[.gpu]'). Needs two GPUs and libnccl.so.2 on the library path.
NCCL_RESULT="skipped, 1 GPU"
if (( $(timeout 20 nvidia-smi -L 2>/dev/null | grep -c '^GPU') >= 2 )) && may_start "NCCL link"; then
  echo "device-check: NCCL link, two CUDA workers on GPUs 0 and 1"
  timeout -k 10 "$(tmo 80)" "$BIN/test_nccl_link" '[.gpu]' -r compact >"$LOGS/nccl.log" 2>&1 </dev/null
  NCCL_RC=$?
  NCCL_RESULT=$([[ $NCCL_RC == 0 ]] && echo PASS || echo FAIL)
  grep -E 'failed|FAILED|NCCL|with expansion' "$LOGS/nccl.log" | head -40
else
  echo "device-check: NCCL: skipped, 1 GPU"
fi


# The daemons' logs of the tests and of gt-bench-gpu (kept in /tmp) come back with the rest.
for d in /tmp/gt-test-* /tmp/gt-bench-gpu-*; do
  [[ -d "$d" ]] && mkdir -p "$LOGS/tmp-logs" && cp -r "$d" "$LOGS/tmp-logs/" 2>/dev/null
done
SUMMARY_DONE=1
summary | tee "$LOGS/summary.txt"
[[ $TEST_RC == 0 && $KERNELS_RC == 0 && $BENCH_RC == 0 && $TF32_RC == 0 && $DP_RC == 0 && \
   $SVC_RC == 0 && $NCCL_RC == 0 && $GRAPHS_RC == 0 && ${#SKIPPED[@]} == 0 ]]
