"""The seed's script as it was launched: one rank per process under torchrun, gloo on CPU, DDP applied
after jit. Thunder failed here (jit() had read the process group before ddp() set it); thunder_viz
reads it at the first call, so the backward all-reduces over the launch's ranks.

    PYTHONPATH=build/python /usr/bin/python3 -m torch.distributed.run --redirects 1 --tee 1 --nproc_per_node 2 \\
        samples/python/seed_torchrun.py [OUT.tvz.json]

(`--redirects 1 --tee 1`: Debian's torch 1.13 on Python 3.11 fails with torchrun's default --redirects 0.)

Every rank records its call with an Inspector (outputs checked against eager torch, gradients against
the mean over the ranks of the eager gradients); save() is called on every rank and rank 0 writes one
capture holding every rank's checks (`thunder-viz show OUT.tvz.json`, `thunder-viz gui OUT.tvz.json`).
"""
import sys

import torch
import torch.distributed as dist

import thunder_viz as tv

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()

torch.manual_seed(0)
model = torch.nn.Linear(5, 10, bias=False)  # the seed's model, the same weights on every rank
torch.manual_seed(1 + rank)
x = torch.randn(2, 5)  # each rank its own batch

jmodel = tv.ddp(tv.jit(model))  # the seed's order: ddp after jit
insp = tv.attach(jmodel)
jmodel(x).sum().backward()

checks = insp.last.checks
failed = [c.name for c in checks["outputs"] + checks["gradients"] if not c.passed]
print(f"rank {rank} of {world}: gradients checked against the mean eager gradient: {checks['gradients_checked']}, "
      f"failed: {failed or 'none'}", flush=True)

out = insp.save(sys.argv[1] if len(sys.argv) > 1 else "seed_torchrun.tvz.json")  # every rank calls it
if rank == 0:
    print(tv.last_backward_traces(jmodel)[-1])
    cap = tv.load(out)
    print(f"{out}: {cap.pipeline_label(0)}: {cap.pipeline_line(0)} ({len(cap.replay(0))} ranks)")
dist.destroy_process_group()
sys.exit(1 if failed or not checks["gradients_checked"] else 0)
