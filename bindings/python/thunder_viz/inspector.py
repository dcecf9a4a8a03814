"""attach(): an Inspector recording every call's stage history, for our jitted modules and for
Lightning Thunder's ThunderModule (whose printouts are imported with the engine's parser)."""
import contextlib
import collections
import os
import re
import shutil
import subprocess
import sys

import torch
import torch.utils._pytree as pytree

from . import _thunder_viz as _C
from . import process_group
from .jit import JittedModule
from .programs import compare_programs
from .thunder_calls import ThunderRecorder
from .traces import KINDS


# Calls whose eager reference is kept for their backward (older ones are dropped unchecked).
_MAX_AWAITING_BACKWARD = 16


def _is_thunder_module(obj):
    t = type(obj)
    return t.__name__ == "ThunderModule" or (t.__module__ or "").startswith("thunder")


class RecordedCall:
    """One call seen by an Inspector: the order, the stages ({kind: [Stage-like]}), hit/miss, and
    for our jitted modules the checks against eager torch (`checks`, see Inspector)."""

    def __init__(self, order, stages, hit=None, outputs=(), world_size=1, rank=0):
        self.order, self.stages, self.hit = list(order), stages, hit
        self.outputs = list(outputs)
        self.world_size, self.rank = world_size, rank
        # {"rank", "outputs": [TensorCheck], "gradients": [TensorCheck], "gradients_checked"}; None
        # when the call was not checked; check_error says why an eager reference could not run.
        self.checks = None
        self.check_error = ""
        self.record = None  # our jitted module's CallRecord (its timings), None for Thunder calls
        # Lightning Thunder calls: compile_stats after the call (calls, cache_hits, cache_misses, host_ms,
        # cache_lookup_ms), the engine's replay of the call (thunder_calls.ThunderReplay, None with
        # check=False) and why its traces could not be imported ("" when they were).
        self.thunder_stats, self.replay, self.error = None, None, ""

    def final(self, kind):
        s = self.stages.get(kind) or []
        return s[-1].trace if s else None


class Inspector:
    """Records the stage history of every call of `model`; save() writes a capture, show() opens
    the GUI on it, compare() gives the verdict of two inspected models.

    On our jitted modules, with check=True (the default), every call is also run by eager torch
    (the original nn.Module on copies of its parameters, the global RNG left untouched) and its
    outputs, and after the call's backward its gradients with the same cotangents, are checked as
    `thunder-viz run` replays check (same tolerances). save() stores the checks of the last call
    of each pipeline (preferring one with gradients), with that call's per-bound-symbol times, as
    the pipeline's replay, which the GUI's
    replay panel and `thunder-viz show` display. This doubles the work of a call; check=False skips
    it. Under ddp/fsdp on more than one rank the parameters' reference is the mean over the ranks of
    their eager gradients: one rank per process under torch.distributed (torchrun), the ranks average
    them with torch.distributed and every rank's gradients are checked; inside run_world's threads
    they are not checked. Under torch.distributed, save() and capture() are collectives: every rank
    calls them, rank 0 gets (and save() writes) one capture with every rank's checks, the other ranks
    write nothing unless the path holds "{rank}" (then each writes its own capture there)."""

    def __init__(self, model, check=True):
        self.model = model
        self.calls = []
        self._thunder = _is_thunder_module(model)
        self._recorder = None
        self._check = bool(check) and isinstance(model, JittedModule)
        self._awaiting_backward = collections.deque()
        if isinstance(model, JittedModule):
            model._listeners.append(self._on_jit_call)
        elif self._thunder:
            self._recorder = ThunderRecorder(model, self._on_thunder_call, replay=bool(check))
        else:
            raise TypeError(f"attach expects a thunder_viz jitted module or a Thunder ThunderModule, got {type(model).__name__}")

    # -- recording
    def _on_jit_call(self, tm, rec, inputs):
        call = RecordedCall(rec.order, rec.stages, rec.hit, rec.outputs, _C.world_info()[1])
        call.record = rec
        self.calls.append(call)
        if self._check:
            _check_against_eager(tm, rec, inputs, call)
            if rec.backward_listeners:
                # The eager graph waits for the call's backward; keep it for the last few calls only.
                self._awaiting_backward.append(rec)
                while len(self._awaiting_backward) > _MAX_AWAITING_BACKWARD:
                    self._awaiting_backward.popleft().backward_listeners.clear()

    def _on_thunder_call(self, stages, outputs, hit, stats, replay, error):
        rank, world = _torch_distributed_rank()
        call = RecordedCall(_thunder_order(self.model), stages, hit, [o.detach() for o in outputs], world, rank)
        call.thunder_stats, call.replay, call.error = stats, replay, error
        self.calls.append(call)

    def __call__(self, *args, **kwargs):
        """Calls the model (the Thunder path records through a forward hook as well)."""
        return self.model(*args, **kwargs)

    def detach(self):
        if isinstance(self.model, JittedModule) and self._on_jit_call in self.model._listeners:
            self.model._listeners.remove(self._on_jit_call)
        if self._recorder is not None:
            self._recorder.remove()

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
        """This rank's capture; under torch.distributed (a collective) rank 0's holds every rank's."""
        local = self._local_capture()
        # Ours under the engine's group and a Thunder module under torch.distributed alike.
        if process_group.active():
            return process_group.merged_capture(local)
        return local

    def _local_capture(self):
        name = getattr(self.model, "_name", type(self.model).__name__)
        cap = _C.Capture(name)
        params = [(n, list(p.shape), _short(p.dtype)) for n, p in _named_parameters(self.model)]
        cap.set_model(name, {}, params)
        index, checked = {}, {}  # pipeline key -> capture index, -> the call whose checks it keeps
        for call in self.calls:
            key = tuple((k, tuple(s.trace.canonical_hash() for s in v)) for k, v in call.stages.items())
            if key not in index:
                stages = {k: [(s.pass_name, s.trace, float(s.milliseconds)) for s in v] for k, v in call.stages.items()}
                index[key] = cap.add_pipeline(call.order, stages, call.world_size, "cpu", call.error)
            checks = _checks_of(call)
            if checks is not None:
                kept = checked.get(key)
                if kept is None or checks["gradients_checked"] or not _checks_of(kept)["gradients_checked"]:
                    checked[key] = call
        for key, call in checked.items():
            c = _checks_of(call)
            cap.set_replay(index[key], [(c["rank"], c["outputs"], c["gradients"], c["error"])])
            if call.record is not None:
                cap.set_timings(index[key], c["rank"], call.record.timings)
        return cap

    def save(self, path, inputs=None):
        """Writes a capture (*.tvz.json) the CLI and the GUI read.

        With `inputs` (the forward's arguments, a tuple: an example batch), it also writes
        PATH.tensors.pt beside it (torch.save format): the model's parameters and buffers as they
        are now, those inputs, and eager torch's outputs and parameter gradients on them (with the
        cotangents a replay draws). The GUI's Order panel then re-runs any transform order on the
        model rebuilt from the capture, on these weights, and checks every order's outputs and
        gradients against the stored eager numbers. The eager run works on copies: the model is not
        changed. A model that draws random numbers in training mode (dropout) gives other numbers on
        every run: call model.eval() first."""
        path = os.fspath(path)
        cap = self.capture()
        if process_group.active():
            rank = torch.distributed.get_rank()
            if "{rank}" not in path and rank != 0:
                return None
            path = path.replace("{rank}", str(rank))
        if inputs is not None:
            tensors_path = path + ".tensors.pt"
            partial = tensors_path + ".partial"
            torch.save(_stored_tensors(self.model, tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)),
                       partial)
            os.replace(partial, tensors_path)
            cap.tensors_file = os.path.basename(tensors_path)
        cap.save(path)
        return path

    def show(self, path=None, args=(), **popen_kwargs):
        """Saves the capture (to `path`, or a new temporary folder) and starts `thunder-viz gui PATH
        *args` in a separate process; returns its subprocess.Popen at once (the caller may wait(),
        poll() or terminate() it). Raises RuntimeError when there is no display to open a window on
        or the executable was built without the GUI, FileNotFoundError when there is no executable."""
        if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            raise RuntimeError("Inspector.show(): no display (DISPLAY and WAYLAND_DISPLAY are unset); save() the "
                               "capture and open it where there is one with `thunder-viz gui FILE`, or run under "
                               "Xvfb (xvfb-run)")
        exe = find_binary()
        if not has_gui(exe):
            raise RuntimeError(f"{exe} has no `gui` command: it was built with TV_BUILD_GUI=OFF; rebuild it with "
                               "-DTV_BUILD_GUI=ON (needs GLFW and OpenGL) or point THUNDER_VIZ_BIN at one that has it")
        if path is None:
            import tempfile
            path = os.path.join(tempfile.mkdtemp(prefix="thunder_viz_"), "inspector.tvz.json")
        path = self.save(path)
        return subprocess.Popen([exe, "gui", path, *[str(a) for a in args]], **popen_kwargs)

    def compare(self, other):
        """"equivalent" when the final traces of every kind are canonically equal and the last
        outputs match (float tolerance); otherwise "different" (like `thunder-viz compare`)."""
        return compare(self, other)[0]


def _checks_of(call):
    """A call's checks as the capture's replay stores them: ours against eager torch, a Thunder
    call's engine replay against Thunder; None when the call was not checked."""
    if call.checks is not None:
        return dict(call.checks, error=call.check_error)
    r = call.replay
    if r is None:
        return None
    return {"rank": call.rank, "outputs": r.outputs, "gradients": r.gradients, "gradients_checked": r.gradients_checked,
            "error": r.error}


# The seed replay draws rank 0's cotangents from (ReplayOptions::cotangent_seed).
_COTANGENT_SEED = 1234


def _stored_tensors(model, inputs):
    """What Inspector.save(path, inputs=...) stores beside a capture (docs/capture-format.md,
    /model/tensors): weights, buffers, the tensor inputs, eager's outputs and parameter gradients."""
    module = getattr(model, "module", model)
    params = list(module.named_parameters())
    stored = {f"parameter:{n}": p.detach().cpu().clone() for n, p in params}
    stored.update({f"buffer:{n}": b.detach().cpu().clone() for n, b in module.named_buffers()})
    flat_inputs = [x for x in pytree.tree_flatten(list(inputs))[0] if isinstance(x, torch.Tensor)]
    stored.update({f"input:{k}": x.detach().cpu().clone() for k, x in enumerate(flat_inputs)})
    leaves = {n: p.detach().clone().requires_grad_(p.requires_grad) for n, p in params}
    tensors = dict(leaves)
    tensors.update({n: b.detach().clone() for n, b in module.named_buffers()})
    args = pytree.tree_map(lambda x: x.detach().clone() if isinstance(x, torch.Tensor) else x, list(inputs))
    with torch.random.fork_rng(devices=[]), torch.enable_grad():
        outputs = _flat_tensors(_functional_call(module, tensors, tuple(args), {}))
        cotangents = _C.make_cotangents([o.detach() for o in outputs], _COTANGENT_SEED)
        pairs = [(o, c) for o, c in zip(outputs, cotangents) if c is not None and o.requires_grad]
        wanted = [(n, leaf) for n, leaf in leaves.items() if leaf.requires_grad]
        with _buffers_kept(module):
            grads = torch.autograd.grad([o for o, _ in pairs], [leaf for _, leaf in wanted], [c for _, c in pairs],
                                        allow_unused=True) if pairs and wanted else []
    stored.update({f"output:{i}": o.detach().cpu().clone() for i, o in enumerate(outputs)})
    stored.update({f"grad:{n}": g.detach().cpu().clone() for (n, _), g in zip(wanted, grads) if g is not None})
    stored["cotangent_seed"] = torch.tensor(_COTANGENT_SEED, dtype=torch.int64)
    return stored


@contextlib.contextmanager
def _buffers_kept(module):
    """The module's buffers as they were, after an eager reference's backward: a checkpointed block
    recomputed there (torch.utils.checkpoint) runs on the module's own buffers, functional_call's
    copies being gone by then, and would update its batch norms' running statistics."""
    kept = [(b, b.detach().clone()) for b in module.buffers()]
    try:
        yield
    finally:
        with torch.no_grad():
            for b, value in kept:  # (compared: batch_norm writes its statistics without a new version)
                if not torch.equal(b, value):
                    b.copy_(value)


def _functional_call(module, tensors, args, kwargs):
    try:
        from torch.func import functional_call  # torch >= 2.0
    except ImportError:
        from torch.nn.utils.stateless import functional_call  # torch 1.13
    return functional_call(module, tensors, args, kwargs)


def _flat_tensors(out):
    """The tensors of an output structure, in the order the recorder numbered them."""
    return [o for o in pytree.tree_flatten(out)[0] if isinstance(o, torch.Tensor)]


def _check_against_eager(tm, rec, inputs, call):
    """Runs the call again with eager torch on copies of the parameters and inputs and checks the
    engine's outputs against it; registers the check of the gradients for the call's backward."""
    rank, world, _ = _C.world_info()
    min_tol, distributes = _C.order_facts(rec.order)
    module = tm.module
    params = list(module.named_parameters())
    leaves = [p.detach().clone().requires_grad_(p.requires_grad) for _, p in params]
    xs = [x.detach().clone().requires_grad_(x.requires_grad and x.is_floating_point()) for x in inputs]
    tensors = {n: t for (n, _), t in zip(params, leaves)}
    tensors.update({n: b.detach().clone() for n, b in module.named_buffers()})
    try:
        with torch.random.fork_rng(devices=[]), torch.set_grad_enabled(rec.needs_grad):
            args, kwargs = rec.rebuild_arguments(xs)
            eager = _flat_tensors(_functional_call(module, tensors, args, kwargs))
    except Exception as e:  # noqa: BLE001 - reported on the call, the engine's result stands
        call.check_error = f"eager reference failed: {type(e).__name__}: {e}"
        return
    outs = [_C.check_against_reference(f"output[{i}]", got, eager[i].detach() if i < len(eager) else None, min_tol)
            for i, got in enumerate(rec.outputs)]
    call.checks = {"rank": rank, "outputs": outs, "gradients": [], "gradients_checked": False}
    distributed = world > 1 and distributes
    # One rank per process: the parameters' reference is the mean over the ranks of their eager
    # gradients (averaged through torch.distributed). Threads of run_world have no such group.
    averaged = distributed and _C.world_kind() == "processes"
    if not rec.needs_grad or (distributed and not averaged):
        return
    names = rec.input_names + [n for n, _ in params]
    refs = xs + leaves
    # the captured tensors' and the dropout seed's places among the bridge's inputs (not checked)
    between = len(rec.program.captured) + (1 if rec.program.uses_seed else 0)

    def on_backward(cotangents, grads):
        grads = list(grads[:len(xs)]) + list(grads[len(xs) + between:])
        pairs = [(o, c) for o, c in zip(eager, cotangents) if o.requires_grad and c is not None]
        wanted = [r for r in refs if r.requires_grad]
        failed = None
        try:
            with _buffers_kept(module):
                found = torch.autograd.grad([o for o, _ in pairs], wanted, [c for _, c in pairs],
                                            allow_unused=True) if pairs and wanted else []
        except Exception as e:  # noqa: BLE001 - the user's backward goes on; the call says why
            failed = f"eager reference backward failed: {type(e).__name__}: {e}"
            found = [None] * len(wanted)
        by_ref = {id(r): g for r, g in zip(wanted, found)}
        if averaged:  # every rank averages, even one whose reference failed, so that none waits
            mine = [by_ref.get(id(leaf)) for leaf in leaves]
            means = process_group.mean_over_ranks(
                [g if g is not None else torch.zeros_like(leaf) for g, leaf in zip(mine, leaves)])
            for leaf, g, mean in zip(leaves, mine, means):
                if g is not None:
                    by_ref[id(leaf)] = mean
        if failed:
            call.check_error = failed
            return
        checks = []
        for name, ref, got in zip(names, refs, grads):
            if got is not None:
                want = by_ref.get(id(ref))
                checks.append(_C.check_against_reference(f"grad[{name}]", got, want, min_tol))
        call.checks["gradients"] = checks
        call.checks["gradients_checked"] = True

    rec.backward_listeners.append(on_backward)


def _thunder_order(tmodel):
    """["thunder.jit", then the transforms added to the ThunderModule (thunder.distributed.ddp's DDPTransform...)]."""
    return ["thunder.jit"] + [type(t).__name__ for t in getattr(tmodel, "_lc_transforms", [])]


def _torch_distributed_rank():
    """(rank, world size) of torch.distributed's default process group, (0, 1) without one."""
    dist = getattr(torch, "distributed", None)
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _short(dtype):
    return {torch.float32: "f32", torch.float64: "f64", torch.float16: "f16", torch.bfloat16: "bf16",
            torch.int64: "i64", torch.int32: "i32", torch.bool: "b8"}.get(dtype, "f32")


def _named_parameters(model):
    try:
        return list(model.named_parameters())
    except Exception:
        return []


def _is_thunder_call(call):
    return bool(call.order) and call.order[0].startswith("thunder.")


def _order_min_tolerance(order):
    """The tolerance floor the engine reads off an order's transforms (autocast's dtype); a
    Lightning Thunder call (order ["thunder.jit"]) has no engine transforms."""
    if order and order[0].startswith("thunder."):
        return 0.0
    return _C.order_facts(order)[0]


def compare(a, b):
    """(verdict, details) of two inspected models' last calls, in the engine's words
    (session/assess.h, as `thunder-viz compare` prints them): the final traces of every kind
    canonically equal, and a's outputs and parameter gradients checked against b's with the engine's
    tolerance rule (replay's check_against_reference). details maps each trace kind and tensor to
    whether it matched, and "why" to the verdict's reason. When one side is a Lightning Thunder call,
    the first forward traces (the acquired programs) are lined up op by op instead, Thunder's spellings
    mapped to ours (programs.compare_programs): details["program"] holds the rows."""
    ca, cb = a.last, b.last
    details, differs = {}, []
    if _is_thunder_call(ca) or _is_thunder_call(cb):
        # Spelled differently: the acquired programs are lined up op by op (programs.py).
        names = ["Thunder" if _is_thunder_call(c) else "thunder_viz" for c in (ca, cb)]
        first = [(c.stages.get("forward") or [None])[0] for c in (ca, cb)]
        if first[0] is not None and first[1] is not None:
            details["program"] = compare_programs(first[0].trace, first[1].trace, *names)
            details["forward"] = details["program"].same_program
            if not details["forward"]:
                differs.append(f"acquired program ({details['program'].summary()})")
    for kind in KINDS if "program" not in details else ():
        ta, tb = ca.final(kind), cb.final(kind)
        if ta is None and tb is None:
            continue
        details[kind] = ta is not None and tb is not None and ta.canonically_equal(tb)
        if not details[kind]:
            differs.append(f"final {kind} trace")
    min_tol = max(_order_min_tolerance(ca.order), _order_min_tolerance(cb.order))
    numbers_equal = len(ca.outputs) == len(cb.outputs)
    for i, (x, y) in enumerate(zip(ca.outputs, cb.outputs)):
        details[f"output[{i}]"] = _C.check_against_reference(f"output[{i}]", x, y, min_tol).passed
        numbers_equal = numbers_equal and details[f"output[{i}]"]
    # Gradients held now by both models' parameters (after their backward), matched by name.
    ga = {n: p.grad for n, p in _named_parameters(a.model) if p.grad is not None}
    gb = {n: p.grad for n, p in _named_parameters(b.model) if p.grad is not None}
    for n in sorted(set(ga) & set(gb)):
        details[f"grad[{n}]"] = _C.check_against_reference(f"grad[{n}]", ga[n], gb[n], min_tol).passed
        numbers_equal = numbers_equal and details[f"grad[{n}]"]
    numbers_equal = numbers_equal and set(ga) == set(gb)
    details["numbers"] = numbers_equal
    if not numbers_equal:
        differs.append("numbers")
    verdict, details["why"] = _C.conclude(differs)
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


def has_gui(exe):
    """Whether the thunder-viz executable `exe` lists the `gui` command (built with TV_BUILD_GUI=ON)."""
    out = subprocess.run([exe, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60).stdout
    return re.search(rb"^\s+gui(\s|$)", out, re.MULTILINE) is not None


def attach(model, check=True):
    """An Inspector on a thunder_viz jitted module or a Lightning Thunder ThunderModule (check: see
    Inspector)."""
    return Inspector(model, check)


def load(path):
    """A saved capture (engine load_capture): .pipelines as (label, stages) pairs."""
    return _C.Capture.load(os.fspath(path))
