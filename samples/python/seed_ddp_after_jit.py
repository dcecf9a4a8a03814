"""The seed problem: ddp applied after jit. In Thunder of 2024-03, `ddp(jit(model))` read the
process group jit() had snapshotted and failed; thunder_viz reads it at the first call, so both orders
work on 2 CPU ranks (gloo, threads of this process) and give canonically equal traces.

    PYTHONPATH=build-py/python /usr/bin/python3 samples/python/seed_ddp_after_jit.py
"""
import copy

import torch

import thunder_viz as tv

torch.manual_seed(0)
base = torch.nn.Linear(5, 10, bias=False)  # the seed's model
xs = [torch.randn(2, 5) for _ in range(2)]


def run(order):
    def rank_fn(rank):
        m = copy.deepcopy(base)
        tm = tv.ddp(tv.jit(m)) if order == "jit,ddp" else tv.jit(tv.ddp(m))
        insp = tv.attach(tm)
        tm(xs[rank]).sum().backward()
        return insp, m.weight.grad.clone()
    return tv.run_world(2, rank_fn)


after = run("jit,ddp")
before = run("ddp,jit")
print(tv.last_backward_traces(after[0][0].model)[-1])
verdict = after[0][0].compare(before[0][0])
grads_equal = all(torch.allclose(a[1], b[1]) for a, b in zip(after, before))
# The reference: the mean over ranks of eager gradients.
eager = []
for x in xs:
    r = copy.deepcopy(base)
    r(x).sum().backward()
    eager.append(r.weight.grad)
mean = (eager[0] + eager[1]) / 2
print(f"max |ddp grad - mean eager grad| = {(after[0][1] - mean).abs().max().item():.3g}")
print(f"gradients equal across orders: {grads_equal}")
print(f"verdict jit,ddp vs ddp,jit: {verdict}")
# What Thunder did at the seed (its semantics of 2024-03; samples/python/seed_script.py runs the seed's code):
try:
    tv.ddp(tv.jit(copy.deepcopy(base), semantics="thunder-2024-03"))(xs[0])
except ValueError as e:
    print("thunder-2024-03:", str(e).splitlines()[0])
