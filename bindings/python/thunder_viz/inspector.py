"""attach(): an Inspector recording every call's stage history, for our jitted modules and for
Lightning Thunder's ThunderModule (whose printouts are imported with the engine's parser)."""
import os
import shutil
import subprocess
import sys

import torch

from . import _thunder_viz as _C
from .jit import JittedModule
from .traces import KINDS, import_traces


def _is_thunder_module(obj):
    t = type(obj)
    return t.__name__ == "ThunderModule" or (t.__module__ or "").startswith("thunder")


class RecordedCall:
    """One call seen by an Inspector: the order, the stages ({kind: [Stage-like]}), hit/miss."""

    def __init__(self, order, stages, hit=None, outputs=(), world_size=1):
        self.order, self.stages, self.hit = list(order), stages, hit
        self.outputs = list(outputs)
        self.world_size = world_size

    def final(self, kind):
        s = self.stages.get(kind) or []
        return s[-1].trace if s else None


class _ImportedStage:
    def __init__(self, pass_name, trace):
        self.pass_name, self.trace, self.milliseconds, self.changed = pass_name, trace, 0.0, True


class Inspector:
    """Records the stage history of every call of `model`; save() writes a capture, show() opens
    the GUI on it, compare() gives the verdict of two inspected models."""

    def __init__(self, model):
        self.model = model
        self.calls = []
        self._thunder = _is_thunder_module(model)
        self._hook = None
        if isinstance(model, JittedModule):
            model._listeners.append(self._on_jit_call)
        elif self._thunder:
            self._hook = model.register_forward_hook(lambda mod, args, out: self._on_thunder_call(out))
        else:
            raise TypeError(f"attach expects a thunder_viz jitted module or a Thunder ThunderModule, got {type(model).__name__}")

    # -- recording
    def _on_jit_call(self, tm, rec):
        self.calls.append(RecordedCall(rec.order, rec.stages, rec.hit, rec.outputs, _C.world_info()[1]))

    def _on_thunder_call(self, out):
        import thunder  # only when a ThunderModule is attached

        texts = {
            "prologue": [str(t) for t in thunder.last_prologue_traces(self.model)],
            "forward": [str(t) for t in thunder.last_traces(self.model)],
        }
        try:
            texts["backward"] = [str(t) for t in (thunder.last_backward_traces(self.model) or [])]
        except Exception:  # no backward (inference) in this Thunder version
            texts["backward"] = []
        stages = {}
        for kind, ts in texts.items():
            lst = []
            for i, text in enumerate(ts):
                imp = import_traces([text])
                tr = imp.traces[0]
                p = tr.provenance
                lst.append(_ImportedStage(p["pass"] if p else ("acquisition" if i == 0 else f"stage {i}"), tr))
            if lst:
                stages[kind] = lst
        outs = [out] if isinstance(out, torch.Tensor) else [o for o in (out or ()) if isinstance(o, torch.Tensor)]
        self.calls.append(RecordedCall(["thunder.jit"], stages, None, [o.detach() for o in outs]))

    def __call__(self, *args, **kwargs):
        """Calls the model (the Thunder path records through a forward hook as well)."""
        return self.model(*args, **kwargs)

    def detach(self):
        if isinstance(self.model, JittedModule) and self._on_jit_call in self.model._listeners:
            self.model._listeners.remove(self._on_jit_call)
        if self._hook is not None:
            self._hook.remove()

    # -- views
    @property
    def last(self):
        if not self.calls:
            raise RuntimeError("no call recorded yet")
        return self.calls[-1]

    def last_traces(self):
        return [s.trace for s in self.last.stages.get("forward", [])]

    def last_prologue_traces(self):
        return [s.trace for s in self.last.stages.get("prologue", [])]

    def last_backward_traces(self):
        return [s.trace for s in self.last.stages.get("backward", [])]

    # -- capture
    def capture(self):
        name = getattr(self.model, "_name", type(self.model).__name__)
        cap = _C.Capture(name)
        params = [(n, list(p.shape), _short(p.dtype)) for n, p in _named_parameters(self.model)]
        cap.set_model(name, {}, params)
        seen = set()
        for call in self.calls:
            stages = {k: [(s.pass_name, s.trace, float(s.milliseconds)) for s in v] for k, v in call.stages.items()}
            key = tuple((k, tuple(s.trace.canonical_hash() for s in v)) for k, v in call.stages.items())
            if key in seen:
                continue
            seen.add(key)
            cap.add_pipeline(call.order, stages, call.world_size, "cpu")
        return cap

    def save(self, path):
        """Writes a capture (*.tvz.json) the CLI and the GUI read."""
        path = os.fspath(path)
        self.capture().save(path)
        return path

    def show(self, path=None):
        """Saves the capture and starts `thunder-viz gui PATH` in a separate process."""
        exe = find_binary()
        if path is None:
            import tempfile
            path = os.path.join(tempfile.mkdtemp(prefix="thunder_viz_"), "inspector.tvz.json")
        self.save(path)
        return subprocess.Popen([exe, "gui", path])

    def compare(self, other):
        """"equivalent" when the final traces of every kind are canonically equal and the last
        outputs match (float tolerance); otherwise "different" (like `thunder-viz compare`)."""
        return compare(self, other)[0]


def _short(dtype):
    return {torch.float32: "f32", torch.float64: "f64", torch.float16: "f16", torch.bfloat16: "bf16",
            torch.int64: "i64", torch.int32: "i32", torch.bool: "b8"}.get(dtype, "f32")


def _named_parameters(model):
    try:
        return list(model.named_parameters())
    except Exception:
        return []


def compare(a, b, rtol=1e-5):
    """(verdict, details): canonical equality of the last call's final traces per kind, and numbers."""
    ca, cb = a.last, b.last
    details = {}
    traces_equal = True
    for kind in KINDS:
        ta, tb = ca.final(kind), cb.final(kind)
        if ta is None and tb is None:
            continue
        same = ta is not None and tb is not None and ta.canonically_equal(tb)
        details[kind] = same
        traces_equal = traces_equal and same
    numbers_equal = len(ca.outputs) == len(cb.outputs) and all(
        x.shape == y.shape and torch.allclose(x.double(), y.double(), rtol=rtol, atol=rtol * max(1e-30, float(y.abs().max()) if y.numel() else 0.0))
        for x, y in zip(ca.outputs, cb.outputs))
    # Gradients held now by both models' parameters (after their backward), matched by name.
    ga = {n: p.grad for n, p in _named_parameters(a.model) if p.grad is not None}
    gb = {n: p.grad for n, p in _named_parameters(b.model) if p.grad is not None}
    for n in sorted(set(ga) & set(gb)):
        x, y = ga[n], gb[n]
        scale = max(float(y.abs().max()) if y.numel() else 0.0, 1e-30)
        same = x.shape == y.shape and float((x.double() - y.double()).abs().max()) <= rtol * scale
        details[f"grad[{n}]"] = same
        numbers_equal = numbers_equal and same
    if set(ga) != set(gb):
        numbers_equal = False
    details["numbers"] = numbers_equal
    verdict = "equivalent" if traces_equal and numbers_equal else "different"
    return verdict, details


def find_binary():
    """The thunder-viz executable: $THUNDER_VIZ_BIN, next to the package, the build tree, or PATH."""
    env = os.environ.get("THUNDER_VIZ_BIN")
    if env and os.path.isfile(env):
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    for cand in (os.path.join(here, "thunder-viz"), os.path.join(here, "..", "..", "bin", "thunder-viz"),
                 os.path.join(os.path.dirname(sys.executable), "thunder-viz")):
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return os.path.abspath(cand)
    found = shutil.which("thunder-viz")
    if found:
        return found
    raise FileNotFoundError("thunder-viz executable not found: build it (ninja -C build thunder-viz), put it on PATH "
                            "or set THUNDER_VIZ_BIN")


def attach(model):
    """An Inspector on a thunder_viz jitted module or a Lightning Thunder ThunderModule."""
    return Inspector(model)


def load(path):
    """A saved capture (engine load_capture): .pipelines as (label, stages) pairs."""
    return _C.Capture.load(os.fspath(path))
