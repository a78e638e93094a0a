#!/usr/bin/env bash
# Hot paths as device graphs (issue 11, ARCHITECTURE §7) on the sim device: gt-bench-mlp's hot-path
# MLP steps (a plain loop, and under gt::compile) through a sim worker with device_graphs on and
# one with it off, alternated in one run; medians of the rounds and their ratio.
#
# The sim device is given a GPU's launch costs, as a model: each kernel or copy launch takes
# SIM_LAUNCH_CPU_US (default 5: an H200's empty-kernel launch measured ~4.5 us) of the worker's
# executor thread, a node recorded into a graph SIM_CAPTURE_CPU_US (default 1, an assumption),
# a graph launch one launch; and every launch waits SIM_LAUNCH_US (default 5) on the device. So
# this shows what recording a step's kernels as one graph saves where launches cost the host,
# and what recording costs. The eager row is the control: the same steps on both workers (no
# hot path, so no graph), whose ratio shows the noise. The sim workers run their GEMMs on one
# thread (--blas-threads 1), for steadier figures on 2 cores. It is not a GPU figure: on a GPU
# the step is CUDA graphs + cuBLAS (scripts/device-check.sh).
#
#   bench/graph_sim.sh [--rounds N] [--json]      (from the repository root, after a build)
#   SIM_LAUNCH_CPU_US=20 bench/graph_sim.sh       (dearer launches: the worker's launches, not
#                                                  the client, then bound the step)
#   SIM_LAUNCH_CPU_US=0 SIM_CAPTURE_CPU_US=0 bench/graph_sim.sh   (free: what recording costs)
set -uo pipefail
USAGE=bench/graph_sim.sh
ROUNDS=9
source "$(dirname "$0")/overhead_common.sh" "$@"
LAUNCH_US=${SIM_LAUNCH_US:-5}
LAUNCH_CPU_US=${SIM_LAUNCH_CPU_US:-5}
CAPTURE_CPU_US=${SIM_CAPTURE_CPU_US:-1}
SIM=(--device sim --blas-threads 1 --sim-launch-us "$LAUNCH_US" --sim-launch-cpu-us "$LAUNCH_CPU_US"
     --sim-capture-cpu-us "$CAPTURE_CPU_US")
start_pair on -- "${SIM[@]}" --device-graphs=true
start_pair off -- "${SIM[@]}" --device-graphs=false
sleep 1
declare -A LOOP COMPILED EAGER
for r in $(seq "$ROUNDS"); do
  for name in on off; do
    out=$(GT_ADDRESS=127.0.0.1:$(cat "$D/$name.port") "$B/gt-bench-mlp" --steps 40 --warmup 5 2>&1)
    EAGER[$name]+="$(mlp_step_ms eager "$out") "
    LOOP[$name]+="$(mlp_step_ms loop "$out") "
    COMPILED[$name]+="$(mlp_step_ms compiled "$out") "
  done
done
eager_on=$(median "${EAGER[on]}"); eager_off=$(median "${EAGER[off]}")
loop_on=$(median "${LOOP[on]}"); loop_off=$(median "${LOOP[off]}")
comp_on=$(median "${COMPILED[on]}"); comp_off=$(median "${COMPILED[off]}")
if (( JSON )); then
  printf '{"rounds": %d, "sim_launch_us": %s, "sim_launch_cpu_us": %s, "sim_capture_cpu_us": %s, "eager_ms": %s, "eager_graphs_worker_ms": %s, "loop_graphs_ms": %s, "loop_no_graphs_ms": %s, "loop_graphs_over_no_graphs": %s, "compiled_graphs_ms": %s, "compiled_no_graphs_ms": %s, "compiled_graphs_over_no_graphs": %s}\n' \
    "$ROUNDS" "$LAUNCH_US" "$LAUNCH_CPU_US" "$CAPTURE_CPU_US" "$eager_off" "$eager_on" "$loop_on" "$loop_off" "$(ratio "$loop_on" "$loop_off" 2)" \
    "$comp_on" "$comp_off" "$(ratio "$comp_on" "$comp_off" 2)"
else
  printf 'sim worker: launch %s us of host time + %s us latency, %s us per recorded node; median of %d rounds, ms per MLP step\n' \
    "$LAUNCH_CPU_US" "$LAUNCH_US" "$CAPTURE_CPU_US" "$ROUNDS"
  printf '| %-30s | %14s | %14s | %6s |\n' "" "device graphs" "no graphs" "ratio"
  printf '| %-30s | %14s | %14s | %6s |\n' "eager (no hot path)" "$eager_on" "$eager_off" "$(ratio "$eager_on" "$eager_off" 2)"
  printf '| %-30s | %14s | %14s | %6s |\n' "plain loop (hot path found)" "$loop_on" "$loop_off" "$(ratio "$loop_on" "$loop_off" 2)"
  printf '| %-30s | %14s | %14s | %6s |\n' "under gt::compile" "$comp_on" "$comp_off" "$(ratio "$comp_on" "$comp_off" 2)"
fi
