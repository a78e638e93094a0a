"""Memory a plain Python loop cannot run away with: frees reach the worker in stream order, so
a loop of temporaries runs on a worker whose cap holds only a few of them (it ran out of memory
when frees were applied after whole batches)."""
from conftest import run_python


def test_loop_of_temporaries_fits_a_1_mib_worker(limited_dispatcher):
    # 3,000 iterations of 128 KiB of temporaries (384 MB made) through a 1 MiB worker.
    code = """
import gt
for i in range(3000):
    t = gt.zeros(256, 64) + 1.0
    if i % 500 == 499:
        assert t.sum().item() == 256 * 64, t.sum().item()
gt.synchronize()
print("ok")
"""
    r = run_python(code, env={"GT_ADDRESS": limited_dispatcher}, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ok" in r.stdout
