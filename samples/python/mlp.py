"""An MLP through thunder_viz.jit: numbers against eager, the stage history, a capture.

    PYTHONPATH=build-py/python /usr/bin/python3 samples/python/mlp.py [out.tvz.json] [--show]

--show opens the GUI on the capture (the replay panel shows the inspector's checks against eager).
"""
import copy
import sys

import torch
import torch.nn as nn

import thunder_viz as tv

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 64))
ref = copy.deepcopy(model)
x = torch.randn(2, 64)

tm = tv.jit(model)
insp = tv.attach(tm)
out = tm(x)
out.sum().backward()
want = ref(x)
want.sum().backward()

print("forward stages: ", [s.pass_name for s in insp.last.stages["forward"]])
print("backward stages:", [s.pass_name for s in insp.last.stages["backward"]])
print(tv.last_traces(tm)[-1])
print(f"max |out - eager| = {(out - want).abs().max().item():.3g}")
for (n, p), (_, q) in zip(model.named_parameters(), ref.named_parameters()):
    print(f"max |grad[{n}] - eager| = {(p.grad - q.grad).abs().max().item():.3g}")
builtin = tv.run_model("mlp", replay=False).stages(0)["forward"][0].trace
print("same program as the built-in mlp:", tv.last_traces(tm)[0].canonically_equal(builtin))
# The inspector ran the same call with eager torch: these checks are the capture's replay results.
for c in insp.last.checks["outputs"] + insp.last.checks["gradients"]:
    print(f"inspector check {c.name:<18} max rel {c.max_rel:.2e} (tol {c.tolerance:.0e}) {'PASS' if c.passed else 'FAIL'}")
args = [a for a in sys.argv[1:] if a != "--show"]
if args:
    print("capture:", insp.save(args[0]))
if "--show" in sys.argv:
    proc = insp.show(args[0] if args else None)
    print(f"GUI started (pid {proc.pid}); close its window to end it")
