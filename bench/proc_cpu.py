"""CPU time of processes, for benchmarks that say where a step's time goes (client, dispatcher,
worker): the Python twin of bench/proc_cpu.h. Read from /proc/<pid>/task/*/schedstat
(nanoseconds on the CPU, every thread; /proc/<pid>/stat's utime/stime tick at 10 ms, too
coarse for a 1 ms step). Linux only, which GT is."""
import os


def process_cpu_ns(pid):
    """Nanoseconds all threads of `pid` have run (0 when it is gone)."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for t in tasks:
        try:
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # a thread that ended meanwhile
    return total


def process_name(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def parent_of(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            line = f.read()
    except OSError:
        return 0
    rest = line[line.rfind(")") + 2:].split()  # the name may hold spaces and parentheses
    return int(rest[1]) if len(rest) > 1 else 0


def descendants(root):
    """Processes descended from `root` (children, grandchildren, ...)."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid, a, hops = int(name), parent_of(int(name)), 0
        while a > 1 and hops < 64:
            if a == root:
                out.append(pid)
                break
            a, hops = parent_of(a), hops + 1
    return out


class CpuSplit:
    """Cumulative CPU seconds of this process, the dispatcher and the workers (found among this
    process's descendants, as the embedded default starts them, or given as pids)."""

    def __init__(self, daemon_pids=None):
        pids = daemon_pids if daemon_pids else descendants(os.getpid())
        self.dispatcher = [p for p in pids if process_name(p) == "gt-dispatcherd"]
        self.workers = [p for p in pids if process_name(p) == "gt-workerd"]

    def found(self):
        return bool(self.dispatcher or self.workers)

    def now(self):
        def sec(pids):
            return sum(process_cpu_ns(p) for p in pids) / 1e9
        return (process_cpu_ns(os.getpid()) / 1e9, sec(self.dispatcher), sec(self.workers))
