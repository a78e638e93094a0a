#!/usr/bin/env bash
# What hot paths (issue 11: detection, replay by reference, fused chains) cost or save:
# gt-bench-mlp's plain-loop step and gt-bench's (a) small-op stream against two dispatcher +
# worker pairs in one run, alternated round by round: "off" (hot_paths: false) and "on" (the
# default). Medians of the rounds, their ratio (on / off), and the CPU time per MLP step of the
# client, dispatcher and worker (on).
#
#   bench/hot_path_overhead.sh [--rounds N] [--json]      (from the repository root, after a build)
set -uo pipefail
USAGE=bench/hot_path_overhead.sh
ROUNDS=5
source "$(dirname "$0")/overhead_common.sh" "$@"
start_pair off --hot-paths=false
start_pair on
sleep 1
declare -A STEP OPS CPU
for _ in $(seq "$ROUNDS"); do
  for name in off on; do
    addr=127.0.0.1:$(cat "$D/$name.port")
    out=$(GT_ADDRESS=$addr "$B/gt-bench-mlp" --steps 60 --daemon-pids "${PAIR_PIDS[$name]}" 2>&1)
    # The plain loop: detected (and replayed) with hot paths on, eager with them off.
    STEP[$name]+="$(mlp_step_ms loop "$out") "
    CPU[$name]+="$(grep 'plain-loop' <<<"$out" | grep -o 'client [0-9]* us, dispatcher [0-9]* us, worker [0-9]* us')"$'\n'
    out=$(GT_ADDRESS=$addr "$B/gt-bench" --only a --reps 3 2>&1)
    OPS[$name]+="$(sed -n 's/^(a).*median \([0-9.]*\) ops\/s.*/\1/p' <<<"$out") "
  done
done
col() { awk -v k="$2" '{for (i = 1; i < NF; i++) if ($i == k) printf "%s ", $(i + 1)}' <<<"${CPU[$1]}"; }
off_step=$(median "${STEP[off]}"); on_step=$(median "${STEP[on]}")
off_ops=$(median "${OPS[off]}"); on_ops=$(median "${OPS[on]}")
step_ratio=$(awk -v a="$on_step" -v b="$off_step" 'BEGIN {printf "%.3f", a / b}')
ops_ratio=$(awk -v a="$on_ops" -v b="$off_ops" 'BEGIN {printf "%.3f", a / b}')
cpu_client=$(median "$(col on client)"); cpu_disp=$(median "$(col on dispatcher)"); cpu_worker=$(median "$(col on worker)")
off_disp=$(median "$(col off dispatcher)")
disp_ratio=$(awk -v a="$cpu_disp" -v b="$off_disp" 'BEGIN {printf "%.3f", a / b}')
if (( JSON )); then
  printf '{"rounds": %d, "off_mlp_step_ms": %s, "on_mlp_step_ms": %s, "on_over_off_step": %s, "off_small_ops_per_s": %s, "on_small_ops_per_s": %s, "on_over_off_ops": %s, "mlp_cpu_client_us": %s, "mlp_cpu_dispatcher_us": %s, "mlp_cpu_worker_us": %s, "off_mlp_cpu_dispatcher_us": %s, "on_over_off_dispatcher_cpu": %s}\n' \
    "$ROUNDS" "$off_step" "$on_step" "$step_ratio" "$off_ops" "$on_ops" "$ops_ratio" \
    "$cpu_client" "$cpu_disp" "$cpu_worker" "$off_disp" "$disp_ratio"
else
  printf '| %-34s | %14s | %14s | %6s |\n' "median of $ROUNDS rounds" "hot_paths off" "on (default)" "on/off"
  printf '| %-34s | %14s | %14s | %6s |\n' "MLP step (gt-bench-mlp), ms" "$off_step" "$on_step" "$step_ratio"
  printf '| %-34s | %14s | %14s | %6s |\n' "(a) small-op stream, ops/s" "$off_ops" "$on_ops" "$ops_ratio"
  printf '| %-34s | %14s | %14s | %6s |\n' "dispatcher CPU per MLP step, us" "$off_disp" "$cpu_disp" "$disp_ratio"
  echo "CPU per MLP step (on, median): client $cpu_client us, dispatcher $cpu_disp us, worker $cpu_worker us"
fi
