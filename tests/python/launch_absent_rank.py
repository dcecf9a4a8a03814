"""One rank of test_launch.py's fault test: rank 1 leaves right after init_process_group, rank 0 joins the
engine's group with a short timeout and must be told that rank 1 never joined (exit 3), not wait."""
import sys

import torch.distributed as dist

import thunder_viz as tv

dist.init_process_group("gloo")
if dist.get_rank() == 1:
    sys.exit(0)
try:
    tv.process_group.join(timeout_seconds=5)
except tv.DistError as e:
    print(f"error: {e}", flush=True)
    sys.exit(3)
print("joined without rank 1", flush=True)
