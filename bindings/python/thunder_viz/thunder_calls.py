"""Recording the calls of Lightning Thunder's ThunderModule, and replaying them on the engine.

A forward hook (with the call's arguments) reads, after every call, what Thunder keeps about it:
`thunder.last_prologue_traces`, `last_traces`, `last_backward_traces`, the epilogue traces and
`thunder.compile_stats` (cache hits and misses, host times). The printouts are imported with the
engine's parser (each Thunder trace once: a cache hit reuses them), their provenance giving the
stages' pass names and Thunder's own times. The hook returns nothing and catches its own errors
(kept on the call), so Thunder's result and behaviour are those it would have without it.

The replay runs the call's final traces on the engine's executor: the prologue on the live module
and the call's arguments (when it checks an attribute the engine cannot read, the inputs are
unpacked as the prologue's statements say, without its checks), the computation on those inputs,
and, when the user's backward reaches the call's output, the backward trace on the cotangent
Thunder's backward received. Outputs are checked against Thunder's outputs,
gradients against what Thunder's backward added to the inputs' `.grad` (the engine's tolerance
rule). An op the executor does not know ends the replay with an error naming it.
"""
import torch

from . import _thunder_viz as _C
from . import process_group
from .traces import parse


class ImportedStage:
    """One stage of an imported Thunder history: the pass that made it, its trace, Thunder's time."""

    def __init__(self, pass_name, trace, milliseconds=0.0):
        self.pass_name, self.trace, self.milliseconds, self.changed = pass_name, trace, milliseconds, True


class ThunderReplay:
    """The engine's run of one Thunder call: `outputs` and `gradients` (TensorChecks against Thunder),
    `gradients_checked`, `prologue` ("engine" or "thunder": who unpacked the inputs), `error`."""

    def __init__(self):
        self.outputs, self.gradients = [], []
        self.gradients_checked = False
        self.prologue = ""
        self.error = ""

    def passed(self):
        return not self.error and all(c.passed for c in self.outputs + self.gradients)


def _thunder():
    import thunder  # only when a ThunderModule is attached

    return thunder


def _tensors(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        return [v for v in out.values() if isinstance(v, torch.Tensor)]
    return [o for o in (out or ()) if isinstance(o, torch.Tensor)]


def _stats(thunder, tmodel):
    cs = thunder.compile_stats(tmodel)
    return {
        "calls": cs.calls,
        "cache_hits": cs.cache_hits,
        "cache_misses": cs.cache_misses,
        "host_ms": max(cs.last_trace_host_stop - cs.last_trace_host_start, 0) / 1e6,
        "cache_lookup_ms": max(cs.last_trace_cache_stop - cs.last_trace_cache_start, 0) / 1e6,
    }


class ThunderRecorder:
    """Hooks a ThunderModule; `on_call(stages, outputs, hit, stats, replay)` is called after each call."""

    def __init__(self, tmodel, on_call, replay=True):
        self.thunder = _thunder()
        self.tmodel, self.on_call, self.replay = tmodel, on_call, replay
        self._imported = {}  # id(Thunder trace) -> (that trace, our Trace): kept alive so ids stay unique
        self._pending_hooks = []
        self._hits = self.thunder.compile_stats(tmodel).cache_hits
        self._buffers_before = {}  # id(buffer) -> (name, its value before the call): what the replay starts from
        self._pre_handle = tmodel.register_forward_pre_hook(self._before_call) if replay else None
        try:
            self._handle = tmodel.register_forward_hook(self._after_call, with_kwargs=True)
        except TypeError:  # torch before 2.0: no keyword arguments in hooks
            self._handle = tmodel.register_forward_hook(lambda m, args, out: self._after_call(m, args, {}, out))

    def remove(self):
        self._handle.remove()
        if self._pre_handle is not None:
            self._pre_handle.remove()
        for h in self._pending_hooks:
            h.remove()
        self._pending_hooks.clear()

    # -- one call
    def _before_call(self, module, args):
        # Thunder's call writes buffers in place (BatchNorm's running statistics, through copy_): the
        # replay runs on copies of their values before the call, never on the module's own.
        self._buffers_before = {id(b): (name, b.detach().clone()) for name, b in module.named_buffers()}
        return None

    def _after_call(self, module, args, kwargs, out):
        stats = _stats(self.thunder, self.tmodel)
        hit = stats["cache_hits"] > self._hits
        self._hits = stats["cache_hits"]
        stages, error = {}, ""
        try:
            stages = self._stages()
        except Exception as e:  # noqa: BLE001 - recorded; the user's call goes on untouched
            error = f"importing Thunder's traces failed: {type(e).__name__}: {e}"
        replay = None
        if self.replay and not error:
            replay = ThunderReplay()
            try:
                self._replay(stages, args, kwargs, out, replay)
            except Exception as e:  # noqa: BLE001 - the call's replay says why
                replay.error = f"{type(e).__name__}: {e}"
        self.on_call(stages, _tensors(out), hit, stats, replay, error)
        return None

    def _import(self, thunder_trace):
        key = id(thunder_trace)
        kept = self._imported.get(key)
        if kept is None or kept[0] is not thunder_trace:
            kept = (thunder_trace, parse(str(thunder_trace), "<Thunder trace>"))
            self._imported[key] = kept
        return kept[1]

    def _stages(self):
        thunder, tm = self.thunder, self.tmodel
        cs = thunder.compile_stats(tm)
        lists = {"prologue": thunder.last_prologue_traces(tm), "forward": thunder.last_traces(tm)}
        try:
            lists["backward"] = thunder.last_backward_traces(tm) or []
        except TypeError:  # no backward (inference)
            lists["backward"] = []
        lists["epilogue"] = getattr(cs, "last_epilogue_traces", None) or []
        stages = {}
        for kind, traces in lists.items():
            imported = []
            for i, t in enumerate(traces):
                tr = self._import(t)
                p = tr.provenance
                name = p["pass"] if p else ("acquisition" if i == 0 else f"stage {i}")
                ms = float(p["milliseconds"]) if p and p["milliseconds"] is not None else 0.0
                imported.append(ImportedStage(name, tr, ms))
            if imported:
                stages[kind] = imported
        return stages

    # -- replay on the engine
    def _computation_inputs(self, stages, args, kwargs, replay):
        prologue, computation = stages["prologue"][-1].trace, stages["forward"][-1].trace
        try:
            inputs = _C.execute_trace(prologue, list(args), dict(kwargs), self.tmodel)
            replay.prologue = "engine"
            return list(inputs[0])
        except _C.ExecError as e:
            # e.g. a checked attribute that is a tuple (LayerNorm's normalized_shape): the inputs are
            # unpacked as the prologue unpacks them, its checks left out.
            replay.prologue = f"unpacked (the engine's prologue stopped: {e})"
            return self._unpack_as_prologue(prologue, computation, args, kwargs)

    def _unpack_as_prologue(self, prologue, computation, args, kwargs):
        """The computation's inputs from the prologue's own statements: `x = args[0]`,
        `t = module.get_parameter('fc.weight')` (or get_buffer), `k = kwargs['k']`."""
        source = {}
        for b in prologue.bound_symbols:
            if len(b["outputs"]) == 1:
                source[b["outputs"][0]] = (b["name"], [a.strip() for a in b["args"].split(",", 1)])
        values = []
        for name in computation.args:
            op, (holder, key) = source.get(name, ("?", ["?", "?"]))
            key = key.strip("'\"")
            if op == "unpack_key" and holder == "args":
                values.append(args[int(key)])
            elif op == "unpack_key" and holder == "kwargs":
                values.append(kwargs[key])
            elif op in ("get_parameter", "get_buffer") and holder == "module":
                values.append(getattr(self.tmodel, op)(key))
            else:
                raise ValueError(f"the computation's input {name!r} is not unpacked from the arguments or the module "
                                 f"by the prologue ({op}({holder}, {key}))")
        return values

    def _replay(self, stages, args, kwargs, out, replay):
        if "prologue" not in stages or "forward" not in stages:
            replay.error = "no prologue or computation trace"
            return
        if process_group.active():
            # Under torch.distributed the traces' collectives (DDP's all-reduces) run over the engine's
            # group beside torch's: every rank replays at the same call, so every rank joins here.
            process_group.join()
        inputs = self._computation_inputs(stages, args, kwargs, replay)
        buffers = []  # (name, its value before the call, the engine's copy, the module's buffer after Thunder's call)
        for i, t in enumerate(inputs):
            named = self._buffers_before.get(id(t)) if isinstance(t, torch.Tensor) else None
            if named is not None:
                name, before = named
                buffers.append((name, before, before.clone(), t))
                inputs[i] = buffers[-1][2]
        result = _C.execute_trace(stages["forward"][-1].trace, inputs)
        # A buffer the call wrote (Thunder's or the engine's run): the engine's value against Thunder's.
        buffer_checks = []
        for name, before, mine, theirs in buffers:
            if not (torch.equal(mine, before) and torch.equal(theirs, before)):
                exact = not mine.is_floating_point()  # counters (num_batches_tracked) compared as numbers
                buffer_checks.append(_C.check_against_reference(
                    f"buffer[{name}]", mine.double() if exact else mine, theirs.detach().double() if exact else theirs.detach(), 0.0))
        augmented = isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], dict)
        ours = _tensors(result[0]["output"] if augmented else result)
        theirs = _tensors(out)
        replay.outputs = [_C.check_against_reference(f"output[{i}]", got, want.detach() if i < len(theirs) else None, 0.0)
                          for i, (got, want) in enumerate(zip(ours, theirs + [None] * len(ours)))] + buffer_checks
        if not augmented or "backward" not in stages:
            return
        flat_args = result[0].get("flat_args", [])
        saved = result[1]
        if len(theirs) != 1 or not theirs[0].requires_grad:
            return
        names = self._names(flat_args)
        backward = stages["backward"][-1].trace
        leaves = [a if isinstance(a, torch.Tensor) and a.requires_grad and a.is_leaf else None for a in flat_args]

        def on_cotangent(grad):
            before = [None if leaf is None or leaf.grad is None else leaf.grad.detach().clone() for leaf in leaves]
            try:
                ours_grads = list(_C.execute_trace(backward, [saved, (grad.detach(),)]))
            except Exception as e:  # noqa: BLE001 - recorded on the replay
                replay.error = f"backward: {type(e).__name__}: {e}"
                return

            def compare_after_backward():
                checks = []
                for name, leaf, prior, got in zip(names, leaves, before, ours_grads):
                    if leaf is None or not isinstance(got, torch.Tensor):
                        continue
                    want = None if leaf.grad is None else (leaf.grad.detach() - prior if prior is not None else leaf.grad.detach())
                    checks.append(_C.check_against_reference(f"grad[{name}]", got, want, 0.0))
                replay.gradients = checks
                replay.gradients_checked = True

            torch.autograd.Variable._execution_engine.queue_callback(compare_after_backward)

        handle = theirs[0].register_hook(on_cotangent)
        self._pending_hooks = self._pending_hooks[-15:] + [handle]

    def _names(self, flat_args):
        by_id = {id(p): n for n, p in self.tmodel.named_parameters()}
        by_id.update({id(b): n for n, b in self.tmodel.named_buffers()})
        return [by_id.get(id(a), f"input[{i}]") for i, a in enumerate(flat_args)]
