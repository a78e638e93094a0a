#!/usr/bin/env bash
# What answering a fetch as soon as a hot path has made its value final saves (issue 11, worker
# option early_fetches): gt-bench-mlp (each step's loss fetched after its backward pass and
# update) against two dispatcher + worker pairs in one run, alternated round by round: "off"
# (--early-fetches=false) and "on" (the default). Medians of the rounds of GT eager, the plain
# loop, gt::compile and the same ops in-process, and the ratios compiled / eager and on / off.
# With --pinned the worker has a core of its own (overhead_common.sh): what a host with cores
# to spare sees, where the client's next step overlaps the worker's backward pass instead of
# taking its cores.
#
#   bench/early_fetch.sh [--rounds N] [--json] [--pinned]      (from the repository root, after a build)
set -uo pipefail
USAGE=bench/early_fetch.sh
ROUNDS=5
source "$(dirname "$0")/overhead_common.sh" "$@"
STEPS=${GT_BENCH_STEPS:-400}
start_pair off -- --early-fetches=false
start_pair on
sleep 1
declare -A EAGER LOOP HOT LOCAL
for _ in $(seq "$ROUNDS"); do
  for name in off on; do
    out=$(GT_ADDRESS="unix:$D/$name.sock" on_client_cpus "$B/gt-bench-mlp" --steps "$STEPS" \
          --daemon-pids "${PAIR_PIDS[$name]}" 2>&1)
    EAGER[$name]+="$(mlp_step_ms eager "$out") "
    LOOP[$name]+="$(mlp_step_ms loop "$out") "
    HOT[$name]+="$(mlp_step_ms compiled "$out") "
    LOCAL[$name]+="$(sed -n 's/^  in-process CpuBackend, same ops: *median \([0-9.]*\) ms.*/\1/p' <<<"$out") "
  done
done
for name in off on; do
  declare "eager_$name=$(median "${EAGER[$name]}")" "loop_$name=$(median "${LOOP[$name]}")" \
          "hot_$name=$(median "${HOT[$name]}")" "local_$name=$(median "${LOCAL[$name]}")"
done
hot_over_eager_off=$(ratio "$hot_off" "$eager_off"); hot_over_eager_on=$(ratio "$hot_on" "$eager_on")
hot_on_over_off=$(ratio "$hot_on" "$hot_off"); loop_on_over_off=$(ratio "$loop_on" "$loop_off")
hot_over_local_on=$(ratio "$hot_on" "$local_on")
if (( JSON )); then
  printf '{"rounds": %d, "steps": %d, "pinned": %s, "off_eager_ms": %s, "off_loop_ms": %s, "off_compiled_ms": %s, "off_in_process_ms": %s, "on_eager_ms": %s, "on_loop_ms": %s, "on_compiled_ms": %s, "on_in_process_ms": %s, "off_compiled_over_eager": %s, "on_compiled_over_eager": %s, "compiled_on_over_off": %s, "loop_on_over_off": %s, "on_compiled_over_in_process": %s}\n' \
    "$ROUNDS" "$STEPS" "$( (( PINNED )) && echo true || echo false)" "$eager_off" "$loop_off" "$hot_off" "$local_off" \
    "$eager_on" "$loop_on" "$hot_on" "$local_on" "$hot_over_eager_off" "$hot_over_eager_on" \
    "$hot_on_over_off" "$loop_on_over_off" "$hot_over_local_on"
else
  echo "MLP step (gt-bench-mlp, $STEPS steps a variant), ms, median of $ROUNDS rounds$( (( PINNED )) && echo ', worker pinned to its own core')"
  printf '| %-14s | %8s | %10s | %11s | %10s | %16s |\n' "early_fetches" "GT eager" "plain loop" "gt::compile" "in-process" "compiled / eager"
  printf '| %-14s | %8s | %10s | %11s | %10s | %16s |\n' "off" "$eager_off" "$loop_off" "$hot_off" "$local_off" "$hot_over_eager_off"
  printf '| %-14s | %8s | %10s | %11s | %10s | %16s |\n' "on (default)" "$eager_on" "$loop_on" "$hot_on" "$local_on" "$hot_over_eager_on"
  echo "on / off: gt::compile $hot_on_over_off, plain loop $loop_on_over_off; gt::compile (on) / in-process $hot_over_local_on"
fi
