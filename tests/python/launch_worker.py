"""One rank of tests/python/test_launch.py: a jitted model under an initialised torch.distributed group.

    launch_worker.py ORDER OUT [MODEL] [DEVICE]
        (ORDER: jit,ddp | ddp,jit | jit,fsdp | fsdp,jit; MODEL: linear | mlp; DEVICE: cpu (gloo) | cuda (nccl,
        the GPU of LOCAL_RANK))
"""
import os
import sys

import torch
import torch.distributed as dist

import thunder_viz as tv

order, out = sys.argv[1].split(","), sys.argv[2]
model_name = sys.argv[3] if len(sys.argv) > 3 else "linear"
device = sys.argv[4] if len(sys.argv) > 4 else "cpu"
if device == "cuda":
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
dist.init_process_group("nccl" if device == "cuda" else "gloo")
rank = dist.get_rank()
torch.manual_seed(0)
if model_name == "mlp":
    model = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.GELU(), torch.nn.Linear(7, 3))
else:
    model = torch.nn.Linear(5, 10, bias=False)
model = model.to(device)
torch.manual_seed(1 + rank)
x = torch.randn(2, 5, device=device)
wrap = {"ddp": tv.ddp, "fsdp": tv.fsdp}
m = model
for name in order:  # the order as written: ["fsdp", "jit"] is jit(fsdp(m))
    m = tv.jit(m) if name == "jit" else wrap[name](m)
insp = tv.attach(m)
m(x).sum().backward()
c = insp.last.checks
print(f"rank {rank}: world {tv.world_info()}, gradients checked {c['gradients_checked']}, "
      f"passed {all(t.passed for t in c['outputs'] + c['gradients'])}, "
      f"gradients on {next(model.parameters()).grad.device.type}", flush=True)
insp.save(out)
dist.destroy_process_group()
