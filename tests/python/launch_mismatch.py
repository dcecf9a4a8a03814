"""One rank of tests/python/test_launch.py's checks of ranks that disagree, launched by environment
variables (two ranks, gloo).

    launch_mismatch.py CASE ORDER
      shapes    rank 1 builds a wider layer: refused before any collective, naming the parameter
      branch    the forward branches on this rank's batch size: refused, naming the collectives
      seeds     each rank initialises its own weights: every rank starts from rank 0's (as torch's DDP)
      no-group  WORLD_SIZE is set but torch.distributed is never initialised: refused
"""
import copy
import sys

import torch
import torch.distributed as dist

import thunder_viz as tv

case, order = sys.argv[1], sys.argv[2].split(",")


class Branches(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(5, 5)
        self.b = torch.nn.Linear(5, 5)

    def forward(self, x):
        y = self.a(x)
        return self.b(y) if x.shape[0] > 3 else y


def jitted(model):
    wrap = {"ddp": tv.ddp, "fsdp": tv.fsdp}
    for name in order:  # the order as written: ["fsdp", "jit"] is jit(fsdp(m))
        model = tv.jit(model) if name == "jit" else wrap[name](model)
    return model


if case != "no-group":
    dist.init_process_group("gloo")
rank = dist.get_rank() if case != "no-group" else int(__import__("os").environ["RANK"])
torch.manual_seed(0 if case != "seeds" else 1 + rank)
model = {"shapes": lambda: torch.nn.Linear(5, 3 + rank), "branch": Branches}.get(case, lambda: torch.nn.Linear(5, 4))()
start = copy.deepcopy(model)
x = torch.randn(2 if case != "branch" or rank == 0 else 5, 5, generator=torch.Generator().manual_seed(rank))
try:
    tm = jitted(model)
    tm(x).sum().backward()
except (ValueError, RuntimeError) as e:
    print(f"rank {rank} refused: {e}", flush=True)
    sys.exit(3)
if case == "seeds":
    weights = [torch.zeros_like(start.weight) for _ in range(2)]
    dist.all_gather(weights, start.weight.detach())
    assert torch.equal(model.weight.detach(), weights[0]), "rank 0's weights"
    grads = []
    for r in range(2):
        ref = copy.deepcopy(start)
        with torch.no_grad():
            ref.weight.copy_(weights[0])
        x_r = torch.randn(2, 5, generator=torch.Generator().manual_seed(r))
        grads.append(torch.autograd.grad(ref(x_r).sum(), ref.weight)[0])
    assert torch.allclose(model.weight.grad, (grads[0] + grads[1]) / 2, atol=1e-6), "the mean gradient"
print(f"rank {rank} ran", flush=True)
dist.destroy_process_group()
