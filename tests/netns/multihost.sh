#!/usr/bin/env bash
# Workers on other hosts (issue 14), on one machine: a small virtual network of Linux network
# namespaces joined by veth pairs to a bridge, each namespace a "host" with its own address:
#
#   dispatcher 10.213.0.1   worker A 10.213.0.2   worker B 10.213.0.3   clients 10.213.0.4
#
# The dispatcher listens on its network address (with a users file and a worker secret, as a
# multi-host setup must), the workers register over TCP from their hosts and exchange shards over
# the TCP peer link. Checks:
#   1. data-parallel training across the two worker hosts (gt-bench-dp from the client host)
#      gives the losses of one worker and really moves bytes between the hosts;
#   2. cutting worker B's host off the network (`ip link set down`) gives a session using B a
#      clear error naming the worker within the heartbeat timeout, while a session on worker A
#      keeps computing.
# Needs root and network namespaces; exits 77 (ctest: skipped, with the reason printed) where
# they are not available.
#
#   tests/netns/multihost.sh BIN_DIR PYTHON_DIR
set -euo pipefail

BIN=${1:?usage: multihost.sh BIN_DIR PYTHON_DIR}
PYDIR=${2:?usage: multihost.sh BIN_DIR PYTHON_DIR}
HEARTBEAT_TIMEOUT_MS=4000

skip() {
  echo "multihost: SKIPPED: $*"
  exit 77
}
fail() {
  echo "multihost: FAIL: $*" >&2
  exit 1
}

[[ $EUID -eq 0 ]] || skip "needs root (network namespaces)"
command -v ip >/dev/null || skip "needs iproute2 (ip)"
P=gt$$  # namespace and link names stay unique and under 15 characters
ip netns add "$P-probe" 2>/dev/null || skip "ip netns is not permitted here"
ip netns del "$P-probe"

WORK=$(mktemp -d /tmp/gt-netns-XXXXXX)
PIDS=()
HOSTS=(d a b c)
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for h in "${HOSTS[@]}" hub; do ip netns del "$P-$h" 2>/dev/null || true; done
  if [[ ${KEEP_LOGS:-0} == 0 ]]; then rm -rf "$WORK"; else echo "logs in $WORK"; fi
}
trap cleanup EXIT

# ---- the network ------------------------------------------------------------------------------
ip netns add "$P-hub"
ip -n "$P-hub" link add br0 type bridge
ip -n "$P-hub" link set br0 up
declare -A ADDR=([d]=10.213.0.1 [a]=10.213.0.2 [b]=10.213.0.3 [c]=10.213.0.4)
for h in "${HOSTS[@]}"; do
  ip netns add "$P-$h"
  ip link add "$P-$h" type veth peer name "$P-$h-br"
  ip link set "$P-$h" netns "$P-$h"
  ip link set "$P-$h-br" netns "$P-hub"
  ip -n "$P-hub" link set "$P-$h-br" master br0 up
  ip -n "$P-$h" link set lo up
  ip -n "$P-$h" addr add "${ADDR[$h]}/24" dev "$P-$h"
  ip -n "$P-$h" link set "$P-$h" up
done
on() { local h=$1; shift; ip netns exec "$P-$h" "$@"; }

# ---- credentials, as an operator sets them up -------------------------------------------------
USERS=$WORK/users.yaml
TOKEN=$("$BIN/gt-dispatcherd" --users-file "$USERS" --add-user alice 2>/dev/null)
[[ -n $TOKEN ]] || fail "--add-user printed no token"
# alice is the operator here: an admin sees every worker's statistics (peer bytes).
sed -i 's/^\(    token_sha256: .*\)$/\1\n    admin: true/' "$USERS"
SECRET=$WORK/worker.secret
head -c 32 /dev/urandom | base64 >"$SECRET"
chmod 600 "$SECRET" "$USERS"

# ---- the daemons, each on its host (started by `ip netns exec` itself, which becomes the
# daemon, so $! is the daemon's pid) ----------------------------------------------------------------
ip netns exec "$P-d" "$BIN/gt-dispatcherd" --listen-address "${ADDR[d]}" --port 29500 --users-file "$USERS" \
  --worker-secret-file "$SECRET" --heartbeat-timeout-ms "$HEARTBEAT_TIMEOUT_MS" \
  --log-level info >"$WORK/dispatcher.log" 2>&1 &
PIDS+=($!)
worker() {
  local h=$1
  ip netns exec "$P-$h" "$BIN/gt-workerd" --dispatcher "${ADDR[d]}:29500" --device cpu \
    --worker-secret-file "$SECRET" --peer-listen-address "${ADDR[$h]}" \
    >"$WORK/worker-$h.log" 2>&1 &
  PIDS+=($!)
}
client() {  # a command on the client host, as alice
  on c env GT_ADDRESS="${ADDR[d]}:29500" GT_TOKEN="$TOKEN" PYTHONPATH="$PYDIR" "$@"
}
workers_registered() {
  client /usr/bin/python3 -c 'import gt; print(len(gt.debug.get_worker_stats()))' 2>/dev/null ||
    echo 0
}
wait_workers() {
  local want=$1
  for _ in $(seq 100); do
    [[ $(workers_registered) -ge $want ]] && return 0
    sleep 0.2
  done
  cat "$WORK"/*.log >&2
  fail "$want worker(s) did not register from their hosts"
}
# One after the other, so worker A is worker 0 and worker B worker 1.
worker a
wait_workers 1
worker b
wait_workers 2
echo "multihost: dispatcher on ${ADDR[d]}, workers on ${ADDR[a]} and ${ADDR[b]}, client on ${ADDR[c]}"

# ---- 1. data parallel across the hosts -----------------------------------------------------------
if ! client "$BIN/gt-bench-dp" 6 >"$WORK/dp.out" 2>&1; then
  cat "$WORK/dp.out" "$WORK"/*.log >&2
  fail "data-parallel training across the worker hosts failed (or its losses differ)"
fi
cat "$WORK/dp.out"
bytes=$(sed -n 's/.*bytes between workers per step: \([0-9]*\).*/\1/p' "$WORK/dp.out")
[[ -n $bytes && $bytes -gt 0 ]] || fail "no bytes moved between the worker hosts"
echo "multihost: data parallel over the TCP peer link: same losses as one worker, $bytes B/step between hosts"

# ---- 2. a host drops off the network -------------------------------------------------------------
# Two sessions compute in a loop, one pinned to each worker; each prints a line per step and,
# on an error, the error and the time it took to arrive after the cut (marked by a file).
CUT=$WORK/cut
cat >"$WORK/loop.py" <<'EOF'
import os, sys, time
import gt
worker, seconds, cut = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
with gt.device(f"cuda:{worker}"):
    x = gt.ones(1000)
end = time.time() + seconds
steps = 0
try:
    while time.time() < end:
        assert (x * 2).sum().item() == 2000.0
        steps += 1
        time.sleep(0.05)
except gt.GTError as e:
    after = time.time() - os.path.getmtime(cut) if os.path.exists(cut) else -1
    print(f"ERROR after {after:.1f}s: {e}", flush=True)
    sys.exit(3)
print(f"OK {steps} steps", flush=True)
EOF
RUN_S=$((HEARTBEAT_TIMEOUT_MS / 1000 + 12))
client /usr/bin/python3 "$WORK/loop.py" 0 "$RUN_S" "$CUT" >"$WORK/on-a.out" 2>&1 &
ON_A=$!
client /usr/bin/python3 "$WORK/loop.py" 1 "$RUN_S" "$CUT" >"$WORK/on-b.out" 2>&1 &
ON_B=$!
sleep 3  # both sessions computing
touch "$CUT"
ip -n "$P-hub" link set "$P-b-br" down
echo "multihost: worker B's host cut off the network"
rc_b=0
wait "$ON_B" || rc_b=$?
rc_a=0
wait "$ON_A" || rc_a=$?
cat "$WORK/on-a.out" "$WORK/on-b.out"
[[ $rc_a -eq 0 ]] && grep -q '^OK' "$WORK/on-a.out" ||
  fail "the session on worker A did not keep computing (rc $rc_a)"
[[ $rc_b -eq 3 ]] || fail "the session on worker B got no error (rc $rc_b)"
grep -qi 'worker 1' "$WORK/on-b.out" || fail "the error does not name the lost worker"
after=$(sed -n 's/^ERROR after \([0-9.]*\)s.*/\1/p' "$WORK/on-b.out")
limit=$((HEARTBEAT_TIMEOUT_MS / 1000 + 5))
awk -v a="$after" -v l="$limit" 'BEGIN { exit !(a >= 0 && a <= l) }' ||
  fail "the error came ${after}s after the cut (heartbeat timeout ${HEARTBEAT_TIMEOUT_MS} ms)"
echo "multihost: PASS (session on the cut host: error after ${after}s naming worker 1; the other kept going)"
