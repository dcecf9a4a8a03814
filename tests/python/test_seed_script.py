"""samples/python/seed_script.py: the seed's own code (the `_lc_cd.fn` line included) on 2 gloo ranks
in thunder-2024-03 semantics fails with Thunder's ValueError; the reporter's workaround line and
fsdp pass, with gradients equal to the mean of eager gradients (fsdp: each rank's shard)."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "samples", "python", "seed_script.py")
VALUE_ERROR = ("ValueError: None had an unexpected type <class 'NoneType'>. Supported types are <class "
               "'torch.distributed.distributed_c10d.ProcessGroup'>")


def _run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=600, env=dict(os.environ))


def test_the_seed_fails_with_thunders_value_error():
    r = _run()
    assert r.returncode == 1, r.stdout
    assert r.stdout.splitlines() == [f"rank 0: failed: {VALUE_ERROR}", f"rank 1: failed: {VALUE_ERROR}"]


@pytest.mark.parametrize("variant", [["--workaround"], ["--fsdp"]])
def test_the_workaround_and_fsdp_pass(variant):
    r = _run(*variant)
    assert r.returncode == 0, r.stdout
    lines = r.stdout.splitlines()
    assert lines[:2] == ["rank 0: passed", "rank 1: passed"], r.stdout
    for line in lines[2:]:
        assert float(line.rsplit("=", 1)[1]) < 1e-5, r.stdout
