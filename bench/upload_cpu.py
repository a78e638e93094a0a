#!/usr/bin/python3
"""Where an upload's CPU goes (issue 15): uploads of --mib MiB float32 from numpy, each
synchronized and freed, --count times after one untimed upload; prints GiB/s and the CPU
milliseconds per GiB uploaded of this client, the dispatcher and the worker (schedstat, every
thread: proc_cpu.py), and the daemons' minor page faults. Uses the embedded default (its
daemons are this process's descendants): run with GT_SHM=0 for the sockets (a TCP client's
path) and GT_BIN_DIR=DIR to take the daemons from another build (A/B).

    GT_SHM=0 PYTHONPATH=build/python /usr/bin/python3 bench/upload_cpu.py [--mib 64] [--count 150] [--json]
"""
import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gt  # noqa: E402
import proc_cpu  # noqa: E402

DAEMONS = ("gt-dispatcherd", "gt-workerd")
SHORT = {"gt-dispatcherd": "dispatcher", "gt-workerd": "worker", "client": "client"}


def minor_faults(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[7])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--count", type=int, default=150)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    a = np.ones((args.mib << 20) // 4, dtype=np.float32)
    x = gt.from_numpy(a)
    gt.synchronize()
    del x
    pids = {proc_cpu.process_name(p): p for p in proc_cpu.descendants(os.getpid())}
    missing = [d for d in DAEMONS if d not in pids]
    if missing:
        sys.exit(f"upload_cpu.py: no {', '.join(missing)} among this process's descendants "
                 "(it measures the embedded default: unset GT_ADDRESS)")

    def cpu_s():
        c = {d: proc_cpu.process_cpu_ns(pids[d]) / 1e9 for d in DAEMONS}
        c["client"] = time.process_time()
        return c

    f0 = {d: minor_faults(pids[d]) for d in DAEMONS}
    c0, t0 = cpu_s(), time.perf_counter()
    for _ in range(args.count):
        x = gt.from_numpy(a)
        gt.synchronize()
        del x
    dt = time.perf_counter() - t0
    c1 = cpu_s()
    f1 = {d: minor_faults(pids[d]) for d in DAEMONS}
    gib = args.count * args.mib / 1024
    out = {"gib_per_s": round(gib / dt, 3)}
    for k in c0:
        out[f"{SHORT[k]}_cpu_ms_per_gib"] = round(1000 * (c1[k] - c0[k]) / gib, 1)
    for d in DAEMONS:
        out[f"{SHORT[d]}_minor_faults"] = f1[d] - f0[d]
    if args.json:
        print(json.dumps(out))
        return
    print(f"upload_cpu.py: {args.count} uploads of {args.mib} MiB ({'sockets' if os.environ.get('GT_SHM') == '0' else 'shared memory'})")
    for k, v in out.items():
        print(f"  {k:32s} {v}")


if __name__ == "__main__":
    main()
