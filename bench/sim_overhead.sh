#!/usr/bin/env bash
# The asynchronous-device path's own cost (issue 10): gt-bench's (a) small-op stream and (b) 4x4
# fetch round trip through a CPU worker and through a sim worker with no simulated latency
# (--sim-launch-us 0 --sim-gbps 0: what remains is the StreamBackend -- streams, the caching
# allocator, staged copies, the completion thread -- plus the sim's device-thread hand-off),
# alternated in one run, medians of the rounds and their ratio.
#
#   bench/sim_overhead.sh [--rounds N] [--json]      (from the repository root, after a build)
set -uo pipefail
ROUNDS=3
JSON=0
while (( $# )); do
  case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --json) JSON=1; shift ;;
    *) echo "usage: bench/sim_overhead.sh [--rounds N] [--json]" >&2; exit 2 ;;
  esac
done
B=${GT_BIN_DIR:-build/bin}
D=$(mktemp -d /tmp/gt-sim-bench-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$D"' EXIT
start() {  # name, worker flags...
  local name=$1; shift
  "$B/gt-dispatcherd" --port 0 --port-file "$D/$name.port" --unix-socket "$D/$name.sock" \
    --log-level warn >"$D/$name.dispatcher.log" 2>&1 &
  for _ in $(seq 100); do [[ -s $D/$name.port ]] && break; sleep 0.05; done
  "$B/gt-workerd" --dispatcher "unix:$D/$name.sock" --log-level warn "$@" >"$D/$name.worker.log" 2>&1 &
}
start cpu --device cpu
start sim --device sim --sim-launch-us 0 --sim-gbps 0
sleep 1
declare -A OPS RTT
for r in $(seq "$ROUNDS"); do
  for name in cpu sim; do
    out=$(GT_ADDRESS=127.0.0.1:$(cat "$D/$name.port") "$B/gt-bench" --only ab --reps 5 2>&1)
    OPS[$name]+="$(sed -n 's/^(a).*median \([0-9.]*\) ops\/s.*/\1/p' <<<"$out") "
    RTT[$name]+="$(sed -n 's/^(b) fetch round trip[^:]*: median \([0-9.]*\) us;.*/\1/p' <<<"$out") "
  done
done
median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
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
