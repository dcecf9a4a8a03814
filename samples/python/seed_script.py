"""The seed's own script, run as its reporter wrote it, on 2 CPU ranks (gloo, threads of this
process), through thunder_viz's jit in Thunder's semantics of 2024-03:

    tmodel = thunder.jit(model)
    tmodel._lc_cd.fn = thunder.distributed.ddp(tmodel._lc_cd.fn)

jit() copies process_group_for_ddp from the module into tmodel._lc_cd before ddp() sets it; DDP's
backward bucketing reads that copy (None), and the all-reduce's meta check raises Thunder's
ValueError at the first call. With the reporter's workaround line it passes, and so does fsdp
(which reads the module's group at the call).

    PYTHONPATH=build/python /usr/bin/python3 samples/python/seed_script.py [--workaround] [--fsdp]

Prints each rank's outcome; exits 1 when a rank failed.
"""
import sys
import threading

import torch

import thunder_viz as tv

WORKAROUND = "--workaround" in sys.argv
DISTRIBUTE = tv.fsdp if "--fsdp" in sys.argv else tv.ddp


# The ranks are threads sharing torch's global generator: one rank seeds and draws at a time (under
# torchrun each rank is a process with its own).
draws = threading.Lock()


def seed(rank):
    with draws:
        torch.manual_seed(0)
        model = torch.nn.Linear(5, 10, bias=False)
        torch.manual_seed(1 + rank)
        x = torch.randn(2, 5)
    tmodel = tv.jit(model, semantics="thunder-2024-03")
    tmodel._lc_cd.fn = DISTRIBUTE(tmodel._lc_cd.fn)
    if WORKAROUND:
        tmodel._lc_cd.process_group_for_ddp = tmodel._lc_cd.fn.process_group_for_ddp
    try:
        tmodel(x).sum().backward()
    except ValueError as e:
        return f"rank {rank}: failed: {str(e).splitlines()[0]}", None
    return f"rank {rank}: passed", model.weight.grad.clone()


def mean_eager_gradient():
    grads = []
    for rank in range(2):
        torch.manual_seed(0)
        model = torch.nn.Linear(5, 10, bias=False)
        torch.manual_seed(1 + rank)
        model(torch.randn(2, 5)).sum().backward()
        grads.append(model.weight.grad)
    return (grads[0] + grads[1]) / 2


results = tv.run_world(2, seed)
for line, _ in results:
    print(line)
if any(grad is None for _, grad in results):
    sys.exit(1)
mean = mean_eager_gradient()
for rank, (_, grad) in enumerate(results):  # (fsdp too: each rank's shard gathered into the whole gradient)
    print(f"rank {rank}: max |gradient - mean eager gradient| = {(grad - mean).abs().max().item():.3g}")
