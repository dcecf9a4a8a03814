"""The seed problem: ddp applied after jit. In Thunder (before the fix), `ddp(jit(model))` read
the process group at jit() time and failed; thunder_viz reads it at the first call, so both orders
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
# What Thunder did (capture-at-jit mode reproduces it):
try:
    tv.ddp(tv.jit(copy.deepcopy(base), capture_at_jit=True))(xs[0])
except Exception as e:
    print("capture-at-jit (Thunder's old behaviour):", str(e).splitlines()[0][:160])
