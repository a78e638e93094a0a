"""Fetches into numpy arrays (issue 15): the values are received straight into the array the
fetch returns. Byte-exact for every dtype numpy shares with GT, around the 64 KiB size from which
the client reads a reply's payload around its frame decoder, and over several reply chunks."""
import numpy as np
import pytest

import gt

DTYPES = ["float32", "float16", "float64", "int8", "uint8", "int32", "int64", "bool"]


def random_array(dtype, n, seed):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, n).astype(bool)
    raw = rng.integers(0, 256, n * np.dtype(dtype).itemsize, dtype=np.uint8)
    return raw.view(dtype)  # any bit pattern, NaN payloads included


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 16383, 16385, 200003])
def test_numpy_fetch_is_byte_exact(dtype, n):
    a = random_array(dtype, n, n + len(dtype))
    t = gt.from_numpy(a)
    got = t.numpy()
    assert got.dtype == a.dtype
    assert got.shape == a.shape
    assert got.tobytes() == a.tobytes()


def test_numpy_fetch_in_several_chunks_keeps_its_shape():
    a = random_array("float32", 5 * 629147, 7).reshape(-1, 5)  # 12.6 MB: two chunks
    got = gt.from_numpy(a).numpy()
    assert got.shape == a.shape
    assert got.tobytes() == a.tobytes()
    assert got.flags.writeable and got.flags.c_contiguous


def test_large_arrays_come_from_shared_memory_and_stay_their_own():
    """From the embedded default (a Unix socket) a large fetch's array is the shared-memory
    region the worker wrote into: each array keeps its values while later fetches reuse and
    grow the arena, and writing into one changes neither the tensor nor another array."""
    n = 3 << 20  # 12 MiB of float32
    t = gt.from_numpy(np.arange(n, dtype=np.float32))
    first = t.numpy()
    second = t.numpy()
    assert first.ctypes.data != second.ctypes.data
    first[:10] = -1.0
    assert second[5] == 5.0
    assert t.numpy()[5] == 5.0
    held = [(t * float(k)).numpy() for k in range(1, 9)]  # 96 MiB: the arena grows
    for _ in range(3):
        del held[0]
        held.append((t + 1.0).numpy())  # regions given back are reused
    for k, a in enumerate(held[:5]):
        assert a[1000] == 1000.0 * (k + 4)
    for a in held[5:]:
        assert a[1000] == 1001.0
    assert first[5] == -1.0 and first[20] == 20.0


_UPLOADS = r'''
import sys
import numpy as np
import gt
rng = np.random.default_rng(5)
for n in (3 << 20, (9 << 20) + 5, 1000):
    a = rng.integers(0, 256, n, dtype=np.uint8)
    b = gt.from_numpy(a)
    small = (gt.ones(4) * 2).numpy()  # ops queued between uploads still run, in order
    assert small.tolist() == [2.0] * 4, small
    got = b.numpy()
    assert got.tobytes() == a.tobytes(), n
    assert int(b[n - 1].item()) == int(a[-1])
# More instructions than one frame holds (a compiled function's queue is sent whole at its end):
# sent as several frames, in order.
def bump(t):
    for _ in range(3000):
        t = t + 1.0
    return t
assert gt.compile(bump)(gt.zeros(4)).numpy().tolist() == [3000.0] * 4
print("ok")
'''


@pytest.mark.parametrize("limit", [64 << 10, 1 << 20, 8 << 20])
def test_uploads_fit_a_dispatcher_with_a_small_frame_limit(limit, tmp_path):
    # A dispatcher whose max_frame_bytes is below the client's 4 MiB upload chunks (and 16 MiB
    # upload queue): the client chunks and queues uploads to fit the limit the Welcome announces
    # (at 8 MiB its 2 MiB chunks still leave from the caller's memory), sends more instructions
    # than one frame holds as several frames, and the worker chunks fetch replies to fit, over
    # TCP (no shared memory). Before, the session ended ("frame of 4194328 bytes exceeds the
    # maximum") and a large fetch dropped the worker's link.
    import subprocess
    import time
    from conftest import bin_dir, run_python, stop_processes

    bins = bin_dir()
    port_file = tmp_path / "port"
    procs = [subprocess.Popen(
        [str(bins / "gt-dispatcherd"), "--port", "0", "--port-file", str(port_file),
         "--unix-socket", str(tmp_path / "d.sock"), "--max-frame-bytes", str(limit),
         "--log-level", "error"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        deadline = time.time() + 20
        while not (port_file.exists() and port_file.read_text().strip()):
            assert time.time() < deadline and procs[0].poll() is None, "gt-dispatcherd did not start"
            time.sleep(0.02)
        procs.append(subprocess.Popen(
            [str(bins / "gt-workerd"), "--dispatcher", "unix:" + str(tmp_path / "d.sock"),
             "--device", "cpu", "--log-level", "error"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        address = "127.0.0.1:" + port_file.read_text().strip()
        r = run_python(_UPLOADS, env={"GT_ADDRESS": address}, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "ok" in r.stdout
    finally:
        stop_processes(procs)
