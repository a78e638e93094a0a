#!/usr/bin/env bash
# What live monitoring costs the instruction path (issue 12: at most 3%): gt-bench's (a)
# small-op stream and (b) 4x4 fetch round trip against two dispatcher + worker pairs in one run,
# alternated round by round: "off" (no HTTP endpoint) and "on" (HTTP endpoint on, and a scraper
# reading /metrics and /api/status once a second, as Prometheus and the dashboard would).
# Medians of the rounds and their ratio (on / off).
#
#   bench/monitoring_overhead.sh [--rounds N] [--json]      (from the repository root, after a build)
set -uo pipefail
USAGE=bench/monitoring_overhead.sh
ROUNDS=5
source "$(dirname "$0")/overhead_common.sh" "$@"
start_pair off
start_pair on --http-port 0 --http-port-file "$D/on.http"
for _ in $(seq 100); do [[ -s $D/on.http ]] && break; sleep 0.05; done
HTTP=$(cat "$D/on.http")
scrape() {  # one GET over bash's /dev/tcp, the body read and dropped
  exec 3<>"/dev/tcp/127.0.0.1/$HTTP" || return
  printf 'GET %s HTTP/1.1\r\nHost: localhost\r\n\r\n' "$1" >&3
  cat <&3 >/dev/null
  exec 3<&-
}
( while true; do scrape /metrics; scrape /api/status; sleep 1; done ) &
sleep 1
declare -A OPS RTT
for _ in $(seq "$ROUNDS"); do
  for name in off on; do
    out=$(GT_ADDRESS=127.0.0.1:$(cat "$D/$name.port") "$B/gt-bench" --only ab --reps 3 2>&1)
    OPS[$name]+="$(sed -n 's/^(a).*median \([0-9.]*\) ops\/s.*/\1/p' <<<"$out") "
    RTT[$name]+="$(sed -n 's/^(b) fetch round trip[^:]*: median \([0-9.]*\) us;.*/\1/p' <<<"$out") "
  done
done
off_ops=$(median "${OPS[off]}"); on_ops=$(median "${OPS[on]}")
off_rtt=$(median "${RTT[off]}"); on_rtt=$(median "${RTT[on]}")
ops_ratio=$(awk -v a="$on_ops" -v b="$off_ops" 'BEGIN {printf "%.3f", a / b}')
rtt_ratio=$(awk -v a="$on_rtt" -v b="$off_rtt" 'BEGIN {printf "%.3f", a / b}')
if (( JSON )); then
  printf '{"rounds": %d, "off_small_ops_per_s": %s, "on_small_ops_per_s": %s, "on_over_off_ops": %s, "off_fetch_rtt_us": %s, "on_fetch_rtt_us": %s, "on_over_off_rtt": %s}\n' \
    "$ROUNDS" "$off_ops" "$on_ops" "$ops_ratio" "$off_rtt" "$on_rtt" "$rtt_ratio"
else
  printf '| %-32s | %14s | %14s | %6s |\n' "median of $ROUNDS rounds" "monitoring off" "on + 1 Hz scrape" "on/off"
  printf '| %-32s | %14s | %14s | %6s |\n' "(a) small-op stream, ops/s" "$off_ops" "$on_ops" "$ops_ratio"
  printf '| %-32s | %14s | %14s | %6s |\n' "(b) 4x4 fetch round trip, us" "$off_rtt" "$on_rtt" "$rtt_ratio"
fi
