"""Sessions and errors: shape errors at the call site, worker errors at sync points,
gt.connect, gt.gpu_workers, worker stats (subprocesses for anything needing its own session)."""
import pytest

import gt
from conftest import run_python


def test_shape_errors_raise_at_the_call_site():
    a, b = gt.randn(2, 3), gt.randn(4, 5)
    with pytest.raises(gt.ShapeError) as e:
        a + b
    assert isinstance(e.value, ValueError) and isinstance(e.value, gt.GTError)
    assert isinstance(e.value, RuntimeError)
    assert "add" in str(e.value)
    with pytest.raises(ValueError, match="sum"):
        a.sum(axis=5)
    assert issubclass(gt.WorkerError, gt.GTError) and not issubclass(gt.WorkerError, ValueError)


def test_worker_stats():
    gt.randn(4).numpy()
    stats = gt.debug.get_worker_stats()
    assert isinstance(stats, dict) and len(stats) >= 1
    for wid, s in stats.items():
        assert s["worker_id"] == wid
        for key in ("worker_id", "device", "tensors", "bytes", "ops_executed", "errors",
                    "peak_bytes", "sessions"):
            assert key in s
    assert sum(s["ops_executed"] for s in stats.values()) > 0


def test_status_shows_this_session():
    held = gt.zeros(1000, dtype=gt.float64)  # 8000 bytes this session holds
    gt.synchronize()
    st = gt.debug.status()
    assert set(("version", "uptime_s", "workers", "sessions", "users", "recent_errors")) <= set(st)
    assert len(st["workers"]) == len(gt.debug.get_worker_stats())
    mine = [s for s in st["sessions"] if s["id"] == gt._gt._session_id()]
    assert len(mine) == 1
    s = mine[0]
    assert isinstance(s["tensor_bytes"], int) and s["tensor_bytes"] >= 8000
    assert isinstance(s["instructions"], int) and s["instructions"] >= 1
    assert s["sync_latency"]["count"] >= 1  # the synchronize above
    assert 0 < s["sync_latency"]["p50_s"] <= s["sync_latency"]["p99_s"]
    assert isinstance(s["program"], str)
    for w in st["workers"]:
        assert 0 <= w["busy_fraction"] <= 1
        assert isinstance(w["memory_capacity_bytes"], int) and w["memory_capacity_bytes"] > 0
    del held


WORKER_ERROR = r"""
import gt
big = gt.zeros(1024, 1024)          # 4 MiB on a worker limited to 1 MiB: fails on the worker
dep = big + 1                       # inherits the failure
ok = gt.tensor([1.0, 2.0]) * 3      # unaffected
try:
    gt.synchronize()
except gt.WorkerError as e:
    print("sync:", e)
try:
    dep.numpy()
except gt.WorkerError as e:
    print("fetch:", e)
print("ok:", ok.numpy().tolist())
"""


def test_worker_errors_raise_at_sync_points(limited_dispatcher):
    r = run_python(WORKER_ERROR, env={"GT_ADDRESS": limited_dispatcher})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("sync:") and "zeros" in lines[0] and "memory" in lines[0]
    assert lines[1].startswith("fetch:") and "zeros" in lines[1]
    assert lines[2] == "ok: [3.0, 6.0]"


def test_connect(limited_dispatcher):
    code = (f"import gt; gt.connect({limited_dispatcher!r}); "
            "print((gt.ones(3) * 2).sum().item())\n"
            "try:\n    gt.connect('127.0.0.1:1')\nexcept gt.GTError as e:\n    print('late')")
    r = run_python(code, env={"GT_ADDRESS": ""})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["6.0", "late"]


def test_embedded_default_outlives_the_thread_that_started_it():
    # The first op in a short-lived thread starts the embedded daemons; they must serve the
    # program after that thread has exited. (The worker used PR_SET_PDEATHSIG, which fires when
    # the spawning *thread* exits: "no worker is available for this session".)
    code = """
import threading, time
import gt
t = threading.Thread(target=lambda: print("first", gt.ones(3).sum().item()))
t.start()
t.join()
time.sleep(0.5)
print("after", (gt.ones(4) * 2).sum().item())
"""
    r = run_python(code, env={"GT_ADDRESS": ""})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "first 3.0" in r.stdout and "after 8.0" in r.stdout, r.stdout


def test_gpu_workers_starts_n_embedded_workers():
    # The session starts once a first worker registered; the second may join a moment later.
    code = ("import gt, time; gt.gpu_workers(2); x = gt.randn(3); print(x.shape)\n"
            "deadline = time.time() + 20\n"
            "while len(gt.debug.get_worker_stats()) < 2 and time.time() < deadline:\n"
            "    time.sleep(0.02)\n"
            "print(len(gt.debug.get_worker_stats()))\n"
            "try:\n    gt.gpu_workers(3)\nexcept gt.GTError:\n    print('too late')")
    r = run_python(code, env={"GT_ADDRESS": ""})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[1:3] == ["2", "too late"]
    with pytest.raises(ValueError):
        gt.gpu_workers(0)


class _SilentDispatcher:
    """Answers a client's Hello with a Welcome, then never replies (a hung dispatcher as the
    client sees it), on a Unix socket in a private folder."""

    def __init__(self):
        import socket
        import struct
        import tempfile
        import threading

        self._dir = tempfile.mkdtemp(prefix="gt-silent-")
        self.path = self._dir + "/d.sock"
        self._srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._srv.bind(self.path)
        self._srv.listen(4)
        self._conns = []
        # ServerMessage{welcome (1): Welcome{proto_major (1): 1, session_id (3): 7}}
        welcome = b"\x08\x01\x18\x07"
        body = b"\x0a" + bytes([len(welcome)]) + welcome
        self._welcome = struct.pack("<I", len(body)) + body
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self._srv.accept()
            except OSError:
                return
            self._conns.append(conn)
            try:
                conn.recv(65536)  # the Hello
                conn.sendall(self._welcome)
                while conn.recv(65536):  # everything else is swallowed: no reply, ever
                    pass
            except OSError:
                pass

    def close(self):
        import shutil
        import socket

        for c in self._conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._srv.close()
        shutil.rmtree(self._dir, ignore_errors=True)


SYNC_DEADLINE = r"""
import sys, time
import gt
if len(sys.argv) > 1:
    gt.set_sync_timeout(float(sys.argv[1]))
x = gt.ones(3) * 2
t0 = time.time()
try:
    x.numpy()
    print("returned")
except gt.WorkerError as e:
    print("raised after %.1f s: %s" % (time.time() - t0, e))
try:
    gt.synchronize()
except gt.WorkerError as e:
    print("then:", e)
"""


@pytest.mark.parametrize("how", ["env", "set_sync_timeout"])
def test_sync_point_raises_when_the_dispatcher_never_answers(how):
    silent = _SilentDispatcher()
    try:
        env = {"GT_ADDRESS": "unix:" + silent.path}
        args = ()
        if how == "env":
            env["GT_SYNC_TIMEOUT_S"] = "1"
        else:
            args = ("1",)
        r = run_python(SYNC_DEADLINE, env=env, args=args, timeout=30)
    finally:
        silent.close()
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("raised after"), r.stdout
    waited = float(lines[0].split()[2])
    assert 0.9 <= waited < 3.0
    assert "no answer from the dispatcher for 1 s" in lines[0]
    assert lines[1].startswith("then:") and "session lost" in lines[1]


def test_sync_timeout_env_is_checked():
    r = run_python("import gt; gt.ones(1).numpy()",
                   env={"GT_SYNC_TIMEOUT_S": "soon", "GT_ADDRESS": "unix:/nonexistent/gt.sock"})
    assert r.returncode != 0
    assert "GT_SYNC_TIMEOUT_S" in r.stderr
