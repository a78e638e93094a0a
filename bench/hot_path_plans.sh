#!/usr/bin/env bash
# What sending hot paths from their cached plan saves (issue 11: "replay skips re-planning",
# dispatcherd/client_session_plan.cpp): gt-bench-mlp against two dispatcher + worker pairs in one
# run, alternated round by round: "planned" (hot_path_plans: false: every repetition validated,
# placed and rewritten, then replayed by reference) and "plans" (the default). Medians of the
# rounds and their ratio (plans / planned): the gt::compile step and the plain loop's, and the
# dispatcher's CPU time per step of each.
#
#   bench/hot_path_plans.sh [--rounds N] [--json]      (from the repository root, after a build)
set -uo pipefail
USAGE=bench/hot_path_plans.sh
ROUNDS=5
source "$(dirname "$0")/overhead_common.sh" "$@"
start_pair planned --hot-path-plans=false
start_pair plans
sleep 1
declare -A HOT LOOP HOT_CPU LOOP_CPU
for _ in $(seq "$ROUNDS"); do
  for name in planned plans; do
    addr=127.0.0.1:$(cat "$D/$name.port")
    out=$(GT_ADDRESS=$addr "$B/gt-bench-mlp" --steps 100 --daemon-pids "${PAIR_PIDS[$name]}" 2>&1)
    HOT[$name]+="$(mlp_step_ms compiled "$out") "
    LOOP[$name]+="$(mlp_step_ms loop "$out") "
    HOT_CPU[$name]+="$(mlp_cpu_us compiled dispatcher "$out") "
    LOOP_CPU[$name]+="$(mlp_cpu_us loop dispatcher "$out") "
  done
done
declare -A M
for fig in HOT LOOP HOT_CPU LOOP_CPU; do
  for name in planned plans; do
    declare -n arr=$fig
    M[$fig.$name]=$(median "${arr[$name]}")
  done
done
if (( JSON )); then
  printf '{"rounds": %d, "planned_compiled_step_ms": %s, "plans_compiled_step_ms": %s, "compiled_step_ratio": %s, "planned_loop_step_ms": %s, "plans_loop_step_ms": %s, "loop_step_ratio": %s, "planned_compiled_dispatcher_us": %s, "plans_compiled_dispatcher_us": %s, "compiled_dispatcher_ratio": %s, "planned_loop_dispatcher_us": %s, "plans_loop_dispatcher_us": %s, "loop_dispatcher_ratio": %s}\n' \
    "$ROUNDS" "${M[HOT.planned]}" "${M[HOT.plans]}" "$(ratio "${M[HOT.plans]}" "${M[HOT.planned]}")" \
    "${M[LOOP.planned]}" "${M[LOOP.plans]}" "$(ratio "${M[LOOP.plans]}" "${M[LOOP.planned]}")" \
    "${M[HOT_CPU.planned]}" "${M[HOT_CPU.plans]}" "$(ratio "${M[HOT_CPU.plans]}" "${M[HOT_CPU.planned]}")" \
    "${M[LOOP_CPU.planned]}" "${M[LOOP_CPU.plans]}" "$(ratio "${M[LOOP_CPU.plans]}" "${M[LOOP_CPU.planned]}")"
else
  row() { printf '| %-40s | %12s | %12s | %7s |\n' "$1" "$2" "$3" "$4"; }
  row "median of $ROUNDS rounds (gt-bench-mlp)" "planned" "plans" "ratio"
  row "gt::compile step, ms" "${M[HOT.planned]}" "${M[HOT.plans]}" "$(ratio "${M[HOT.plans]}" "${M[HOT.planned]}")"
  row "plain-loop step, ms" "${M[LOOP.planned]}" "${M[LOOP.plans]}" "$(ratio "${M[LOOP.plans]}" "${M[LOOP.planned]}")"
  row "dispatcher CPU per compiled step, us" "${M[HOT_CPU.planned]}" "${M[HOT_CPU.plans]}" "$(ratio "${M[HOT_CPU.plans]}" "${M[HOT_CPU.planned]}")"
  row "dispatcher CPU per plain-loop step, us" "${M[LOOP_CPU.planned]}" "${M[LOOP_CPU.plans]}" "$(ratio "${M[LOOP_CPU.plans]}" "${M[LOOP_CPU.planned]}")"
fi
