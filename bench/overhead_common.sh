# Shared by the bench/*_overhead.sh scripts (sourced, not run): their options, a temporary folder
# removed on exit with everything started, a dispatcher + worker pair per variant, and medians.
#
#   USAGE="bench/x_overhead.sh"; ROUNDS=5; source "$(dirname "$0")/overhead_common.sh" "$@"
#   start_pair NAME [dispatcher flags...] [-- worker flags...]   # PAIR_PIDS[NAME]="dpid,wpid"
#   on_client_cpus CMD...                                        # CMD where the client runs
#   median "1 3 2"                                               # 2
#   ratio 1 3 [DECIMALS]                                         # 0.333 (3 places unless given)
# --pinned: each worker on the machine's last CPU, dispatchers and clients (on_client_cpus) on
# the others: the worker's compute does not share its cores with the client and dispatcher, as
# on a host with cores to spare (on a 2-core machine, one each).
JSON=0
PINNED=0
while (( $# )); do
  case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --json) JSON=1; shift ;;
    --pinned) PINNED=1; shift ;;
    *) echo "usage: $USAGE [--rounds N] [--json] [--pinned]" >&2; exit 2 ;;
  esac
done
LAST_CPU=$(( $(nproc --all) - 1 ))
if (( PINNED )) && (( LAST_CPU < 1 )); then echo "--pinned needs 2 CPUs" >&2; exit 2; fi
# Command prefixes (taskset execs the command: $! is the daemon's own pid).
PIN_WORKER=() PIN_CLIENT=()
if (( PINNED )); then PIN_WORKER=(taskset -c "$LAST_CPU") PIN_CLIENT=(taskset -c "0-$(( LAST_CPU - 1 ))"); fi
on_client_cpus() { "${PIN_CLIENT[@]}" "$@"; }
B=${GT_BIN_DIR:-build/bin}
D=$(mktemp -d /tmp/gt-overhead-bench-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$D"' EXIT
declare -A PAIR_PIDS
start_pair() {
  local name=$1; shift
  local dflags=() wflags=()
  while (( $# )) && [[ $1 != -- ]]; do dflags+=("$1"); shift; done
  (( $# )) && shift
  wflags=("$@")
  "${PIN_CLIENT[@]}" "$B/gt-dispatcherd" --port 0 --port-file "$D/$name.port" --unix-socket "$D/$name.sock" \
    --log-level warn "${dflags[@]}" >"$D/$name.dispatcher.log" 2>&1 &
  local dp=$!
  for _ in $(seq 100); do [[ -s $D/$name.port ]] && break; sleep 0.05; done
  "${PIN_WORKER[@]}" "$B/gt-workerd" --dispatcher "unix:$D/$name.sock" --log-level warn "${wflags[@]}" \
    >"$D/$name.worker.log" 2>&1 &
  PAIR_PIDS[$name]="$dp,$!"
}
# A gt-bench-mlp step time (ms) from its output: mlp_step_ms eager|loop|compiled "$out".
mlp_step_ms() {
  local label
  case $1 in
    eager) label='GT (client autograd + daemons):' ;;
    loop) label='GT plain loop (hot path found):' ;;
    compiled) label='GT under gt::compile (hot path):' ;;
  esac
  sed -n "s/^  ${label//(/\(} *median \([0-9.]*\) ms.*/\1/p" <<<"$2"
}
# The CPU per step (us) of `process` (client|dispatcher|worker) in a gt-bench-mlp run's `kind`
# (eager|loop|compiled) row: mlp_cpu_us compiled dispatcher "$out".
mlp_cpu_us() {
  local row
  case $1 in
    eager) row='CPU per GT step' ;;
    loop) row='CPU per plain-loop GT step' ;;
    compiled) row='CPU per hot GT step' ;;
  esac
  grep "$row" <<<"$3" | sed -n "s/.*$2 \([0-9]*\) us.*/\1/p"
}
ratio() { awk -v a="$1" -v b="$2" -v d="${3:-3}" 'BEGIN {printf "%.*f", d, a / b}'; }
median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
