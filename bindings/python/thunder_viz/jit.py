"""thunder_viz.jit: a torch nn.Module recorded into an engine Module, run by the engine.

The jitted module is an nn.Module (as Lightning Thunder's ThunderModule is): train()/eval(), to(),
hooks, and the wrapped module's parameters, buffers and state_dict under their own names. A call
takes what the forward takes: tensors, None, Python numbers and strings, by position or keyword,
nested in tuples, lists and dicts; its tensors are the program's inputs, everything else is a
constant of the recording. The call looks the tensors' metadata, the constants, the parameters
(which tensor objects, and their metadata), the modules' constant attributes (training, a `scale`
or the `dims` the forward reads), torch's default dtype, and, for an entry, the tensors it captured
and the global numbers its code names, up in the cache: a miss records the forward again (so control flow that depends
on them is followed) and builds the pipeline (transforms, autograd, passes); a hit reuses it.
Outputs come from the engine's executor, in the structure forward returned; `loss.backward()` runs
the engine's backward trace through a torch.autograd.Function and fills the original parameters'
`.grad`. The call history keeps the last `history_limit` calls.
"""
import collections
import contextlib
import copy
import inspect
import itertools
import math
import threading
import types
import warnings
import weakref

import torch
import torch.nn.modules.module as _nn_module
import torch.nn.utils.parametrize as _parametrize
import torch.utils._pytree as pytree
from torch.utils.hooks import RemovableHandle as _RemovableHandle

from . import _thunder_viz as _C
from . import heap, process_group
from .errors import EagerMismatch, UnsupportedOp
from .constants import (GONE, MAX_NESTING, DeepValue, deep_value, fields_table, hashable, holds_fields, hook_objects,
                        is_constant, is_torchs, keyed_attribute, names_of_settings_class, names_read, snapshot,
                        too_many_items)
from .recorder import (DTYPES, BlockInput, autocast_state, memory_span, rebuild_output, record, recording,
                       register_containers, shown_path, storage_pointer, user_frame, within_output)

DEFAULT_HISTORY_LIMIT = 100
MAX_CACHE_ENTRIES = 64  # the oldest entry goes beyond it (each holds its traces and executors)
MISSES_BEFORE_WARNING = 16
MAX_SETTINGS_TABLES = 4096  # settings objects and dicts whose fields a key holds, nested ones included


def _meta(t):
    """What a forward may read of an input tensor without recording it (CallGuard compares the same):
    its shape, dtype, device, requires_grad and contiguity; the strides of a strided one (a branch
    on x.stride(), a reshape that is a view for one layout and a copy for another); whether one that
    requires grad is a leaf (x.is_leaf, x.grad_fn is None); its class (an nn.Parameter passed in)."""
    contiguous = t.is_contiguous()
    return (tuple(t.shape), t.dtype, t.device, t.requires_grad, contiguous, None if contiguous else t.stride(),
            t.requires_grad and t.grad_fn is None, type(t))


def _is_scalar(value):
    return isinstance(value, (bool, int, float, str))


# A module's hook tables, and torch.nn's global ones (those of the running torch version that exist).
_HOOK_DICTS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")
_MORE_HOOK_DICTS = ("_forward_hooks_with_kwargs", "_forward_hooks_always_called", "_forward_pre_hooks_with_kwargs")
_ALL_HOOK_DICTS = _HOOK_DICTS + _MORE_HOOK_DICTS
_GLOBAL_HOOK_DICTS = ("_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks",
                      "_global_backward_pre_hooks")
# A module's own tables, which the key reads otherwise (parameters, buffers, submodules, hooks).
_MODULE_INTERNALS = {"_parameters", "_buffers", "_modules", "_non_persistent_buffers_set"} | set(_HOOK_DICTS) | {
    "_forward_hooks_with_kwargs", "_forward_hooks_always_called", "_forward_pre_hooks_with_kwargs",
    "_state_dict_hooks", "_state_dict_pre_hooks", "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks"}


def _at(table, key, default=GONE):
    """table[key] (a dict's, a mapping's, a list's), or `default` where it has no such item."""
    try:
        return table[key]
    except (TypeError, KeyError, IndexError):
        return default


class _Length:
    """A list's length as a CallGuard's attribute: `_Length(items)["len"]`."""

    def __init__(self, items):
        self.items = items

    def __getitem__(self, name):
        return len(self.items)


class _ModuleState:
    """What a call reads of the wrapped module, cheaply: the structure (its modules, the names of
    their constant attributes (constants.is_constant) and of the fields of their settings objects
    and dicts, where each parameter and buffer lives) is scanned once and again only when a module
    gains or loses an attribute, parameter, buffer or submodule, or a submodule is replaced;
    a call reads values only: the constants' (a forward that reads `self.scale` or
    `self.config.eps` bakes it into the trace, so a change is a new acquisition) and the tensors in
    their places (a Parameter replaced by assignment is seen)."""

    def __init__(self, module):
        self.module = module
        self.settings = {}
        self._scan()

    def _fingerprint(self):
        kept = tuple(_at(table.get(n), i) is module for table, n, i, module in self.kept)
        holders = tuple(_at(table, k) is value for table, k, value in self.setting_objects)
        holders += tuple(tuple(map(id, table[n].values())) for table, n in self.hooks)  # (a hook's code names attributes)
        holders += tuple(len(items) for items in self.lists)
        return tuple((len(m.__dict__), len(m._parameters), len(m._buffers), tuple(map(id, m._modules.values())))
                     for m in self.modules) + tuple(len(table) for table in self.settings.values()) + kept + \
            holders

    def _scan(self):
        named = list(self.module.named_modules())
        self.modules = [m for _, m in named]
        self.structure = tuple((prefix, type(m)) for prefix, m in named)
        self.submodules = [(m._modules, n, child) for m in self.modules for n, child in m._modules.items()]
        # (path, table, name) of each constant: the modules' attributes, private ones too (self._scale:
        # torch's own, such as _reversed_padding_repeated_twice, do not change in forward), and the
        # fields of the settings objects and dicts they hold (each object once)
        self.constants, self.kinds, self.settings, classes = [], [], {}, set()
        self.deep = []  # (path, table, name) of what the key compares whole (DeepValue): past the limits above
        self.lists = []  # the lists whose constant items are keyed one by one: their lengths too
        # (path, table, key) of a parameter or buffer read through a list, dict or settings object: by
        # identity (another tensor there is read as a captured one, by its place)
        self.identities = []
        owned = {id(t) for _, m in named for t in list(m._parameters.values()) + list(m._buffers.values())}
        self.setting_objects = []  # (table, name, object) of each: another put in its place is a new scan

        def settings(path, value, holder, key, depth=0):
            """The constant fields of a settings object or dict held at holder[key], and of those it
            holds in turn."""
            if depth >= MAX_NESTING or len(self.settings) >= MAX_SETTINGS_TABLES:
                self.deep.append((path, holder, key))  # (compared whole, by value)
                return
            self.setting_objects.append((holder, key, value))  # (each holder: one shared by two modules)
            if id(value) in self.settings:
                return
            table = self.settings[id(value)] = fields_table(value)
            if not isinstance(value, (dict, type)):  # what its class's properties and methods read
                read.update(names_of_settings_class(type(value)))
            for cls in type(value).__mro__ if not isinstance(value, dict) else ():
                # the class's defaults the object reads (a field not set on it): the user's classes'
                if cls is not object and not is_torchs(cls) and id(cls) not in classes:
                    classes.add(id(cls))
                    self.constants += [(f"<class {cls.__qualname__}>", vars(cls), n) for n, v in vars(cls).items()
                                       if n in read and is_constant(v) and not (n.startswith("__") and n.endswith("__"))]
            for k, field in list(table.items()):
                if isinstance(k, str) and k not in read and not isinstance(value, dict):
                    continue  # a field no code of the model's names
                if is_constant(field):
                    self.constants.append((path, table, k))
                elif holds_fields(field):
                    settings(f"{path}.{k}", field, table, k, depth + 1)
                elif isinstance(field, torch.Tensor) and id(field) in owned:  # (a parameter read as cfg.w)
                    self.identities.append((f"{path}.{k}", table, k))
                elif too_many_items(field):
                    self.deep.append((f"{path}.{k}", table, k))

        # modules kept in a list or dict rather than as submodules (a teacher): their constants too
        scanned, ids = list(named), {id(m) for _, m in named}
        self.kept = []  # (module's __dict__, attribute, index, module kept there): replaced, a new recording
        for prefix, m in named:
            for n, v in vars(m).items():
                for i, kept in (v.items() if type(v) is dict else enumerate(v)) if type(v) in (list, tuple, dict) else ():
                    if isinstance(kept, torch.nn.Module) and id(kept) not in ids:
                        self.kept.append((vars(m), n, i, kept))
                        hidden = [(f"{prefix}.{n}[]{'.' if q else ''}{q}", h) for q, h in kept.named_modules()]
                        ids.update(id(h) for _, h in hidden)
                        scanned += hidden
        read = names_read(m for _, m in scanned)  # (what is no part of the key: constants.keyed_attribute)
        for prefix, m in scanned:
            for cls in type(m).__mro__:  # the user's classes' constants and methods (torch's do not change)
                if is_torchs(cls) or id(cls) in classes:
                    continue
                classes.add(id(cls))
                self.constants += [(f"<class {cls.__qualname__}>", vars(cls), n) for n, v in vars(cls).items()
                                   if not (n.startswith("__") and n.endswith("__")) and is_constant(v)]
                for n, v in list(vars(cls).items()):  # a settings object kept on the class (opts = SimpleNamespace(...))
                    if n in read and holds_fields(v) and not isinstance(v, (staticmethod, classmethod, property)) \
                            and not (n.startswith("__") and n.endswith("__")):
                        settings(f"<class {cls.__qualname__}>.{n}", v, vars(cls), n)
            for n, v in vars(m).items():
                if n in _MODULE_INTERNALS or not keyed_attribute(m, n, read):
                    continue  # (the module's own tables: its structure, read by the fingerprint and the places)
                if is_constant(v):
                    self.constants.append((prefix, vars(m), n))
                elif holds_fields(v):
                    settings(f"{prefix}.{n}", v, vars(m), n)
                elif too_many_items(v):
                    self.deep.append((prefix, vars(m), n))
                else:  # by its type: a tensor kept where None may be put back
                    self.kinds.append((prefix, vars(m), n))
                    mixed = [i for i, item in enumerate(v) if is_constant(item)] if type(v) in (list, tuple) else []
                    tensors = [i for i, item in enumerate(v) if isinstance(item, torch.Tensor) and id(item) in owned] \
                        if type(v) in (list, tuple) and len(v) <= 64 else []
                    if mixed or tensors:  # the constants beside tensors (`self.p = [2.0, w]`) item by item,
                        # and which tensor each place holds (`self.ws[0] = self.b`)
                        self.setting_objects.append((vars(m), n, v))  # (another list there: a new scan)
                        self.lists.append(v)
                        self.constants += [(f"{prefix}.{n}[{i}]", v, i) for i in mixed]
                        self.identities += [(f"{prefix}.{n}[{i}]", v, i) for i in tensors]
                    if type(v) in (list, tuple) and len(v) <= 64:  # settings objects kept in a list
                        for i, item in enumerate(v):
                            if holds_fields(item) and not isinstance(item, types.ModuleType):
                                settings(f"{prefix}.{n}[{i}]", item, v, i)
        for prefix, m in named:  # a hook object's own fields (a counter, a flag), as a settings object's
            for table, k, hook in hook_objects(m):
                settings(f"{prefix}.<hook {type(hook).__name__}>", hook, table, k)
        # the modules' hooks and torch's global ones run in the forward a recording saw: one added or
        # removed later is a new recording (a backward hook is refused there)
        self.hooks = [(vars(m), n) for m in self.modules for n in _HOOK_DICTS if isinstance(vars(m).get(n), dict)]
        self.hooks += [(vars(_nn_module), n) for n in _GLOBAL_HOOK_DICTS if isinstance(vars(_nn_module).get(n), dict)]
        self.param_places = [(f"{prefix}.{n}" if prefix else n, m._parameters, n) for prefix, m in named for n in m._parameters.keys()]
        self.buffer_places = [(f"{prefix}.{n}" if prefix else n, m._buffers, n) for prefix, m in named for n in m._buffers.keys()]
        self.fingerprint = self._fingerprint()

    def read(self):
        """((default dtype, structure, hooks, constants...), [(name, parameter)], [(name, buffer)]), as
        named_parameters and named_buffers give them (a tensor in two places, tied weights, under its
        first name)."""
        if self._fingerprint() != self.fingerprint or \
                any(not is_constant(_at(table, n, None)) for _, table, n in self.constants) or \
                any(is_constant(table.get(n)) for _, table, n in self.kinds):
            self._scan()  # (a place holds another kind of value now: a tensor kept where None was, or back)
        constants = tuple((path, n, hashable(_at(table, n))) for path, table, n in self.constants)
        constants += tuple((path, n, type(table.get(n, GONE)).__name__) for path, table, n in self.kinds)
        constants += tuple((path, n, deep_value(_at(table, n))) for path, table, n in self.deep)
        constants += tuple((path, n, id(_at(table, n))) for path, table, n in self.identities)
        hooks = tuple(tuple(table[n]) for table, n in self.hooks)
        kept = tuple(module for _, _, _, module in self.kept)  # (the objects: their parameters are captured)
        return (torch.get_default_dtype(), self.structure, kept, hooks) + constants, \
            _first_places(self.param_places), _first_places(self.buffer_places)

    def guard(self, args, kwargs, program):
        """A CallGuard of this state, this call's arguments (as read() saw them: made right after it)
        and what the entry's program read besides (None: nothing): its captured tensors' places and
        the globals its constants may come from."""
        # (a TorchScript module's tables are no dicts: what they hold is fixed when it is scripted)
        dicts = [d for m in self.modules for d in (m.__dict__, m._parameters, m._buffers, m._modules) if isinstance(d, dict)]
        # (a class's or a slots object's fields are no dict: each field the key holds is an attribute below)
        dicts += [table for table in self.settings.values() if isinstance(table, dict)]
        attributes = [(table, n, snapshot(table[n])) for _, table, n in self.constants if _at(table, n) is not GONE]
        attributes += [(table, n, table[n], True) for _, table, n in self.kinds if n in table]
        attributes += [(table, n, DeepValue(_at(table, n))) for _, table, n in self.deep]  # (never matched)
        attributes += [(_Length(items), "len", len(items)) for items in self.lists]
        # a hook removed changes its table's size; one registered, torch's count of hook handles
        dicts += [table[n] for table, n in self.hooks]
        attributes.append((vars(_RemovableHandle), "next_id", _RemovableHandle.next_id))
        if any(hasattr(m, "parametrizations") for m in self.modules):  # (a call inside parametrize.cached())
            attributes.append((vars(_parametrize), "_cache_enabled", _parametrize._cache_enabled))
        places = [(table, key, table[key]) for _, table, key in self.param_places + self.buffer_places]
        places += [(table, n, child) for table, n, child in self.submodules]
        places += self.setting_objects  # (by identity: self.config = Config(...) is a new scan)
        places += [(table, n, _at(table, n)) for _, table, n in self.identities]
        places += [(table, n, kept, False, i) for table, n, i, kept in self.kept]
        if program is not None:
            attributes += program.global_values
            places += program.global_objects  # by identity
            # a key added to a watched dict changes its size, and so does a hook added to a global module
            dicts += [table for table, _ in program.global_sizes]
            places += [(c.table, c.key, c.tensor(), True, c.index) for c in program.captured]  # by metadata
        return _C.CallGuard(dicts, attributes, places, args, kwargs)


def _first_places(places):
    seen, out = set(), []
    for name, table, key in places:
        t = table[key]
        if t is not None and id(t) not in seen:
            seen.add(id(t))
            out.append((name, t))
    return out


class CallRecord:
    """One call: its cache key, whether it hit, and the entry's stage history."""

    def __init__(self, key, hit, entry, order):
        self.key, self.hit, self.entry, self.order = key, hit, entry, list(order)
        self.outputs = []  # the call's outputs, while it runs (its listeners read them)
        # (trace, index, symbol, output, microseconds, device_timer, start_microseconds) of every
        # bound symbol of this call when it was timed (tm.timing, or an Inspector attached): prologue
        # and forward, then backward once it has run.
        self.timings = []
        self.needs_grad = False  # the call went through the autograd bridge (a backward may follow)
        # fn(cotangents, gradients) once this call's engine backward has run: the cotangents it got
        # and one gradient per bridge tensor (inputs, then parameters; None where there is none).
        self.backward_listeners = []

    @property
    def stages(self):
        return self.entry.stages

    def __repr__(self):
        return f"<CallRecord {'hit' if self.hit else 'miss'} {self.key}>"


def _reached_by_autograd(outputs, tensors):
    """The indices of `tensors` (floating, requiring grad) that eager autograd reaches from the
    outputs' gradients (an output may be given as the autograd node that made it): each gets a
    gradient in eager, zeros where nothing flows back (addmm's bias with beta=0, an intermediate
    whose every element a later call overwrote)."""
    flat = pytree.tree_flatten(outputs)[0]
    roots = [t for t in flat if isinstance(t, torch.Tensor) and t.requires_grad]
    nodes, leaves = set(), {id(t) for t in roots if t.grad_fn is None}
    stack = [t.grad_fn for t in roots if t.grad_fn is not None]
    stack += [n for n in flat if not isinstance(n, torch.Tensor) and hasattr(n, "next_functions")]  # (a node)
    while stack:
        fn = stack.pop()
        if fn in nodes:
            continue
        nodes.add(fn)
        variable = getattr(fn, "variable", None)  # an AccumulateGrad: a leaf's
        if variable is not None:
            leaves.add(id(variable))
        stack.extend(n for n, _ in fn.next_functions if n is not None)
    return [i for i, t in enumerate(tensors) if isinstance(t, torch.Tensor) and t.requires_grad and t.is_floating_point()
            and (id(t) in leaves if t.grad_fn is None else t.grad_fn in nodes)]


class _Bridge(torch.autograd.Function):
    """Engine forward and backward as one autograd node over (inputs, parameters), for a call whose
    backward needs Python (its per-symbol timings, its backward listeners: an Inspector) or whose
    order distributes parameters (ddp, fsdp). Every other call takes Entry.apply, the same node in C++."""

    @staticmethod
    def forward(ctx, entry, fixup, *tensors):
        n = len(fixup["inputs"])
        outs, saved = entry.forward(list(tensors[:n]))
        # autograd holds the saved outputs (without a reference cycle through saved); saved keeps
        # the rest, and the backward frees each after its last use (module.cpp, Saved)
        ctx.save_for_backward(*saved.take_outputs(outs))
        ctx.entry, ctx.saved, ctx.fixup = entry, saved, fixup
        # (for a backward with create_graph=True, which runs the forward again on them)
        ctx.tensors, ctx.versions = tensors, [t._version for t in tensors]
        ctx.out_meta = [(o.shape, o.dtype, o.device) for o in outs]
        ctx.set_materialize_grads(False)  # (an output the loss did not use: no gradient from it)
        nondiff = [o for o in outs if not o.is_floating_point()]
        if nondiff:
            ctx.mark_non_differentiable(*nondiff)
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grads):
        try:
            saved = ctx.saved_tensors
        except RuntimeError as e:
            if "backward through the graph a second time" not in str(e):
                raise
            raise RuntimeError(f"{_C.SECOND_BACKWARD} ({e})") from None
        ctx.saved.put_tensors(list(saved))
        if torch.is_grad_enabled():  # autograd enables it in a backward exactly when create_graph is set
            gs = ctx.entry.backward_differentiable(list(ctx.tensors), len(ctx.fixup["inputs"]), ctx.versions, ctx.saved,
                                                   list(grads))
        else:
            gs = ctx.entry.backward(ctx.saved, list(grads))  # (None: an output the loss did not use)
        rec = ctx.fixup["record"]
        rec.timings = rec.timings + ctx.entry.backward_timings()
        listeners, rec.backward_listeners = rec.backward_listeners, []
        if listeners:
            cot = [g if g is not None else torch.zeros(s, dtype=d, device=v) for g, (s, d, v) in zip(grads, ctx.out_meta)]
            for fn in listeners:
                fn(cot, gs)
        return (None, None, *gs)


class ProcessGroup:
    """What ddp(model) and fsdp(model) set as model.process_group_for_ddp: the world's group."""

    def __repr__(self):
        return "<thunder_viz.ProcessGroup of the world>"


class CompileData:
    """Thunder's CompileData (`tmodel._lc_cd`), the two members the seed's code touches.

    `fn` is the module that was jitted; assigning `tmodel._lc_cd.fn = thunder_viz.ddp(tmodel._lc_cd.fn)`
    applies ddp after jit. `process_group_for_ddp` is what jit() copied from the module when it was
    called; assigning the module's group to it (`tmodel._lc_cd.process_group_for_ddp =
    tmodel._lc_cd.fn.process_group_for_ddp`) is the process-group workaround."""

    def __init__(self, owner, fn):
        self._owner = owner
        self._fn = fn
        self.process_group_for_ddp = getattr(fn, "process_group_for_ddp", None)

    @property
    def fn(self):
        return self._fn

    @fn.setter
    def fn(self, value):
        before = self._fn.tv_transforms if isinstance(self._fn, _DistributedMarker) else []
        if not isinstance(value, _DistributedMarker) or value.tv_transforms[:len(before)] != before:
            raise TypeError("thunder_viz: _lc_cd.fn takes thunder_viz.ddp(_lc_cd.fn) or thunder_viz.fsdp(_lc_cd.fn)")
        self._owner._apply_after_jit(value.tv_transforms[len(before):])
        self._fn = value


def _refuse_unsupported_tensors(name, args, kwargs, error):
    """TypeError naming the argument when a call failed on a tensor the engine does not take: a
    sparse one, or a wrapper without storage of its own (functorch's vmap and grad, forward-mode AD's
    dual tensors); otherwise nothing (the error stands)."""
    for t in pytree.tree_flatten((args, kwargs))[0]:
        if not isinstance(t, torch.Tensor):
            continue
        what = None
        if t.layout != torch.strided:
            what, way_out = f"a {t.layout} tensor", "pass it dense (t.to_dense()), or call the module itself"
        else:
            try:
                t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
            except (NotImplementedError, RuntimeError):
                what = "a tensor without storage of its own (a transform's wrapper: functorch/torch.func vmap or grad)"
                way_out = "call the module itself under such transforms"
        if what is not None:
            raise TypeError(f"thunder_viz: {name} was called with {what}, which the engine does not run: {way_out} "
                            f"({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''})") from error


def _module_class(module):
    return f"{type(module).__module__}.{type(module).__qualname__}"


def _constant_key(value):
    """A hashable key of a non-tensor leaf of a call's arguments; TypeError for what cannot be one."""
    if value is None or _is_scalar(value):
        return (type(value).__name__, repr(value))
    raise TypeError(f"jitted modules take tensors, None, numbers and strings (in tuples, lists, dicts, "
                    f"dataclasses and UserDicts), "
                    f"got a {type(value).__name__}")


def _positional_arity(signature):
    """(least, most) positional arguments a call of this signature may take with no keyword, when
    such a call binds them as they are (bound.args == args, bound.kwargs == {}); None when a
    keyword-only parameter without a default needs a keyword anyway."""
    params = signature.parameters.values()
    if any(p.kind == p.KEYWORD_ONLY and p.default is p.empty for p in params):
        return None
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    least = sum(p.default is p.empty for p in positional)
    most = float("inf") if any(p.kind == p.VAR_POSITIONAL for p in params) else len(positional)
    return least, most


class JittedModule(torch.nn.Module):
    """What thunder_viz.jit returns: an nn.Module that runs the wrapped module's forward on the
    engine, with a cache and a stage history."""

    def __init__(self, module, order=("jit",), semantics="lazy", name=None, fn=None,
                 history_limit=DEFAULT_HISTORY_LIMIT):
        if not isinstance(module, torch.nn.Module):
            raise TypeError(f"thunder_viz.jit expects a torch.nn.Module, got {type(module).__name__}")
        super().__init__()
        # The wrapped module's own tables are this module's: its parameters, buffers and submodules
        # are this module's under the same names (no "_module." prefix in named_modules, state_dict
        # or a parent's load_state_dict), and one assigned here (tm.fc = nn.Linear(...)) is assigned
        # to it. The module itself is no submodule, its hooks are its own.
        for table in ("_parameters", "_buffers", "_modules", "_non_persistent_buffers_set"):
            self.__dict__[table] = module.__dict__[table]
        self.__dict__["_module"] = module
        del self.training  # read from the wrapped module, as Thunder's ThunderModule does
        # the one check of the order: IllegalOrder names the rule and the fix
        _C.validate_order(list(order), semantics, _module_class(module))
        self._order = list(order)
        self._semantics = semantics
        self._lc_cd = CompileData(self, fn if fn is not None else module)
        self._name = name or type(module).__name__
        self._core = None
        self._core_state = None  # the parameters' and buffers' names, ids and metadata the core was built on
        self._state = None  # _ModuleState of the module, made at the first call
        self._cache = {}
        self._history = collections.deque()
        self.history_limit = history_limit
        self._listeners = []  # fn(jitted module, CallRecord, inputs) after every call (Inspector)
        self._warned_recording_every_call = False
        self._misses_in_a_row = 0
        self.cache_hits = 0
        self.cache_misses = 0
        self.timing = False  # per-bound-symbol times in each CallRecord (on while an Inspector listens)
        self._signature = inspect.signature(module.forward)
        self._arity = _positional_arity(self._signature)
        self._positional_specs = {}  # number of tensors -> the argument structure's text, for _bind's key
        # (CallGuard, key, (entry, program), pick, rebuild) of the last call whose arguments are each a
        # tensor or a constant: a next call its guard matches reuses that entry without reading the
        # module again (pick(args, kwargs) -> its tensors in the key's order)
        self._steady = None
        self._distributes = _C.order_facts(self._order)[1]  # ddp or fsdp: calls keep _Bridge
        self.__dict__["_made"] = True  # from here on, a public attribute set here is the module's (__setattr__)

    # -- structure
    @property
    def module(self):
        return self.__dict__["_module"]

    @property
    def order(self):
        return list(self._order)

    @property
    def history_limit(self):
        return self._history.maxlen

    @history_limit.setter
    def history_limit(self, n):
        if n is not None and n < 1:
            raise ValueError(f"history_limit must be at least 1 (or None for no limit), got {n}")
        self._history = collections.deque(self._history, maxlen=n)

    def with_transform(self, name):
        """A new jitted module (same torch module) with `name` applied after jit (lazily)."""
        return JittedModule(self.module, self._order + [name], self._semantics, self._name,
                            history_limit=self.history_limit)

    def _apply_after_jit(self, transforms):
        order = self._order + list(transforms)
        _C.validate_order(order, self._semantics, _module_class(self.module))
        self._order = order
        self._distributes = _C.order_facts(order)[1]
        self._cache.clear()
        self._steady = None

    def _workaround(self):
        """The process-group workaround when the snapshot was given the module's group by hand."""
        jit_at = self._order.index("jit")
        distributed_before_jit = any(t in ("ddp", "fsdp") for t in self._order[:jit_at])
        if self._lc_cd.process_group_for_ddp is None or distributed_before_jit:
            return ""
        return "process-group" if self._semantics == "thunder-2024-03" else ""

    # The wrapped module's parameters, buffers and state under their own names (no "_module.").
    def named_parameters(self, *a, **k):
        return self.module.named_parameters(*a, **k)

    def named_buffers(self, *a, **k):
        return self.module.named_buffers(*a, **k)

    def state_dict(self, *a, **k):
        return self.module.state_dict(*a, **k)

    def load_state_dict(self, *a, **k):
        return self.module.load_state_dict(*a, **k)

    def _load_from_state_dict(self, *a, **k):  # (a parent's load: the module's own versioned loading)
        return self.module._load_from_state_dict(*a, **k)

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """The wrapped module's, itself first where this one stands: a scan of a parent's modules for
        nn.Linear finds a jitted Linear, as eager's finds the Linear."""
        return self.module.named_modules(memo, prefix, remove_duplicate)

    # The module's own overrides run, as a call on the module would run them (a train() that keeps
    # its batch norms frozen), and a function applied reaches the module, not this wrapper.
    def train(self, mode=True):
        self.module.train(mode)
        return self

    def _apply(self, *a, **k):
        self.module._apply(*a, **k)
        return self

    def apply(self, fn):
        self.module.apply(fn)
        return self

    # A jitted nn.Sequential or ModuleList is indexed, measured and walked as the module is.
    def __getitem__(self, index):
        return self.module[index]

    def __setitem__(self, index, value):
        self.module[index] = value

    def __delitem__(self, index):
        del self.module[index]

    def __len__(self):
        return len(self.module)

    def __iter__(self):
        return iter(self.module)

    def __bool__(self):
        return bool(self.module)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name.startswith("_"):
                raise
        return getattr(self.__dict__["_module"], name)

    def __setattr__(self, name, value):
        """A public attribute set once this module is made (`tm.scale = 0.5`, `tm.fc = nn.Linear(8, 5)`,
        a buffer, a class default overridden) is set on the wrapped module, which forward reads, as
        on a module that eager torch calls; this module's own (cache_hits, timing, ...) stay its own."""
        if self.__dict__.get("_made") and not name.startswith("_") and name not in self.__dict__ and \
                not hasattr(type(self), name):
            setattr(self.__dict__["_module"], name, value)
        elif name == "__class__" and isinstance(value, type) and value is not type(self) and \
                issubclass(value, type(self)) and value.__name__.startswith("Parametrized"):
            self._refuse_parametrization()
        else:
            super().__setattr__(name, value)

    def __delattr__(self, name):
        if self.__dict__.get("_made") and not name.startswith("_") and name not in self.__dict__:
            module = self.__dict__["_module"]
            for table in (module._parameters, module._buffers):
                if name in table:  # (put back if this is torch's parametrization of this wrapper: __class__)
                    self.__dict__["_deleted_state"] = (table, name, weakref.ref(table[name]))
            delattr(module, name)
        else:
            super().__delattr__(name)

    def _refuse_parametrization(self):
        """torch.nn.utils.parametrize.register_parametrization(tm, name, ...) deletes the tensor (from
        the tables this wrapper shares with the module), then gives this wrapper a class of its own
        with a property in the tensor's place, which the wrapped module's forward would not read:
        the tensor is put back and the call refused, naming the module to parametrize instead."""
        deleted = self.__dict__.pop("_deleted_state", None)
        if deleted is not None and deleted[2]() is not None:
            table, name, tensor = deleted
            table[name] = tensor()
        file, line = user_frame()
        name = deleted[1] if deleted is not None else "a tensor"
        raise UnsupportedOp(f"register_parametrization on the jitted module ({name})", f"{shown_path(file)}:{line}",
                            detail=f"parametrize the module itself, whose forward reads it: "
                                   f"register_parametrization(tm.module, {name!r}, ...) (or before thunder_viz.jit); "
                                   f"the next call records the parametrized forward")

    def _get_core(self):
        """The engine core on the module's current tensors, and the key of the module's state."""
        if self._state is None:
            self._state = _ModuleState(self.module)
        attributes, params, buffers = self._state.read()
        # A Parameter replaced (module.weight = nn.Parameter(...)), converted (to(), half()) or renamed
        # is a new core. One frozen or unfrozen is not (a GAN's loop toggles its discriminator's):
        # which parameters require grad is part of each entry's key.
        named = params + buffers
        _check_initialised(self._name, named)
        state = ([n for n, _ in named], [id(t) for _, t in named], [(t.shape, t.dtype, t.device) for _, t in named])
        if self._core is None or state != self._core_state:
            _check_dtypes(self._name, params, buffers)
            if self._distributes:
                process_group.check_launch()
                if process_group.active():  # every rank starts from rank 0's values, checked against eager
                    process_group.start_from_rank0(named, self._name)
            self._core = _C.JitCore(self._name, params, buffers)
            self._core_state = state
            self._core_tensors = [t for _, t in named]  # alive, so that no other tensor takes their ids
            self._core_key = tuple((tuple(t.shape), t.dtype, t.device, t.is_contiguous()) for _, t in params)
            self._param_list = [p for _, p in params]
            self._cache.clear()
            self._steady = None
        requires_grad = tuple(p.requires_grad for _, p in params)
        self._params_need_grad = any(requires_grad)
        self._core.set_attribute("training", bool(self.module.training))
        return self._core, (self._core_key, requires_grad, attributes)

    def _bind(self, args, kwargs):
        """(tensors, a key of everything else, rebuild(tensors) -> (args, kwargs), bound() -> the bound
        arguments). The usual call, tensors by position only, takes a short way to the same key."""
        if not kwargs and self._arity and self._arity[0] <= len(args) <= self._arity[1] and \
                all(isinstance(a, torch.Tensor) for a in args):
            n = len(args)
            spec = self._positional_specs.get(n)
            if spec is None:
                spec = self._positional_specs[n] = str(pytree.tree_flatten((args, {}))[1])
            return list(args), ((), spec), _by_position, lambda: self._signature.bind(*args)
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self._name}.forward{self._signature}: {e}") from None
        for value in bound.arguments.values():
            register_containers(value)  # a batch passed as a dataclass or a UserDict (BatchEncoding)
        leaves, spec = pytree.tree_flatten((bound.args, bound.kwargs))
        tensors, constants = [], []
        for i, leaf in enumerate(leaves):
            if isinstance(leaf, torch.Tensor):
                tensors.append(leaf)
            else:
                constants.append((i, _constant_key(leaf)))

        def rebuild(new_tensors):
            it = iter(new_tensors)
            return pytree.tree_unflatten([next(it) if isinstance(leaf, torch.Tensor) else leaf for leaf in leaves], spec)
        return tensors, (tuple(constants), str(spec)), rebuild, lambda: bound

    @staticmethod
    def _tensor_names(bound):
        """Each tensor's name: its parameter's, with the position inside a nested argument (made for a
        recording; a cache hit reads them from the recorded program)."""
        names = []
        for pname, value in bound.arguments.items():
            sub, _ = pytree.tree_flatten(value)
            ts = [t for t in sub if isinstance(t, torch.Tensor)]
            if len(ts) == 1 and isinstance(value, torch.Tensor):
                names.append(pname)
            else:
                names.extend(f"{pname}_{k}" for k in range(len(ts)))
        return names

    def _steady_guard(self, args, kwargs, inputs, program):
        """(CallGuard, pick) for a call whose arguments are each a tensor or a constant the guard
        compares exactly (None, bool, int, float, str; nothing nested), where pick(args, kwargs) gives
        a call of the same form's tensors in the order _bind gives them: the positional arguments',
        then the keywords' (named parameters in the signature's order, then **kwargs' in the call's).
        None for any other call (it takes the slow path every time)."""
        values = list(args) + list(kwargs.values())
        if not all(v is None or type(v) in _GUARDED_CONSTANTS or isinstance(v, torch.Tensor) for v in values):
            return None
        if len(inputs) == len(values) and not kwargs:
            pick = _positional_inputs
        else:
            params = self._signature.parameters
            named = sorted((k for k in kwargs if k in params and params[k].kind in _NAMED_BY_KEYWORD),
                           key=list(params).index)
            order = named + [k for k in kwargs if k not in named]
            at = [i for i, v in enumerate(args) if isinstance(v, torch.Tensor)]
            names = [k for k in order if isinstance(kwargs[k], torch.Tensor)]

            def pick(args, kwargs):
                return [args[i] for i in at] + [kwargs[k] for k in names]
            picked = pick(args, kwargs)
            if len(picked) != len(inputs) or any(a is not b for a, b in zip(picked, inputs)):
                return None  # a form this reading of the signature does not cover: no steady path
        return self._state.guard(args, kwargs, program), pick

    def _entry(self, args, kwargs):
        """((entry, program), the call's record, its tensors, rebuild(tensors) -> (args, kwargs)) for a
        call: a hit reuses the entry, a miss records and builds anew. A call whose arguments are each a
        tensor or a constant leaves a guard; the next call it matches takes the same entry without
        reading the module."""
        process_group.join()  # under torch.distributed (torchrun): once per process, at the first call
        steady = self._steady
        if steady is not None and steady[0].matches(args, kwargs):
            _, key, cached, pick, rebuild = steady
            inputs, hit = pick(args, kwargs), True
        else:
            inputs, constants, rebuild, bind = self._bind(args, kwargs)
            core, module_key = self._get_core()
            key = (tuple(_meta(t) for t in inputs), constants, module_key, _C.world_info()[:2], _aliases(inputs),
                   *_torch_modes())
            cached = self._cache.get(key)
            if cached is not None and not cached[1].current():
                cached = None  # a captured tensor replaced, a global number changed: record anew
            hit = cached is not None
            # the guard holds what the key was made of, read before a recording runs forward (which
            # may change the module: the next call then reads it anew)
            guard = self._steady_guard(args, kwargs, inputs, cached[1] if hit else None)
            if not hit:
                heap.keep_freed_memory()  # (once per process)
                names = _unique(self._tensor_names(bind()), len(inputs))
                # the recording's eager run and the build draw from torch's generators; the call then
                # draws as a cached call does, from where they were (torch.manual_seed reproduces it)
                with _generators_kept():
                    seen = _stand_ins(inputs, args, kwargs)
                    seen_args, seen_kwargs = rebuild(seen) if seen is not inputs else (args, kwargs)
                    containers = [v for v in list(args) + list(kwargs.values()) if not isinstance(v, torch.Tensor)]
                    program, eager_out = record(self.module, seen, names, lambda: self.module(*seen_args, **seen_kwargs),
                                                own_inputs=seen is not inputs, arguments=containers)
                    engine_inputs = _engine_inputs(inputs, program, True)
                    entry = core.build(program.to_dict(), engine_inputs, self._order,
                                       self._semantics, self._workaround(), _module_class(self.module))
                    if program.rebased_inputs:  # (what a create_graph backward, running the forward again, refuses)
                        entry.set_written_inputs([program.all_input_names()[i] for _, i in program.rebased_inputs])
                    if self._distributes and process_group.active():
                        process_group.check_same_collectives(entry.collective_calls, self._name)
                    bridge = engine_inputs + self._param_list
                    seen_bridge = list(seen) + bridge[len(seen):]
                    reached = _reached_by_autograd(eager_out, seen_bridge)
                    entry.set_zero_gradients([(i, bridge[i]) for i in reached])
                    outputs, program.recorded_outputs = program.recorded_outputs, None
                    if len(outputs) <= 64:  # (each output's walk of eager's graph)
                        entry.set_output_reach([_reached_by_autograd([t], seen_bridge) for t in outputs])
                cached = (entry, program)
                if program.python_draws or program.unreplayable:
                    self._warn_recording_every_call(program)  # not kept: the next call records anew
                else:
                    self._cache[key] = cached
                if program.python_draws or program.unreplayable or program.side_effects:
                    guard = None  # the forward changed what a guard made before it read: the next call makes one
                elif program.reads_outside and guard is not None:
                    # the forward changed nothing: a guard made now holds what the key held, and
                    # watches what the program read besides (its values as they were before the call)
                    guard = self._steady_guard(args, kwargs, inputs, program)
            self._steady = (guard[0], key, cached, guard[1], rebuild) if guard is not None else None
        counts = self.__dict__  # (nn.Module's __setattr__ costs microseconds a call)
        if hit:
            counts["cache_hits"] += 1
            if self._misses_in_a_row:
                counts["_misses_in_a_row"] = 0
        else:
            counts["cache_misses"] += 1
            counts["_misses_in_a_row"] += 1
            if self._misses_in_a_row == MISSES_BEFORE_WARNING:
                file, line = user_frame()
                warnings.warn_explicit(
                    f"thunder_viz: {self._name} recorded its forward anew at {MISSES_BEFORE_WARNING} calls in a row: "
                    "something its cache key holds changes at every call (a number the forward assigns, such as a "
                    "step counter; an argument that is another number each time; a new input shape), and each call "
                    "costs a recording. Keep such a number in a tensor (a buffer), or pass it as one.",
                    UserWarning, file, line)
            while len(self._cache) > MAX_CACHE_ENTRIES:
                del self._cache[next(iter(self._cache))]  # the oldest entry
        rec = CallRecord(key, hit, cached[0], self._order)
        rec.program = cached[1]
        # the recording ran eager torch: its outputs check the engine's first run of the program
        rec.eager_outputs = None if hit else [t.detach() for t in pytree.tree_flatten(eager_out)[0]
                                              if isinstance(t, torch.Tensor)]
        rec.input_names = list(rec.program.input_names)
        self._history.append(rec)
        return cached, rec, inputs, rebuild

    def _warn_recording_every_call(self, program):
        if self._warned_recording_every_call:
            return
        self._warned_recording_every_call = True
        if program.python_draws:
            why = (f"draws from Python's random module ({program.python_draws[0]}): the trace holds what the draw "
                   "decided")
            instead = "Draw with torch instead (torch.rand, torch.bernoulli) where the result stays a tensor."
        else:
            why = f"makes a change no replay of its trace redoes ({program.unreplayable[0]})"
            instead = ("Keep such state in a buffer (register_buffer) or a tensor attribute, which the trace "
                       "updates, or outside forward.")
        file, line = user_frame()  # the user's call of the module
        warnings.warn_explicit(f"thunder_viz: {self._name}.forward {why}, so every call records the forward anew "
                               f"(as slow as a first call). {instead}", UserWarning, file, line)

    def __call__(self, *args, **kwargs):
        """forward, and the jitted module's own hooks. torch's global module hooks are not run on
        this wrapper: the recording ran them on the wrapped module, so the trace holds them (and the
        key watches their tables)."""
        try:
            tables = self.__dict__
            for n in _ALL_HOOK_DICTS:
                if tables.get(n):
                    return super().__call__(*args, **kwargs)
            return self.forward(*args, **kwargs)
        except (NotImplementedError, RuntimeError) as e:
            _refuse_unsupported_tensors(self._name, args, kwargs, e)
            raise

    def prepare(self, *args, **kwargs):
        """Acquires (or finds in the cache) the traces for these arguments without running them."""
        return self._entry(args, kwargs)[1]

    def forward(self, *args, **kwargs):
        if recording():  # inside the forward of a module jitted around this one: its trace holds ours
            return self.module(*args, **kwargs)
        swapped = self.__dict__.get("_attr_to_path")
        if swapped and not self.__dict__.get("_reparametrized"):
            # torch 1.13's functional_call(tm, {"weight": w}) swaps the names on this wrapper, by its
            # class; the forward that runs is the wrapped module's, which takes the same replacements
            from torch.nn.utils import stateless
            values = {name: getattr(self, name) for name in swapped}
            self.__dict__["_reparametrized"] = True
            try:
                with stateless._reparametrize_module(self.module, values):
                    return self.forward(*args, **kwargs)
            finally:
                del self.__dict__["_reparametrized"]
        autocast = autocast_state()
        if autocast is not None and "autocast" not in self._order:
            raise RuntimeError(
                f"thunder_viz: the jitted module was called under torch.autocast({autocast[0]!r}, dtype={autocast[1]}); "
                "the engine runs the recorded dtypes and does not follow torch's autocast. Call it outside "
                "torch.autocast (on a model cast with .to(torch.bfloat16) for bfloat16 throughout), or apply the "
                "engine's autocast transform (thunder_viz.jit(model, transforms=['autocast'])), which runs linear "
                "layers, matmuls and attention in the low dtype and everything else in float32 (not convolutions, "
                "unlike torch.autocast: its numbers differ from torch.autocast's on a CNN)")
        (entry, program), rec, inputs, rebuild = self._entry(args, kwargs)
        engine_inputs = _engine_inputs(inputs, program, recorded_call=rec.eager_outputs is not None)
        for c in program.captured:
            c.recorded = None  # (read by the recorded call only)
        timed = entry.timed = self.timing or bool(self._listeners)
        params = self._param_list
        needs_grad = torch.is_grad_enabled() and entry.has_backward and (
            self._params_need_grad or any(t.requires_grad for t in engine_inputs))
        if needs_grad and not (timed or self._distributes):
            outs = entry.apply(engine_inputs, params)  # one autograd node in C++: nothing to do in Python
        elif needs_grad:
            fixup = {"inputs": engine_inputs, "record": rec}
            outs = _Bridge.apply(entry, fixup, *engine_inputs, *params)
        else:
            outs, _ = entry.forward(engine_inputs)
        outs = list(outs)
        if program.recomputations and needs_grad:  # (the outputs are still the call's node's own)
            _recompute_in_backward(program, outs)
        for i in program.detached_outputs:
            outs[i] = outs[i].detach()
        if len(program.output_memory) > 1:
            _share_memory_as_eager(outs, program)
        for k, i in program.rebased_inputs:  # written in place: with the write's history, as eager's
            with torch.set_grad_enabled(needs_grad):
                engine_inputs[i].copy_(outs[k])
        for k, i in program.returned_inputs:  # the caller's tensor itself, as eager returns it
            outs[k] = engine_inputs[i]
        for k, i, shape, strides, offset in program.input_views:  # a view of it, as eager's
            outs[k] = engine_inputs[i].as_strided(shape, strides, engine_inputs[i].storage_offset() + offset)
        for effect in program.side_effects:  # the forward's assignments, with this call's values
            effect.apply(outs, engine_inputs, recorded_call=rec.eager_outputs is not None)
        del outs[program.user_outputs:]
        if rec.eager_outputs is not None or self._listeners:
            rec.outputs = [o.detach() for o in outs]
        if rec.eager_outputs is not None and not program.random:
            try:
                _check_first_call(self._name, rec, self.module, args, kwargs)
            except EagerMismatch:
                # a refused entry is not kept: the next call records again and is checked again
                self._cache.pop(rec.key, None)
                self._steady = None
                raise
        if timed:
            rec.timings = entry.forward_timings()
        rec.needs_grad = needs_grad
        rec.rebuild_arguments = rebuild
        for fn in list(self._listeners):
            fn(self, rec, inputs)
        # the history keeps the call's stages, not its tensors: the outputs held by a record would
        # live on for history_limit more calls (100 of a model's logits, a KV cache per call)
        rec.outputs = rec.eager_outputs = rec.rebuild_arguments = None
        return rebuild_output(program, outs)

    def __deepcopy__(self, memo):
        """A jitted copy of a copy of the module (an EMA model, a checkpoint's twin), with the same
        order and options and an empty cache: the engine's state is made anew, not copied."""
        fn = self._lc_cd.fn if self._lc_cd.fn is not self._module else None
        twin = JittedModule(copy.deepcopy(self._module, memo), self._order, self._semantics, self._name,
                            fn=copy.deepcopy(fn, memo) if fn is not None else None, history_limit=self.history_limit)
        for table in _ALL_HOOK_DICTS:  # hooks registered on this module are the copy's too
            if table in self.__dict__:
                twin.__dict__[table] = copy.deepcopy(self.__dict__[table], memo)
        return twin

    def __reduce__(self):
        raise TypeError(f"a jitted module is not pickled: save {self._name}'s state_dict (tm.state_dict()), or "
                        "pickle the module itself (tm.module) and apply thunder_viz.jit to it again")

    def __repr__(self):
        return f"<thunder_viz.JittedModule {self._name} order={self._order}>"


def _torch_modes():
    """torch's global settings a forward may branch on or bake into its trace (torch.zeros(4) takes
    the default dtype); the steady path's CallGuard compares the same."""
    backends = torch.backends
    return (bool(_parametrize._cache_enabled), torch.is_grad_enabled(), torch.is_inference_mode_enabled(),
            torch.get_default_dtype(), torch.are_deterministic_algorithms_enabled(), torch.get_num_threads(),
            backends.cudnn.enabled, backends.cudnn.benchmark, backends.cudnn.deterministic, backends.mkldnn.enabled,
            backends.cuda.matmul.allow_tf32, backends.cudnn.allow_tf32)


def _recompute_in_backward(program, outs):
    """Runs the call's checkpointed blocks that wrote buffers again, eagerly and under no_grad, once
    the call's backward has run (recorder._BlockStart): eager's checkpoint recomputes them there,
    and the recomputation updates the buffers (a BatchNorm's running statistics) a second time. The
    last block first, as eager's backward meets them. A call whose outputs get no backward runs none."""
    node = next((o.grad_fn for o in outs if o.grad_fn is not None), None)
    if node is None:
        return
    given = lambda v: outs[v.k].detach() if isinstance(v, BlockInput) else v  # (no cycle through the node)
    blocks = [(function, *pytree.tree_map(given, (args, kwargs))) for function, args, kwargs in program.recomputations]

    def recompute(grad_inputs, grad_outputs):
        with torch.no_grad():
            for function, args, kwargs in reversed(blocks):
                function(*args, **kwargs)

    node.register_hook(recompute)


def _check_first_call(name, rec, module, args, kwargs):
    """EagerMismatch when the engine's outputs differ from the recording's eager ones by more than
    the tolerances and by more than twice eager torch's own rounding at these inputs (its result in
    the module's dtypes against its float64 one: a batch norm over a handful of values turns float32
    rounding into differences of the output's own size, in eager torch as in the engine). A
    difference within that rounding is kept, with a warning that says so."""
    min_tol, _ = _C.order_facts(rec.order)
    failed = [(i, c) for i, (got, want) in enumerate(zip(rec.outputs, rec.eager_outputs)) if got.is_floating_point()
              for c in [_C.check_against_reference(f"output[{i}]", got, want, min_tol)] if not c.passed]
    if not failed:
        return
    rounding = _eager_rounding(module, args, kwargs, len(rec.outputs))
    if rounding is None or any(c.max_abs > 2 * rounding[i] for i, c in failed):
        raise EagerMismatch(name, [c for _, c in failed], rounding and [rounding[i] for i, _ in failed])
    file, line = user_frame()
    warnings.warn_explicit(
        f"thunder_viz: {name}'s first call with these inputs: the engine's result differs from eager torch's by "
        + ", ".join(f"{c.name} max abs {c.max_abs:.3g}" for _, c in failed)
        + ", within eager torch's own rounding there (its result differs from its float64 one by "
        + ", ".join(f"{rounding[i]:.3g}" for i, _ in failed)
        + "): the output is that sensitive to rounding at these inputs (a batch norm over very few values, a "
        "near-singular normalisation), so neither result is more exact than that; the engine's is returned",
        UserWarning, file, line)


def _eager_rounding(module, args, kwargs, count):
    """The largest difference of each of the forward's first `count` floating outputs between eager
    torch as the module is (its dtypes) and in float64, on copies of the module and of the arguments
    as they are now; None where that cannot be measured (a module that does not copy, a forward that
    fails in float64, outputs of other shapes). torch's generators are left as they were."""
    def run(dtype):
        copied = copy.deepcopy(module) if dtype is None else copy.deepcopy(module).to(dtype)
        as_dtype = lambda v: (v.detach().clone().to(dtype) if dtype is not None and v.is_floating_point()
                              else v.detach().clone()) if isinstance(v, torch.Tensor) else v
        a, k = pytree.tree_map(as_dtype, (args, kwargs))
        with _generators_kept():
            out = copied(*a, **k)
        return [t for t in pytree.tree_flatten(out)[0] if isinstance(t, torch.Tensor)][:count]
    try:
        single, double = run(None), run(torch.float64)
    except Exception:  # (a measurement only: the mismatch is then reported as it is)
        return None
    if not len(single) == len(double) == count or any(s.shape != d.shape for s, d in zip(single, double)):
        return None
    rounding = [(s.detach().double() - d.detach()).abs().max().item() if s.is_floating_point() and s.numel() else 0.0
                for s, d in zip(single, double)]
    return rounding if all(math.isfinite(r) for r in rounding) else None  # (a NaN measures nothing)


def _by_position(tensors):
    """rebuild() of a call by position with tensors only."""
    return tuple(tensors), {}


@contextlib.contextmanager
def _generators_kept():
    """torch's CPU generator, and the CUDA ones once CUDA is initialised, as they were before."""
    cpu = torch.get_rng_state()
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() and torch.cuda.is_initialized() else None
    try:
        yield
    finally:
        torch.set_rng_state(cpu)
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)


def _check_initialised(name, named):
    """UnsupportedOp naming a lazy module's parameter or buffer that its first forward has not made yet."""
    for n, t in named:
        if torch.nn.parameter.is_lazy(t):
            raise UnsupportedOp(f"the uninitialised parameter or buffer '{n}' (a lazy module's)", f"{name}'s state",
                                detail="run one forward of the module eagerly first (model(example_input)), which "
                                       "gives it its shape, as torch asks before an optimizer is made; then call "
                                       "the jitted module")


def _check_dtypes(name, params, buffers):
    """UnsupportedOp naming a parameter or buffer of a dtype the engine has no type for (complex)."""
    for kind, named in (("parameter", params), ("buffer", buffers)):
        for n, t in named:
            if t.dtype not in DTYPES:
                dtype = str(t.dtype).replace("torch.", "")
                raise UnsupportedOp(f"the {kind} '{n}' of dtype {dtype}", f"{name}'s {kind}s", detail=(
                    "the engine has no complex dtypes; keep the real and imaginary parts (or cos and sin, for "
                    "rotary embeddings) as two real tensors"))


def _share_memory_as_eager(outs, program):
    """The outputs' memory shared as eager's was: an output that lies in another output's (`h, h[:, 0]`)
    made a view of it for autograd too (an in-place call on it is then part of the other's history);
    one that the engine's run made share another's where eager's did not (CSE merged two same sums)
    copied."""
    for j, i in program.output_views:
        if within_output(outs[j], outs[i]):
            outs[j] = outs[i].as_strided(outs[j].shape, outs[j].stride(), outs[j].storage_offset())
    groups = {}
    for k, group in enumerate(program.output_memory):
        if groups.setdefault(storage_pointer(outs[k]), group) != group:
            outs[k] = outs[k].clone()


def _stand_ins(inputs, args, kwargs):
    """The tensors a recording's eager run takes: a copy of each input (one with a history of the
    caller's, an activation, as a copy with a history of its own), so that an in-place write in
    forward leaves the caller's tensors and their histories as they were (the engine's call then
    writes them, with the write's history); `inputs` itself where inputs share memory, or where the
    call passes containers (which the forward may change: the caller's own are passed; recorder.py
    refuses an in-place write into an input there)."""
    filled = [t for t in inputs if t.numel()]
    copyable = inputs and not _aliases(inputs) and len({storage_pointer(t) for t in filled}) == len(filled) and \
        all(type(t) is torch.Tensor and memory_span(t)[2] <= 2 * t.numel() + 4096 for t in inputs) and \
        all(v is None or isinstance(v, torch.Tensor) or _is_scalar(v) for v in list(args) + list(kwargs.values()))
    if not copyable:
        return inputs

    def stand_in(t):
        """A copy with t's shape, strides and storage offset (what a forward may read of it), its
        requires_grad and, where t has a history, one of its own (eager refuses an in-place write
        into a leaf that requires grad, or a view of one)."""
        with torch.no_grad():  # (the memory from its storage's start: an expanded t has overlapping elements)
            memory = t.detach().as_strided((memory_span(t)[2],), (1,), 0).clone()
        if t.grad_fn is not None:
            memory = memory.requires_grad_() * 1
        copy = memory.as_strided(t.shape, t.stride(), t.storage_offset())
        return copy if t.grad_fn is not None else copy.detach().requires_grad_(t.requires_grad)
    with torch.enable_grad():
        return [stand_in(t) for t in inputs]


def _aliases(inputs):
    """Which of a call's tensors are one object passed twice (as the index of its first place), or ()
    when all are distinct: a recording reads such a tensor as one input, so a call passing two
    tensors there needs its own entry."""
    if len({id(t) for t in inputs}) == len(inputs):
        return ()
    first = {}
    return tuple(first.setdefault(id(t), i) for i, t in enumerate(inputs))


def _positional_inputs(args, kwargs):
    """The steady path's pick() of a call by position with tensors only."""
    return list(args)


_GUARDED_CONSTANTS = (bool, int, float, str)
_NAMED_BY_KEYWORD = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def _unique(names, n):
    out, seen = [], set()
    for i in range(n):
        name = names[i] if i < len(names) else f"arg{i}"
        while name in seen:
            name += "_"
        seen.add(name)
        out.append(name)
    return out


def _engine_inputs(inputs, program, recorded_call=False):
    """The tensors a call of `program` passes the engine: the call's own, the captured ones, the seed."""
    return list(inputs) + program.captured_tensors(recorded_call) + _seed(program)


def _seed(program):
    """The dropout seed of one call, drawn from torch's default generator (torch.manual_seed sets it)."""
    if not program.uses_seed:
        return []
    return [torch.randint(0, 2 ** 62, (), dtype=torch.int64)]


class _DistributedMarker(torch.nn.Module):
    """ddp(model)/fsdp(model) before jit: a module marked with transforms that jit applies."""

    def __init__(self, module, transforms):
        super().__init__()
        self.module = module
        self.tv_transforms = list(transforms)
        self.process_group_for_ddp = ProcessGroup()  # as thunder.distributed.ddp sets it

    def forward(self, *args):
        return self.module(*args)


def jit(module, example_inputs=None, transforms=(), semantics="lazy", history_limit=DEFAULT_HISTORY_LIMIT):
    """Records `module`'s forward into the engine; transforms (the engine's names:
    thunder_viz.transform_names()) are applied at the first call, reading module state when the
    semantics mode says (thunder_viz.semantics_names(): lazy, thunder-2024-03, thunder-2026-01). An
    order that breaks a composition rule raises IllegalOrder (a ValueError) naming the rule and the
    fix. With example_inputs, the traces are acquired now."""
    fn = module
    before = []
    while isinstance(module, _DistributedMarker):
        before = module.tv_transforms + before
        module = module.module
    if isinstance(module, JittedModule):
        raise TypeError("the module is jitted already (jit applies once)")
    tm = JittedModule(module, before + ["jit"] + list(transforms), semantics, fn=fn, history_limit=history_limit)
    _prepare_cpu_products(module)
    if example_inputs is not None:
        if isinstance(example_inputs, torch.Tensor):
            example_inputs = (example_inputs,)
        tm.prepare(*example_inputs)
    return tm


_cpu_products_prepared = False


def _prepare_cpu_products(module):
    """Starts the engine's one-time setup of its CPU products (oneDNN generating its kernels, tens of
    milliseconds) beside the user's program when the module holds a CPU float32 tensor, so that the
    first call does not wait for it. The thread is not a daemon: the interpreter waits for it at exit."""
    global _cpu_products_prepared
    if _cpu_products_prepared:
        return
    tensors = itertools.chain(module.parameters(), module.buffers()) if isinstance(module, torch.nn.Module) else ()
    if any(t.device.type == "cpu" and t.dtype == torch.float32 for t in tensors):
        _cpu_products_prepared = True
        # (daemon=False: a thread inherits its creator's flag, and a thread torch or C++ started is a daemon)
        threading.Thread(target=_C.prepare_cpu_products, name="thunder_viz: CPU products", daemon=False).start()


def _transform(name, model):
    if isinstance(model, JittedModule):
        return model.with_transform(name)
    if isinstance(model, _DistributedMarker):
        return _DistributedMarker(model.module, model.tv_transforms + [name])
    if isinstance(model, torch.nn.Module):
        return _DistributedMarker(model, [name])
    raise TypeError(f"thunder_viz.{name} expects a jitted module or a torch.nn.Module, got {type(model).__name__}")


def ddp(model):
    """ddp(jit(m)) or jit(ddp(m)): both give canonically equal traces (state read at the first call)."""
    return _transform("ddp", model)


def fsdp(model):
    """fsdp(jit(m)) or jit(fsdp(m)) (ZeRO-3: shards dim 0 of every parameter over the ranks)."""
    return _transform("fsdp", model)


def _last(tm):
    if not isinstance(tm, JittedModule):
        raise TypeError(f"expected a thunder_viz jitted module, got {type(tm).__name__}")
    if not tm._history:
        raise RuntimeError("the module has not been called yet")
    return tm._history[-1]


def last_traces(tm):
    return [s.trace for s in _last(tm).stages["forward"]]


def last_prologue_traces(tm):
    return [s.trace for s in _last(tm).stages["prologue"]]


def last_backward_traces(tm):
    return [s.trace for s in _last(tm).stages["backward"]]


def last_epilogue_traces(tm):
    return [s.trace for s in _last(tm).stages["epilogue"]]


def cache_hits(tm):
    return tm.cache_hits


def cache_misses(tm):
    return tm.cache_misses


def history(tm):
    """Every call's CallRecord (hit/miss, key, stages)."""
    return list(tm._history)


def run_world(size, fn, timeout_seconds=60):
    """Runs fn(rank) on `size` CPU ranks (threads of this process, gloo); returns each rank's result.
    Jitted modules called inside fn use that rank's communicator (ddp/fsdp collectives)."""
    return _C.run_world(size, fn, timeout_seconds)


def world_info():
    """(rank, world size) of the calling thread: inside run_world its thread's, under torch.distributed
    (after the first jitted call or process_group.join()) the process's, else (0, 1)."""
    return tuple(_C.world_info()[:2])
