#!/usr/bin/env bash
# The asynchronous-device path's own cost (issue 10): gt-bench's (a) small-op stream and (b) 4x4
# fetch round trip through a CPU worker and through a sim worker with no simulated latency
# (--sim-launch-us 0 --sim-gbps 0: what remains is the StreamBackend -- streams, the caching
# allocator, staged copies, the completion thread -- plus the sim's device-thread hand-off),
# alternated in one run, medians of the rounds and their ratio.
#
#   bench/sim_overhead.sh [--rounds N] [--json]      (from the repository root, after a build)
set -uo pipefail
USAGE=bench/sim_overhead.sh
ROUNDS=3
source "$(dirname "$0")/overhead_common.sh" "$@"
start_pair cpu -- --device cpu
start_pair sim -- --device sim --sim-launch-us 0 --sim-gbps 0
sleep 1
declare -A OPS RTT
for r in $(seq "$ROUNDS"); do
  for name in cpu sim; do
    out=$(GT_ADDRESS=127.0.0.1:$(cat "$D/$name.port") "$B/gt-bench" --only ab --reps 5 2>&1)
    OPS[$name]+="$(sed -n 's/^(a).*median \([0-9.]*\) ops\/s.*/\1/p' <<<"$out") "
    RTT[$name]+="$(sed -n 's/^(b) fetch round trip[^:]*: median \([0-9.]*\) us;.*/\1/p' <<<"$out") "
  done
done
cpu_ops=$(median "${OPS[cpu]}"); sim_ops=$(median "${OPS[sim]}")
cpu_rtt=$(median "${RTT[cpu]}"); sim_rtt=$(median "${RTT[sim]}")
ops_ratio=$(awk -v a="$sim_ops" -v b="$cpu_ops" 'BEGIN {printf "%.2f", a / b}')
rtt_ratio=$(awk -v a="$sim_rtt" -v b="$cpu_rtt" 'BEGIN {printf "%.2f", a / b}')
if (( JSON )); then
  printf '{"rounds": %d, "cpu_small_ops_per_s": %s, "sim_small_ops_per_s": %s, "sim_over_cpu_ops": %s, "cpu_fetch_rtt_us": %s, "sim_fetch_rtt_us": %s, "sim_over_cpu_rtt": %s}\n' \
    "$ROUNDS" "$cpu_ops" "$sim_ops" "$ops_ratio" "$cpu_rtt" "$sim_rtt" "$rtt_ratio"
else
  printf '| %-32s | %12s | %12s | %6s |\n' "median of $ROUNDS rounds" "CPU worker" "sim worker" "ratio"
  printf '| %-32s | %12s | %12s | %6s |\n' "(a) small-op stream, ops/s" "$cpu_ops" "$sim_ops" "$ops_ratio"
  printf '| %-32s | %12s | %12s | %6s |\n' "(b) 4x4 fetch round trip, us" "$cpu_rtt" "$sim_rtt" "$rtt_ratio"
fi
