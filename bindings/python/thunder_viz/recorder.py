"""Recording the torch-level calls of a module's forward with a TorchFunctionMode.

Each call goes through one table, keyed by the function's name: a handler turns the call (and its
real result, which gives shapes) into calls of engine symbols (`ltorch.linear`, the names
`thunder_viz.symbol_names()` lists) whose arguments are references to earlier values, parameters by
qualified name, or literals; the bindings make each call with the engine's TraceBuilder. Metadata
queries (size, shape, dtype, ...) run and are not recorded; anything else is an UnsupportedOp that
names the function, the file:line that called it (the user's, or torchvision's) and the supported
alternatives where known.

What eager torch would compute is what the recording says:
- calls made while grad is disabled (`with torch.no_grad():` inside forward) read their
  differentiable inputs through `ltorch.detach`, as `Tensor.detach()` does;
- in-place calls (`add_`, `x += y`, `relu(inplace=True)`) are recorded out of place and the tensor's
  later reads take the new value; an in-place update of an input, a parameter or a buffer (BatchNorm's
  running statistics) is recorded as the ATen operator itself, which the engine's run applies to the
  tensor as eager torch does (the recording's own write is undone); a write into a view of a tensor
  made in forward (`mask[0:2, 3:6] = 1`, `z[:, 1] = y`, `z[1:] += v`, `z.t()[0].mul_(2)`) gives the
  tensor its new value by the view's scatter (slice_scatter, select_scatter; a reshape or permute for
  a view of every element), one into a view of an input, parameter or buffer is refused, and a read
  of a tensor that changed in place through another view of its storage is refused;
- a call with no handler is recorded as the operators it runs (`torch.ops.aten.*`, a library's such
  as `torch.ops.torchvision.*`, through TorchDispatchMode): executed through the dispatcher,
  differentiated by LibTorch's autograd; one that reads a tensor's value into Python (`.item()`,
  `if tensor:`) or whose shape follows from values is refused;
- dropout's mask comes from a seed drawn from torch's generator at every call (the program's input
  `rng_seed`), each dropout site at its own offset;
- a tensor that existed before the call and is none of its arguments, parameters or buffers (a
  module's plain tensor attribute, a global) is a captured input (Captured), read from its place at
  every call; what the forward assigns to module attributes is a SideEffect replayed after every
  call; the globals the forward's code names are watched (Program.global_values); a draw from
  Python's random, or a change no replay redoes, makes the program one that records every call.
"""
import builtins
import collections
import contextlib
import dataclasses
import dis
import functools
import inspect
import linecache
import os
import random
import sys
import threading
import re
import types

import torch
import torch.utils._pytree as pytree
from torch.overrides import TorchFunctionMode, _pop_mode_temporarily
from torch.utils._python_dispatch import TorchDispatchMode

from .closures import ClosureCells, closure_cells, function_defaults, user_functions
from .constants import (GONE, MAX_NESTING, DeepValue, fields_table, forward_hooks, hashable, holds_fields, holds_settings,
                        hook_objects, is_constant, is_torchs, keyed_attribute, names_read, settings_table, snapshot,
                        too_many_items)
from .errors import RecordedCallError, UnsupportedOp

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))
# Directories (with their separator: torch's must not match torchvision's) whose frames are not the caller's.
_SKIP_DIRS = (_PKG_DIR + os.sep, _TORCH_DIR + os.sep)

DTYPES = {torch.float64: "f64", torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16",
           torch.int64: "i64", torch.int32: "i32", torch.int16: "i16", torch.int8: "i8", torch.uint8: "ui8",
           torch.bool: "b8"}

# Queries that read metadata only, and grad mode switches (torch 2.x routes `torch.no_grad()`'s
# through the mode; each recorded call reads the mode it runs in): run, not recorded.
PASSTHROUGH = {
    "size", "dim", "ndimension", "numel", "__len__", "is_floating_point", "is_complex", "is_contiguous", "element_size",
    "get_device", "stride", "__repr__", "__format__", "__hash__", "nelement",
    "attr:shape", "attr:dtype", "attr:device", "attr:requires_grad", "attr:is_cuda", "attr:ndim", "attr:is_leaf",
    "attr:grad_fn", "attr:layout", "attr:names", "attr:is_sparse", "attr:is_quantized", "attr:is_meta",
    "attr:_version", "storage_offset", "_set_grad_enabled", "is_grad_enabled",
}

# Metadata reads that no cache key holds (a slice's offset into its batch differs from call to call):
# a forward that reads one records at every call.
UNKEYED_READS = {"storage_offset", "attr:_version"}

# Calls that read a tensor's memory without running an ATen operator: refused, never recorded.
READS_DATA = {"tolist", "numpy", "__array__", "data_ptr", "storage", "untyped_storage", "__dlpack__"}
# Calls that act on autograd's graph, which the engine's backward does not run: (what, the way out).
ACTS_ON_AUTOGRAD = {
    "register_hook": ("Tensor.register_hook inside forward", "the engine's backward runs no Python hook on a "
                      "tensor of the forward; register the hook on a parameter (p.register_hook) outside forward, "
                      "or on the jitted module's output"),
    "retain_grad": ("Tensor.retain_grad inside forward", "the engine's backward keeps no gradient of a tensor of "
                    "the forward; call retain_grad on the jitted module's output"),
}

ALTERNATIVES = {
    "__getitem__": ["Tensor.split", "Tensor.chunk", "torch.split"],
    "bmm": ["torch.matmul"],
    "mm": ["torch.matmul"],
    "item": ["keep the value a tensor (data-dependent values are not traced)"],
    "__bool__": ["torch.where (data-dependent control flow is not traced)"],
    "tolist": ["keep the value a tensor"],
    "narrow": ["Tensor.split"],
    "max": ["torch.amax", "torch.maximum"],
    "leaky_relu": ["torch.nn.functional.relu", "torch.nn.functional.gelu", "torch.nn.functional.silu"],
    "elu": ["torch.nn.functional.relu", "torch.nn.functional.gelu", "torch.nn.functional.silu"],
    "softplus": ["torch.nn.functional.silu", "torch.sigmoid"],
    "bool_mask": ["torch.where(mask, x, other)", "Tensor.masked_fill(~mask, value)", "a sum weighted by the mask"],
    "__index__": ["pad to a fixed length, or pass the bound as a Python int (a new bound is a new recording)"],
    "one_hot": ["F.one_hot(y, num_classes=C)"],
    # nn.TransformerEncoder's check whether its nested-tensor fast path may run (eval with a padding mask)
    "_nested_tensor_from_mask_left_aligned": ["nn.TransformerEncoder(..., enable_nested_tensor=False), whose "
                                              "layers then run as one call of each does"],
}


def func_key(func):
    name = getattr(func, "__name__", None) or str(func)
    if name == "__get__":
        owner = getattr(func, "__self__", None)
        return "attr:" + getattr(owner, "__name__", "?")
    return name


def func_label(func):
    key = func_key(func)
    if key.startswith("attr:"):
        return "Tensor." + key[5:]
    mod = getattr(func, "__module__", None)
    qual = getattr(func, "__qualname__", key)
    if qual.split(".", 1)[0] in ("_TensorBase", "TensorBase", "Tensor"):  # the first two: torch 1.13's, 2.x's
        return "Tensor." + qual.split(".", 1)[1]
    if qual.startswith("_VariableFunctionsClass."):
        return "torch." + qual.split(".", 1)[1]
    if mod in ("torch._C._nn",):
        return "torch.nn.functional." + key
    if isinstance(func, (torch._ops.OpOverloadPacket, torch._ops.OpOverload)):
        return f"torch.ops.{func}"  # a library's operator: torch.ops.torchvision.nms
    return f"{mod}.{qual}" if mod else qual


def _innermost_frame_outside(dirs):
    """(file, line) of the innermost frame whose code is not under `dirs` (nor frozen), or None."""
    f = sys._getframe(2)
    while f is not None:
        if not _code_in(f.f_code, dirs) and not f.f_code.co_filename.startswith("<frozen"):
            return f.f_code.co_filename, f.f_lineno
        f = f.f_back
    return None


def _code_in(code, dirs):
    return _absolute(code.co_filename).startswith(dirs)


@functools.lru_cache(maxsize=4096)
def _absolute(filename):
    return os.path.abspath(filename)


def _read_by_this_package():
    """Whether the innermost frame outside torch and the recorder's torch-function handlers is this
    package's own (a version the recorder reads for itself, not the forward's read)."""
    f = sys._getframe(2)
    while f is not None:
        handler = f.f_code.co_filename == __file__ and f.f_code.co_name in ("__torch_function__", "_torch_function")
        if not handler and not _code_in(f.f_code, (_TORCH_DIR + os.sep,)):
            return _code_in(f.f_code, (_PKG_DIR + os.sep,))
        f = f.f_back
    return False


def user_frame():
    """(file, line) of the innermost frame outside torch and thunder_viz."""
    return _innermost_frame_outside(_SKIP_DIRS) or ("<unknown>", 0)


_NN_DIR = os.path.join(_TORCH_DIR, "nn") + os.sep
# Installed libraries (torchvision, transformers): a frame there is a library's, not the user's own.
_LIBRARY_DIRS = tuple({os.path.dirname(_TORCH_DIR) + os.sep} | {p + os.sep for p in sys.path
                                                                 if p.endswith(("dist-packages", "site-packages"))})


def _in_a_library(file):
    return os.path.abspath(file).startswith(_LIBRARY_DIRS)


def own_frame():
    """(file, line) of the innermost frame of the user's own code: outside torch, thunder_viz and
    the installed libraries (else the innermost outside torch and thunder_viz)."""
    return _innermost_frame_outside(_SKIP_DIRS + _LIBRARY_DIRS) or user_frame()


def library_frame():
    """(file, line) of the innermost frame in torch.nn's own source (a module's forward, a functional),
    where a refused call is made inside a library layer rather than on the user's line; else None."""
    f = sys._getframe(1)
    while f is not None:
        fn = os.path.abspath(f.f_code.co_filename)
        if fn.startswith(_NN_DIR):
            return f.f_code.co_filename, f.f_lineno
        if not fn.startswith(_SKIP_DIRS):
            return None  # the user's frame comes first: the call is theirs
        f = f.f_back
    return None


def shown_path(path):
    p = os.path.abspath(path)
    for root in ("/tests/", "/samples/", "/bindings/", "/engine/", "/app/"):
        at = p.rfind(root)
        if at >= 0:
            return p[at + 1:]
    try:
        rel = os.path.relpath(p)
        return rel if not rel.startswith("..") else p
    except ValueError:
        return p


def header_of(path, line):
    """Thunder's header comment: "file:line: \\t<source line>"."""
    out = f"{shown_path(path)}:{line}"
    text = linecache.getline(path, line).rstrip("\n")
    if text.strip():
        out += ": \t" + text
    return out


SEED_INPUT = "rng_seed"
# Words in the names of ATen operators that draw random numbers.
RANDOM_WORDS = ("rand", "bernoulli", "dropout", "normal", "multinomial", "uniform", "exponential", "poisson",
                "geometric", "cauchy", "log_normal")


class Captured:
    """A tensor the forward read that existed before the call and is none of its arguments,
    parameters or buffers: a module's plain tensor attribute or a global of the code that read it.
    It is an input of the trace, read at every call of the entry from its place, `table[key]` (a
    module's __dict__, a module's globals), as Thunder's prologue unpacks it: a tensor put there
    since (a memory the forward keeps, a global rebound) is read as long as it has the metadata
    the trace was made for (`meta`)."""

    def __init__(self, name, slot, tensor, table, key, index=None):
        self.name, self.slot, self.table, self.key, self.index = name, slot, table, key, index
        self.meta = _captured_meta(tensor)
        self.recorded = tensor  # what the recorded call read (the forward may have replaced it since)

    def tensor(self):
        """The tensor at its place (`index`: the item of the tuple or list there), or None."""
        t = self.table.get(self.key)
        if self.index is not None:
            if type(t) is dict:
                return t.get(self.index)
            t = t[self.index] if type(t) in (list, tuple) and len(t) > self.index else None
        return t

    def engine_tensor(self, recorded_call=False):
        """What the engine reads: the tensor, or a complex one's real pair (torch.view_as_real)."""
        t = self.recorded if recorded_call else self.tensor()
        return torch.view_as_real(t) if isinstance(t, torch.Tensor) and t.is_complex() else t

    def current(self):
        """Whether its place holds a tensor of the metadata the trace was made for."""
        t = self.tensor()
        return isinstance(t, torch.Tensor) and _captured_meta(t) == self.meta


def _same_value(now, was):
    """Whether a watched value is as it was: `was` a snapshot, or a DeepValue."""
    if isinstance(was, DeepValue):
        return DeepValue(now) == was
    return hashable(now) == hashable(was)


def _captured_meta(t):
    return (t.shape, t.dtype, t.device, t.requires_grad, t.is_contiguous())


class SideEffect:
    """An assignment the forward made, replayed after every call of its entry: `owner[name] = ` or
    `owner.name = ` the value `source` gives, which is one of
    - ("output", k): the program's output k, a tensor of the trace (an auxiliary loss, a kept
      activation, the weight a weight_norm hook computes);
    - ("input", i): the call's tensor i (an input kept for the next call);
    - ("value", v): a constant (a flag it toggles) or a parameter;
    - ("outputs", [k, ...]): for a list `owner`, those outputs appended (activations a hook collects).
    `owner` is a module (setattr), a dict (an entry; a module's globals for a global), a function's
    ClosureCells (a variable of its closure) or a list."""

    def __init__(self, owner, name, source):
        self.owner, self.name, self.source = owner, name, source
        self.holder = None  # for a list: (a module's __dict__, attribute) that holds it, read at each call

    def apply(self, outputs, inputs, recorded_call=False):
        kind, what = self.source
        if kind == "outputs":
            values = [outputs[k] for k in what]
            owner = self.owner if self.holder is None else self.holder[0].get(self.holder[1])
            if not isinstance(owner, list):  # (eager's append would fail in forward)
                raise RuntimeError(f"thunder_viz: the forward appends to the list of the attribute "
                                   f"'{self.holder[1]}', which now holds a {type(owner).__name__}")
            if recorded_call:  # the recording appended eager's tensors: this call's replace them
                owner[len(owner) - len(values):] = values
            else:
                owner.extend(values)
            return
        value = outputs[what] if kind == "output" else inputs[what] if kind == "input" else what
        if isinstance(self.owner, (dict, ClosureCells)):
            self.owner[self.name] = value
        else:
            setattr(self.owner, self.name, value)


class Program:
    """The recorded calls: ops (symbol, args, kwargs, output slots, header), inputs and outputs.
    Slot len(input_names) is kept for the dropout seed; `uses_seed` says whether an op reads it.
    The trace's inputs are the call's tensors, then the captured ones, then the seed if an op reads
    it; to_dict() numbers the slots so that they come first, in that order."""

    def __init__(self, input_names):
        self.input_names = list(input_names)
        self.seed_slot = len(self.input_names)
        self.uses_seed = False
        self.captured = []            # Captured, in the order the recording met them
        self.global_values = []       # (table, name, copy) of what the trace's constants may come from
        self.global_objects = []      # (table, name, object): the dicts and settings objects those are read from
        self.global_absent = []       # (dict, key): keys the code names that such a dict does not hold
        self.global_sizes = []        # (dict, size): those dicts, and the hook tables of the modules called through them
        self.python_draws = []        # "random.uniform at file:line" of each draw from Python's random
        # what the forward assigned, replayed after every call (SideEffect), and what it changed that
        # no replay can redo (a list rebound, an attribute deleted): such a program records every call
        self.side_effects = []
        self.unreplayable = []
        self.detached_outputs = []    # indices of outputs that carry no gradient
        self.rebased_inputs = []      # (output, input): an input written in place, its new value with its history
        # (function, args, kwargs) with BlockInput(k) in the tensors' places: a checkpointed block that
        # wrote buffers, run again in the call's backward (_BlockStart); output k is the tensor
        self.recomputations = []
        self.recorded_outputs = None  # eager's tensor of each output, until jit.py has read what they reach
        self.output_views = []        # (j, i): output j is a view into output i (recorder._output_views)
        self.output_memory = []       # per output, eager's group of outputs sharing memory (recorder._memory_groups)
        self.returned_inputs = []     # (output, input): an input the forward returns as it is
        self.input_views = []         # (output, input, shape, strides, offset from the input's): a view of an input returned
        self.draws_in_ops = False     # an op draws random numbers its name does not say (an LSTM's dropout)
        self.ops = []
        self.outputs = []
        self.output_spec = None       # torch.utils._pytree spec of what forward returned
        self.output_constants = {}    # leaf index -> a non-tensor leaf (None, a number)
        self.num_slots = self.seed_slot + 1

    @property
    def random(self):
        """Whether an op draws random numbers (dropout, an ATen fallback such as bernoulli_): its
        results are not eager's."""
        return self.uses_seed or self.draws_in_ops or any(any(w in op[0] for w in RANDOM_WORDS) for op in self.ops)

    def all_input_names(self):
        names = self.input_names + [c.name for c in self.captured]
        if not self.uses_seed:
            return names
        seed = SEED_INPUT
        while seed in names:
            seed += "_"
        return names + [seed]

    def captured_tensors(self, recorded_call=False):
        """The captured tensors a call passes: those in their places, or, for the recorded call
        itself, those it read (its forward may have assigned others since)."""
        return [c.engine_tensor(recorded_call) for c in self.captured]

    @property
    def reads_outside(self):
        """Whether the program read state outside the call's arguments and the module's tensors and
        constants (captured tensors, watched globals and closures): a guard must watch it too."""
        return bool(self.captured or self.global_values or self.global_objects or self.global_absent or
                    self.global_sizes)

    def current(self):
        """Whether every captured tensor's place and every watched global are as recorded."""
        return all(c.current() for c in self.captured) and all(
            _same_value(table.get(n, GONE), v) for table, n, v in self.global_values) and all(
            table.get(n, GONE) is v for table, n, v in self.global_objects) and all(
            key not in table for table, key in self.global_absent) and all(
            len(table) == size for table, size in self.global_sizes)

    def to_dict(self):
        slot = self._renumbering()
        return {"inputs": self.all_input_names(),
                "ops": [(symbol, _renumbered(args, slot), _renumbered(kwargs, slot), [slot(s) for s in outs], header)
                        for symbol, args, kwargs, outs, header in self.ops],
                "outputs": _renumbered(self.outputs, slot), "num_slots": self.num_slots + len(self.captured)}

    def _renumbering(self):
        """slot -> its number in to_dict(): the captured tensors' slots follow the call's inputs."""
        if not self.captured:
            return lambda s: s
        n, moved = len(self.input_names), {c.slot: len(self.input_names) + k for k, c in enumerate(self.captured)}
        return lambda s: s if s < n else moved.get(s, s + len(moved))

    def describe(self):
        return "\n".join(f"{o[3]} = {o[0]}{tuple(o[1])}{o[2] or ''}    # {o[4]}" for o in self.ops)


def _renumbered(x, slot):
    """The recorder's encoding `x` with each ("v", slot) reference renumbered."""
    if isinstance(x, tuple) and len(x) == 2 and x[0] == "v" and isinstance(x[1], int):
        return ("v", slot(x[1]))
    if isinstance(x, tuple) and len(x) == 2 and x[0] in ("l", "t"):
        return (x[0], _renumbered(x[1], slot))
    if isinstance(x, list):
        return [_renumbered(e, slot) for e in x]
    if isinstance(x, dict):
        return {k: _renumbered(v, slot) for k, v in x.items()}
    return x


_active = threading.local()  # the recorder of this thread (World ranks record concurrently)


def recording():
    """Whether a recording runs on this thread (a jitted module called inside another's forward
    runs its module there, so that the outer trace holds its calls)."""
    return getattr(_active, "recorder", None) is not None


class _RecordingPatches:
    """Replacements in torch and Python's random while any thread records; the last recorder to
    finish puts back what was there:
    - Tensor.__getitem__ reaches TorchFunctionMode only as whatever `torch.Tensor.__getitem__` is, and
      `t[i] = tensor` with an integer index not at all (torch 1.13): both are recorded by functions
      of the recorder's;
    - `p.data = value` is no torch call: for a parameter or buffer it is recorded as the value copied
      into it (a momentum encoder's update), anything else is refused;
    - the reentrant checkpoint (torch.utils.checkpoint's default in torch 1.13) runs its block under
      no_grad, which a recording would take for the user's own no_grad block (no gradient through the
      block): its block runs as a plain call, which is what it computes; so does the non-reentrant
      one (torch 2.x's setup applies an autograd.Function of torch's: it only saves inputs); a block
      that writes a buffer runs twice, as eager's recomputation does (_BlockStart);
    - any other torch.autograd.Function applied in forward is refused: its forward runs under no_grad
      and its backward is its own code;
    - a draw from Python's `random` module (or numpy's, when numpy is loaded) made by the forward is
      noted (Program.python_draws): the trace holds what the draw decided, so such a program is not
      reused (jit.py records every call of it anew, as LayerDrop's `random.uniform(0, 1)` needs)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._users = 0
        self._saved = {}

    @staticmethod
    def _targets():
        """(label, owner, attribute, replacement) of each."""
        import torch.utils.checkpoint as checkpoint
        draws = [(f"random.{n}", random, n, _python_draw(f"random.{n}")) for n in _PYTHON_DRAWS]
        # every Random's draws go through its random() (a random.Random() of the user's own,
        # `from random import uniform`): shadowed on the class
        draws.append(("random.Random.random", random.Random, "random", _python_draw("random.Random.random")))
        numpy = sys.modules.get("numpy")
        if numpy is not None and hasattr(numpy, "random"):
            draws += [(f"numpy.random.{n}", numpy.random, n, _python_draw(f"numpy.random.{n}"))
                      for n in _NUMPY_DRAWS if hasattr(numpy.random, n)]
        return [("__getitem__", torch.Tensor, "__getitem__", _getitem),
                ("__setitem__", torch.Tensor, "__setitem__", _setitem),
                ("data", torch.Tensor, "data", property(_data_get, _data_set)),
                ("checkpoint", checkpoint.CheckpointFunction, "apply", staticmethod(_checkpoint_block)),
                ("Function.apply", torch.autograd.Function, "apply", classmethod(_function_apply))] + \
            ([("checkpoint without reentry", checkpoint, "_checkpoint_without_reentrant_generator", _plain_block)]
             if hasattr(checkpoint, "_checkpoint_without_reentrant_generator") else
             [("checkpoint without reentry", checkpoint, "_checkpoint_without_reentrant", _unreentered_block)]
             if hasattr(checkpoint, "_checkpoint_without_reentrant") else []) + draws + \
            [(f"{owner.__name__}.{n}", owner, n, _reseed(f"{owner.__name__}.{n}"))
             for owner in (torch, torch.random) for n in _RESEEDS if n in vars(owner)]

    def enter(self):
        with self._lock:
            if self._users == 0:
                self._tensor_slots = _TypeSlots(torch.Tensor)
                for label, owner, name, replacement in self._targets():
                    defined = next(k.__dict__[name] for k in getattr(owner, "__mro__", (owner,)) if name in k.__dict__)
                    self._saved[label] = (owner, name, owner.__dict__.get(name, _ABSENT), defined)
                    setattr(owner, name, replacement)
            self._users += 1

    def exit(self):
        with self._lock:
            self._users -= 1
            if self._users == 0:
                for owner, name, own, _ in self._saved.values():
                    if own is _ABSENT:
                        delattr(owner, name)  # it was inherited
                    else:
                        setattr(owner, name, own)
                self._tensor_slots.restore()

    def original(self, label="__getitem__"):
        """The attribute as its class defines it: the method, the data descriptor, a classmethod's
        descriptor (bound with __get__)."""
        return self._saved[label][3]


# Libraries whose own Python code reads tensors' values, and what to do instead: (a path inside the
# library, the hint); and torch.nn's RNNs given a PackedSequence. Checked against the frames of a
# refused call.
_LIBRARY_HINTS = (
    ("torch/distributions/", "torch.distributions checks its arguments' values in Python (validate_args): "
                             "construct the distribution with validate_args=False"),
)
_PACKED_HINT = ("a PackedSequence carries its batch sizes as values read into Python: pass the padded batch to the "
                "RNN (and mask the padding) instead of pack_padded_sequence")


def _library_hint():
    """The hint of the first library of _LIBRARY_HINTS among the caller's frames, or None."""
    packed = torch.nn.utils.rnn.PackedSequence
    frame = sys._getframe(1)
    while frame is not None:
        path = frame.f_code.co_filename.replace(os.sep, "/")
        for part, hint in _LIBRARY_HINTS:
            if part in path:
                return hint
        if "torch/nn/" in path and any(isinstance(v, packed) for v in frame.f_locals.values()):
            return _PACKED_HINT
        frame = frame.f_back
    return None


class _TypeSlots:
    """A class's C-level sequence and mapping slots, as they are now, to put back later. Setting
    `torch.Tensor.__getitem__` and deleting it again does not restore them: CPython then leaves a
    generic sq_item on the class, and every tensor passes PySequence_Check, so that
    `torch.tensor([torch.tensor(0.5)])` raises "len() of a 0-d tensor" in the rest of the process.
    (CPython's PyTypeObject layout, 64-bit: tp_as_sequence and tp_as_mapping at bytes 104 and 112.)"""

    _SEQUENCE, _MAPPING = (104, 10), (112, 3)  # (offset of the table's pointer, slots in the table)

    def __init__(self, cls):
        import ctypes
        self._cls, self._ctypes = cls, ctypes
        usable = sys.implementation.name == "cpython" and ctypes.sizeof(ctypes.c_void_p) == 8 and \
            not hasattr(sys, "gettotalrefcount")  # (a debug build's objects start with two more pointers)
        self._saved = [(table, list(table)) for table in map(self._table, (self._SEQUENCE, self._MAPPING))
                       if table is not None] if usable else []

    def _table(self, where):
        ctypes = self._ctypes
        offset, slots = where
        address = ctypes.c_void_p.from_address(id(self._cls) + offset).value
        return (ctypes.c_void_p * slots).from_address(address) if address else None

    def restore(self):
        for table, values in self._saved:
            for i, v in enumerate(values):
                table[i] = v
        if self._saved:
            self._ctypes.pythonapi.PyType_Modified(self._ctypes.py_object(self._cls))


_ABSENT = object()
# Python's and numpy's module-level draws (what a forward calls as random.uniform(0, 1)).
_PYTHON_DRAWS = ("random", "uniform", "randint", "randrange", "choice", "choices", "shuffle", "sample", "gauss",
                 "normalvariate", "betavariate", "expovariate", "triangular", "getrandbits")
_NUMPY_DRAWS = ("rand", "randn", "random", "random_sample", "uniform", "randint", "normal", "choice", "permutation",
                "shuffle", "binomial", "poisson")


# What sets torch's generators (called inside forward: refused, _reseed).
_RESEEDS = ("manual_seed", "seed", "set_rng_state")


def _reseed(label):
    def reseed(*args, **kwargs):
        rec = getattr(_active, "recorder", None)
        if rec is not None and not rec.in_call:
            rec.location = user_frame()
            raise rec.unsupported(f"{label} inside forward", detail=(
                "the engine's draws in a call come from the generator's state when the call starts; seed "
                "before calling the jitted module"))
        return _patches.original(label)(*args, **kwargs)
    return reseed


def _python_draw(label):
    def draw(*args, **kwargs):
        rec = getattr(_active, "recorder", None)
        if rec is not None and not rec.in_call:
            file, line = user_frame()
            rec.program.python_draws.append(f"{label} at {shown_path(file)}:{line}")
        return _patches.original(label)(*args, **kwargs)
    return draw


def _data_get(self):
    alias = _patches.original("data").__get__(self)
    rec = getattr(_active, "recorder", None)
    if rec is not None and not rec.in_getitem and not rec.in_call:
        rec.location = user_frame()
        rec.note_data(alias, self)
    return alias


def _data_set(self, value):
    rec = getattr(_active, "recorder", None)
    descriptor = _patches.original("data")
    if rec is None or rec.in_getitem or rec.in_call:
        return descriptor.__set__(self, value)
    rec.location = user_frame()
    rec.assign_data(self, value)
    descriptor.__set__(self, value)


def _function_apply(cls, *args, **kwargs):
    rec = getattr(_active, "recorder", None)
    if rec is not None and not rec.in_getitem and not rec.in_call:
        rec.location = user_frame()
        raise rec.unsupported(f"a custom torch.autograd.Function ({cls.__qualname__})", detail=(
            "its forward runs under no_grad and its backward is code of its own, which the recording cannot "
            "trace: write the computation with torch calls (the engine differentiates them), or call it outside "
            "the jitted module"))
    return _patches.original("Function.apply").__get__(None, cls)(*args, **kwargs)


def _checkpoint_block(function, preserve_rng_state, *args):
    if not any(isinstance(a, torch.Tensor) and a.requires_grad for a in args):
        # as torch's: with no input that requires grad, nothing in the block gets a gradient
        with torch.no_grad():
            return function(*args)
    if not torch.is_grad_enabled():  # (no graph, so no recomputation in backward)
        return function(*args)
    before = _BlockStart.now()
    out = function(*args)
    before.redo_writes(function, args, {})
    return out


def _plain_block(function, *args, **kwargs):
    """torch.utils.checkpoint.checkpoint(use_reentrant=False) of torch 2.x calls its block between
    two steps of this generator, which save the inputs for a recomputation in backward: the engine
    differentiates the block itself, so the steps do nothing but redo the block's writes
    (_BlockStart). The generator's own parameters (preserve_rng_state, context_fn, ...; their
    number differs between torch versions) come before the block's arguments."""
    before = _BlockStart.now()
    yield
    if torch.is_grad_enabled():
        before.redo_writes(function, args[_generator_settings() - 1:], kwargs)


@functools.lru_cache(maxsize=None)
def _generator_settings():
    """How many positional parameters torch's _checkpoint_without_reentrant_generator takes before
    the block's arguments (its *args)."""
    params = inspect.signature(_patches.original("checkpoint without reentry")).parameters.values()
    return next(i for i, p in enumerate(params) if p.kind is inspect.Parameter.VAR_POSITIONAL)


def _unreentered_block(function, preserve_rng_state=True, *args, **kwargs):
    """torch 1.13's checkpoint(use_reentrant=False): saved-tensor hooks around a call of the block,
    which recompute it in backward; the engine differentiates the block itself."""
    before = _BlockStart.now() if torch.is_grad_enabled() else None
    out = function(*args, **kwargs)
    if before is not None:
        before.redo_writes(function, args, kwargs)
    return out


@dataclasses.dataclass
class _BlockStart:
    """The recording's state where a checkpointed block starts. Eager's checkpoint recomputes the
    block in backward, and the recomputation writes the buffers the block wrote a second time (a
    BatchNorm's running statistics take the batch twice). redo_writes notes a block that wrote a
    buffer, with its arguments (Program.recomputations, which the trace returns as extra outputs);
    jit.py runs the block again, eagerly and under no_grad, when the call's backward runs, as
    eager's recomputation does. A block that writes a buffer and draws random numbers is refused:
    eager's recomputation replays the draws, the run in backward would not."""
    recorder: object
    buffers: list
    versions: list
    side_writes: int
    random: bool

    @staticmethod
    def now():
        rec = getattr(_active, "recorder", None)
        if rec is None:
            return _BlockStart(None, [], [], 0, False)
        buffers = list(rec.module.buffers()) if rec.module is not None else []
        return _BlockStart(rec, buffers, [b._version for b in buffers], rec.side_writes, rec.program.random)

    def redo_writes(self, function, args, kwargs):
        rec = self.recorder
        if rec is None or (rec.side_writes == self.side_writes and
                           all(b._version == v for b, v in zip(self.buffers, self.versions))):
            return
        if rec.program.random and not self.random:
            rec.location = user_frame()
            raise rec.unsupported("a checkpointed block that draws random numbers and updates a buffer", detail=(
                "torch.utils.checkpoint recomputes the block in backward, updating the buffer again (BatchNorm's "
                "running statistics) with the same random draws, which the recording cannot replay: take the "
                "dropout out of the checkpointed block, or call the model without checkpointing (densenet: "
                "memory_efficient=False)"))
        rec.recomputed_blocks.append((function, args, kwargs))


@dataclasses.dataclass(frozen=True)
class BlockInput:
    """Output k of the program in a recomputed block's arguments (Program.recomputations)."""
    k: int


def _block_input(rec, prog, value):
    if not isinstance(value, torch.Tensor):
        return value
    rec.output_tensors.append(value)
    prog.outputs.append(rec.ref(value))
    return BlockInput(len(prog.outputs) - 1)


_patches = _RecordingPatches()


def _autocast_readers():
    """(device type, is_enabled(), dtype()) per device, in the spelling this torch has: torch >= 2.4
    takes the device type, torch 1.13 has a function per device. Chosen once, not per call."""
    try:
        torch.is_autocast_enabled("cpu")
        torch.get_autocast_dtype("cpu")
    except (TypeError, AttributeError):
        return (("cpu", torch.is_autocast_cpu_enabled, torch.get_autocast_cpu_dtype),
                ("cuda", torch.is_autocast_enabled, torch.get_autocast_gpu_dtype))
    return tuple((d, lambda d=d: torch.is_autocast_enabled(d), lambda d=d: torch.get_autocast_dtype(d)) for d in ("cpu", "cuda"))


_AUTOCAST_READERS = _autocast_readers()


def autocast_state():
    """(device type, dtype) torch.autocast would run the call in, or None when it is off."""
    for device, enabled, dtype in _AUTOCAST_READERS:
        if enabled():
            return device, dtype()
    return None


def _outside_the_mode():
    """Torch calls made here are the recorder's own: the mode is popped when it is on the stack
    (inside its own __torch_function__ it is not)."""
    return _pop_mode_temporarily() if torch._C._len_torch_function_stack() else contextlib.nullcontext()


def _setitem(self, idx, value):
    rec = getattr(_active, "recorder", None)
    original = _patches.original("__setitem__")
    if rec is None or rec.in_getitem or rec.in_call:
        return original(self, idx, value)
    rec.location = user_frame()
    rec.refuse_tensor_bounds(idx)
    with _pop_mode_temporarily():  # one call, recorded here, whichever way torch would have reached the mode
        return rec.__torch_function__(original, (type(self),), (self, idx, value), {})


def _getitem(self, idx):
    rec = getattr(_active, "recorder", None)
    if rec is None or rec.in_getitem or rec.in_call:
        return _patches.original()(self, idx)
    rec.location = user_frame()
    rec.refuse_tensor_bounds(idx)
    if self.dtype.is_complex:  # (recorded on its real pair, as any call on a complex tensor)
        with _pop_mode_temporarily():
            return rec.__torch_function__(_patches.original(), (type(self),), (self, idx), {})
    rec.in_getitem = True  # the original reaches the mode too (as this function): record it once, here
    try:
        with _pop_mode_temporarily():  # the recorder's own torch calls are not the user's
            if not _is_basic_index(idx):  # integer tensors or lists: ATen's index operator
                return rec._fallback(_patches.original(), "__getitem__", (self, idx), {})
            try:
                out = _patches.original()(self, idx)
            except (IndexError, RuntimeError) as e:
                raise rec.failed(_patches.original(), (self, idx), {}, e) from e
            h_getitem(rec, out, self, idx)
    finally:
        rec.in_getitem = False
    return out


class _Encoded:
    """An argument given in the recorder's encoding already (the dropout seed's slot)."""

    def __init__(self, value):
        self.value = value


def _storage_version(t):
    try:
        return t._version
    except RuntimeError:  # a tensor made under inference mode has no version counter
        return 0


def _draw_shapes_gradient(op, args):
    """Whether an ATen operator's gradient depends on the numbers it draws (rrelu's noise, an LSTM's
    dropout, normal's std), not only on its inputs: any random operator but those whose eager
    gradient is none or zero (bernoulli, multinomial, rand_like...)."""
    name = op._schema.name.split("::")[-1]
    random = _drops_out_in_training(op, args) or any("Generator" in str(a.type) for a in op._schema.arguments) or \
        any(w in name for w in RANDOM_WORDS)
    return random and not name.startswith(("bernoulli", "multinomial", "rand"))


def _drops_out_in_training(op, args):
    """Whether an ATen operator's call draws a dropout mask (aten.lstm with dropout > 0 and train)."""
    names = [a.name for a in op._schema.arguments]
    if "dropout" not in names or "train" not in names:
        return False
    values = dict(zip(names, args))
    return bool(values.get("train")) and bool(values.get("dropout"))


def _output_views(outputs):
    """[(j, i)]: output j lies in the memory of output i, which covers it densely (`h, h[:, 0]`,
    `h, h.t()`): in eager an in-place call on j is part of i's history, so jit.py makes j a view of
    i. Of two that cover each other, the later is the view (eager's base first where one is it)."""
    views, made_views = [], set()
    for j, view in enumerate(outputs):
        for i, base in enumerate(outputs):
            if i == j or view is base or i in made_views or view.requires_grad != base.requires_grad or \
                    not within_output(view, base):
                continue  # (`h.detach(), h`: eager's one carries no gradient, the other does)
            if within_output(base, view) and view._base is not base and (base._base is view or i > j):
                continue  # (the same memory: the other is the base)
            views.append((j, i))
            made_views.add(j)
            break
    return views


def _memory_groups(outputs):
    """One number per output, the same for outputs that share memory (`h, h[:, 0]`; a tensor
    returned twice): jit.py copies an output the engine's run makes share another's memory where
    eager's did not (two same sums merged by CSE), so that an in-place call on one leaves the other."""
    first = {}
    return [first.setdefault(storage_pointer(t), k) for k, t in enumerate(outputs)]


def storage_pointer(t):
    return (t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()).data_ptr()


def within_output(view, base):
    """Whether every element of `view` is an element of `base`, whose memory is dense (each element
    of its span is one of its elements)."""
    if view.numel() == 0 or base.numel() == 0:
        return False
    ptr, lo, hi = memory_span(view)
    base_ptr, base_lo, base_hi = memory_span(base)
    return ptr == base_ptr and base_lo <= lo and hi <= base_hi and base_hi - base_lo == base.numel()


def memory_span(t):
    """(storage pointer, first element, one past the last element) a tensor may touch."""
    lo = t.storage_offset()
    hi = lo + 1 + sum((n - 1) * abs(st) for n, st in zip(t.shape, t.stride()) if n > 0) if t.numel() else lo
    return storage_pointer(t), lo, hi


class Recorder(TorchFunctionMode):
    def __init__(self, module, inputs, input_names, functions=None):
        super().__init__()
        self.module = module
        self.program = Program(input_names)
        self.refs = {}
        self.versions = {}  # id(tensor) -> its version counter when its ref was bound
        self.bound_at = {}  # id(tensor) -> the number of ops recorded when its ref was bound
        self.read_ids = set()  # ids of the tensors recorded ops have read with grad on
        self.rewritten = {}  # memory span -> (id of the tensor written in place there, the op's index)
        self.keep = []  # tensors whose id() is a key of refs stay alive
        self.owned = {}  # id(tensor) -> what it is, for inputs, parameters and buffers (never updated in place)
        self.inputs_written = set()  # ids of the inputs whose writes jit.py makes (Program.rebased_inputs)
        for i, t in enumerate(inputs):
            self._bind(t, ("v", i))
            self.owned[id(t)] = f"the input '{self.program.input_names[i]}'"
        for name, p in module.named_parameters():
            self._bind(p, ("p", name))
            self.owned[id(p)] = f"the parameter '{name}'"
        for name, b in module.named_buffers():
            self._bind(b, ("p", name))
            self.owned[id(b)] = f"the buffer '{name}'"
        self.place = {key: self.refs[key] for key in self.owned}  # the ref of each one's own place
        self.autocast_at_start = autocast_state() is not None  # the call's own (jit.py refuses it without the engine's transform)
        self.detached = set()  # refs that carry no gradient (made while grad was disabled)
        # refs of values computed from Python's values alone (torch.tensor(std), then std == 0): the
        # same at every call of an entry, whose key holds those values, so reading one into Python
        # (`if (std == 0).any():`, torchvision's Normalize) reads a constant of the recording
        self.constant_refs = set()
        self.detached_of = {}  # ref -> the ref of its ltorch.detach
        self.dropout_sites = 0
        self.location = None
        self.in_getitem = False
        self.in_call = 0  # depth of __torch_function__ (torch's own code runs inside, unrecorded)
        self.unseen = {}  # id -> (tensor, ATen operator) of what operators outside any torch call made
        self.unseen_detach = False  # whether one read a detach's output under grad (TorchScript's differentiable graph)
        self.inner_error = None  # an error raised while recording an operator TorchScript dispatched
        self.restore_after = {}  # id -> (tensor, its value before the recording wrote into it)
        self.recomputed_blocks = []  # (function, args, kwargs) of checkpointed blocks that wrote buffers
        # tensors written by calls besides their output (batch_norm's statistics, which torch 1.13
        # writes without a new version), counted
        self.side_writes = 0
        self.kept_histories = []  # (file, line) of each in-place write under no_grad that _keep_histories followed
        self.had_history = set()  # ids of those of them that had a grad_fn before the recording
        self.left_the_graph = {}  # id -> grad_fn of those of them the recording's eager graph reached (detached after it)
        self.view_of = {}  # id of a view an ATen operator made -> (its base, the operator, its arguments)
        self.data_of = {}  # id of a tensor's `.data` -> the tensor
        self.outer_frame = None  # record()'s frame: the user's frames of the forward are below it
        self.differentiable = True  # whether the call was made with grad (without, nothing is differentiated)
        self.user_code = {}  # code object of a user's frame the forward ran -> its globals
        self._functions = functions  # closures.user_functions of the model, made when first needed

    @property
    def functions(self):
        """{code: function} of the user's functions the forward may run (closures.user_functions)."""
        if self._functions is None:
            self._functions = user_functions(self.module.modules())
        return self._functions

    def _note_user_code(self):
        """Adds the code objects of the user's frames between this call and record() to `user_code`
        (code -> its globals), whose number, bool and string globals the entry is watched on."""
        f = sys._getframe(2)
        while f is not None and f is not self.outer_frame:
            if f.f_code not in self.user_code and not _code_in(f.f_code, _SKIP_DIRS):
                self.user_code[f.f_code] = f.f_globals
            f = f.f_back

    def _bind(self, t, ref):
        self.refs[id(t)] = ref
        self.versions[id(t)] = _storage_version(t)
        self.bound_at[id(t)] = len(self.program.ops)
        self.keep.append(t)

    # -- encoding
    def ref(self, t):
        r = self.refs.get(id(t))
        if r is None:
            self._adopt(t)
            r = self.refs.get(id(t))
        if r is None:
            raise self.unsupported("a tensor made outside the recorded calls", detail=(
                f"a {str(t.dtype).replace('torch.', '')} tensor of shape {list(t.shape)} that no recorded torch call "
                "produced and that is none of the call's arguments, the module's parameters, buffers or tensor "
                "attributes, nor a global of the code that reads it; register it as a buffer (self.register_buffer) "
                "or pass it as an argument"))
        if _storage_version(t) != self.versions[id(t)] or self._rewritten_since_bound(t):
            raise self.unsupported("a read of a tensor changed in place through another view of its memory", detail=(
                "an in-place call wrote into this tensor's storage through a view or alias of it; the recording "
                "keeps each tensor's own value, so this read would see the old one: use out-of-place calls "
                "(y = x + 1 instead of x.add_(1)) where a view of the tensor is still read"))
        return r

    def _rewritten_since_bound(self, t):
        """Whether another tensor over t's memory was written in place (an ATen operator recorded out
        of place) after t's value was bound: views that do not share a version counter (unsafe_split)."""
        if not self.rewritten or t.device.type == "meta":
            return False
        ptr, lo, hi = memory_span(t)
        bound = self.bound_at.get(id(t), 0)
        return any(writer != id(t) and bound <= at and w_ptr == ptr and w_lo < hi and lo < w_hi
                   for (w_ptr, w_lo, w_hi), (writer, at) in self.rewritten.items())

    def enc(self, x, detach=False):
        """The recorder's encoding of an argument (see module.cpp's arg_of); with `detach`, a
        floating tensor that may carry a gradient is read through ltorch.detach."""
        if isinstance(x, _Encoded):
            return x.value
        if isinstance(x, torch.Tensor):
            r = self.ref(x)
            if detach and x.is_floating_point() and r not in self.detached:
                r = self._detached(x, r)
            return r
        if isinstance(x, torch.dtype):
            return ("d", DTYPES[x])
        if isinstance(x, torch.device):
            return ("dev", "cpu" if x.type == "cpu" else f"{x.type}:{x.index or 0}")
        if isinstance(x, (list, tuple)) and any(isinstance(e, torch.Tensor) for e in x):
            if not all(e is None or isinstance(e, torch.Tensor) for e in x):
                raise self.unsupported("a sequence of tensors and other values")
            return ("l", [self.enc(e, detach) for e in x])
        if isinstance(x, (list, tuple)) and x and all(isinstance(e, bool) for e in x):
            return ("t", list(x))
        if isinstance(x, (list, tuple)) and any(isinstance(e, float) for e in x):
            return ("t", [float(e) for e in x])
        if isinstance(x, (list, tuple, torch.Size)):
            return [int(e) for e in x]
        if x is None or isinstance(x, (bool, int, float, str)):
            return x
        if isinstance(x, (torch.layout, torch.memory_format)):
            return ("n", str(x))  # torch.strided, torch.channels_last
        raise self.unsupported(f"an argument of type {type(x).__name__}")

    def _detached(self, t, r):
        if r in self.detached_of:
            return self.detached_of[r]
        slot = self._new_slot()
        self.program.ops.append(("ltorch.detach", [r], {}, [slot], self._header()))
        ref = ("v", slot)
        self.detached.add(ref)
        self.detached_of[r] = ref
        return ref

    def _new_slot(self):
        slot = self.program.num_slots
        self.program.num_slots += 1
        return slot

    def _header(self):
        file, line = self.location
        return header_of(file, line)

    def emit(self, symbol, args, outs, kwargs=None):
        """Records a call of engine symbol `symbol` ("ltorch.add"); `outs` (a tensor or a list of
        tensors) get fresh slots. The arguments are encoded first: an in-place call's output is its
        input, whose later reads take the new slot."""
        grad_off = not torch.is_grad_enabled()
        # (a copy's backward needs no value of its input: a later in-place update of it is no hazard)
        for a in pytree.tree_flatten((list(args), dict(kwargs or {})))[0] if not grad_off and symbol != "ltorch.clone" else []:
            if isinstance(a, torch.Tensor):
                self.read_ids.add(id(a))  # a read that a backward may need (one with grad off reads a detached value)
        # (a call made without grad has no backward: its reads need no ltorch.detach)
        enc_args = [self.enc(a, grad_off and self.differentiable) for a in args]
        enc_kwargs = {k: self.enc(v, grad_off and self.differentiable) for k, v in (kwargs or {}).items()}
        single = isinstance(outs, torch.Tensor)
        outs = [outs] if single else list(outs)
        of_constants = self._of_constants((list(args), dict(kwargs or {}))) and \
            not any(word in symbol for word in RANDOM_WORDS + ("philox",))
        slots = []
        for t in outs:
            slot = self._new_slot()
            slots.append(slot)
            self._bind(t, ("v", slot))
            if of_constants:
                self.constant_refs.add(("v", slot))
            if grad_off or symbol == "ltorch.detach":
                self.detached.add(("v", slot))
        self.program.ops.append((symbol, enc_args, enc_kwargs, slots, self._header()))

    def _of_constants(self, args):
        """Whether every tensor in `args` is known and computed from Python's values alone (an
        argument _Encoded, the dropout seed, is not)."""
        leaves = pytree.tree_flatten(args)[0]
        return not any(isinstance(a, _Encoded) for a in leaves) and all(
            self.refs.get(id(a)) in self.constant_refs for a in leaves if isinstance(a, torch.Tensor))

    def alias(self, out, of):
        r = self.ref(of)
        self._bind(out, r)

    def seed(self):
        """The dropout seed's reference and the next site's offset."""
        self.program.uses_seed = True
        offset = self.dropout_sites
        self.dropout_sites += 1
        return ("v", self.program.seed_slot), offset

    def unsupported(self, what, detail="", key=None, final=False):
        """The UnsupportedOp of a call; `final`: a handler's refusal that no ATen fallback may retry.
        Made inside a library (torch.nn's layers, torchvision's functions), it names the library's
        line and the user's own that called into it."""
        file, line = self.location or user_frame()
        inside = library_frame()
        if inside is None and _in_a_library(file):
            inside, (file, line) = (file, line), own_frame()
        code = linecache.getline(file, line) if line else ""
        if inside is not None and inside != (file, line):
            code_inside = linecache.getline(*inside).strip()
            detail = f"inside {shown_path(inside[0])}:{inside[1]} ({code_inside})" + (f"; {detail}" if detail else "")
        hint = _library_hint()
        if hint:
            detail = f"{detail}; {hint}" if detail else hint
        error = UnsupportedOp(what, f"{shown_path(file)}:{line}", code, ALTERNATIVES.get(key or "", []), detail)
        error.final = final
        return error

    # -- the mode
    def __enter__(self):
        _active.recorder = self
        _patches.enter()
        return super().__enter__()

    def __exit__(self, *exc):
        _active.recorder = None
        _patches.exit()
        return super().__exit__(*exc)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        # Inside, the mode is off: what torch's own code indexes is part of this call, not recorded.
        self.in_call += 1
        try:
            return self._torch_function(func, types, args, kwargs)
        finally:
            self.in_call -= 1

    def _torch_function(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        key = func_key(func)
        if key in UNKEYED_READS and not self.in_getitem and not _read_by_this_package():
            self.program.unreplayable.append(f"a read of Tensor.{key.replace('attr:', '')}, which the cache key does not hold")
        if key in PASSTHROUGH or (self.in_getitem and (key == "__getitem__" or func is _getitem)):
            return func(*args, **kwargs)
        self.location = user_frame()
        self._note_user_code()
        if key == "view_as_complex" or any(isinstance(a, torch.Tensor) and a.is_complex()
                                           for a in pytree.tree_flatten((args, kwargs))[0]):
            return self._complex_call(func, key, args, kwargs)
        if not self.autocast_at_start and autocast_state() is not None:
            raise self.unsupported("torch.autocast inside forward", detail=(
                "the engine runs the dtypes the recording saw and does not follow torch's autocast; cast "
                "explicitly (x.to(torch.bfloat16)), or apply the engine's autocast transform "
                "(thunder_viz.jit(model, transforms=['autocast'])), which runs linear layers, matmuls and attention "
                "in the low dtype and everything else in float32 (not convolutions, unlike torch.autocast)"))
        if key in ACTS_ON_AUTOGRAD:
            what, why = ACTS_ON_AUTOGRAD[key]
            raise self.unsupported(what, detail=why)
        self.refuse_value_shaped(key, args, kwargs)
        handler = HANDLERS.get(key)
        if kwargs.get("out") is not None:
            return self._fallback(func, key, args, kwargs)  # its ATen operator writes `out`, as in-place calls do
        if key in METHOD_HANDLERS and func_label(func).startswith("Tensor."):
            handler = METHOD_HANDLERS[key]  # the method takes its arguments in another order
        in_place = kwargs.get("inplace") is True
        if handler is None:
            handler = HANDLERS.get(_out_of_place(key)) if _out_of_place(key) else None
            if handler is None:
                if key in READS_DATA and not self._of_constants(args):
                    raise self.unsupported(func_label(func), key=key, detail="it reads a tensor's values into Python")
                if key in READS_DATA:
                    return func(*args, **kwargs)
                return self._fallback(func, key, args, kwargs)
            in_place = True
        if in_place and args and isinstance(args[0], torch.Tensor):
            self.ref(args[0])  # a tensor the recording knows, with its current value
            if id(args[0]) in self.owned:  # an input, parameter or buffer: the engine writes into it too
                return self._fallback(func, key, args, kwargs)
            top = self._owned_base(args[0])
            if top is not None:  # written through a view: the engine's run writes it (see _scatter_chain)
                self.restore_after.setdefault(id(top), (top, top.detach().clone()))
        # Tensors the call writes besides its output (batch_norm's running statistics): the engine's run
        # writes them, so their values before the recording are put back after it.
        written = handler.writes(*args, **kwargs) if hasattr(handler, "writes") else []
        for t in written:
            self.ref(t)
            self.restore_after.setdefault(id(t), (t, t.detach().clone()))
        self.side_writes += len(written)
        # an in-place call runs once: its ATen operators are watched, to be recorded if the handler
        # does not take the call's arguments (div_ with a rounding_mode)
        calls = _AtenCalls(self) if in_place else contextlib.nullcontext()
        try:
            with calls:
                out = func(*args, **kwargs)
        except RuntimeError as e:
            raise self.failed(func, args, kwargs, e) from e
        for t in written:
            self.versions[id(t)] = _storage_version(t)
        if in_place and args and isinstance(args[0], torch.Tensor):
            self.versions[id(args[0])] = _storage_version(args[0])  # read once more below, as the call's input
        recorded = len(self.program.ops)
        chain = self._view_chain(func, key, args[0]) if in_place and args and isinstance(args[0], torch.Tensor) else []
        history = self._histories([args[0]] + [link[1] for link in chain]) if in_place and args and \
            isinstance(args[0], torch.Tensor) else []
        try:
            try:
                handler(self, out, *args, **kwargs)
            except TypeError as e:  # arguments by a name the handler does not take (torch.flip(y, dims=...))
                raise self.unsupported(func_label(func), key=key, detail=str(e)) from e
        except UnsupportedOp as e:
            if len(self.program.ops) != recorded or getattr(e, "final", False):
                raise
            # arguments the native rule does not take (softmax's dtype, cross_entropy's weight, add's
            # alpha): the call is recorded as its ATen operators (an in-place one as those it ran), whose
            # output is the one returned
            if in_place:
                return self._record_aten_calls(func, key, args, kwargs, calls, out)
            return self._fallback(func, key, args, kwargs)
        self._scatter_chain(chain)
        self._keep_histories(history)
        if not in_place and args and isinstance(args[0], torch.Tensor):
            self.note_view(key, out, args[0])
        return out

    # -- complex numbers, as the pairs of reals torch.view_as_real gives (the engine has no complex dtype)
    def _complex_call(self, func, key, args, kwargs):
        """A call on complex tensors (Meta's llama rotary embedding: view_as_complex, a product with the
        frequencies, view_as_real), recorded on their real pairs [..., 2]: a complex tensor's reference
        is its pair's. Views and indexing act on the pair's leading dims, a product is (ac - bd, ad + bc);
        any other call on a complex tensor is refused."""
        with _outside_the_mode():
            out = func(*args, **kwargs)
        self.in_call += 1  # (torch's own indexing inside the calls below is theirs, not the user's)
        try:
            return self._complex_parts(func, key, args, out)
        finally:
            self.in_call -= 1

    def _complex_parts(self, func, key, args, out):
        this = args[0] if args else None
        if key == "view_as_complex":
            self._bind(out, self.ref(this))
        elif key == "view_as_real":
            self._bind(out, self.ref(this))
        elif key in ("view", "reshape") and len(args) >= 2:
            self._bind(out, self.ref(self._real_call(torch.Tensor.reshape, self._pair_tensor(this), [*out.shape, 2])))
        elif key == "__getitem__" and len(args) == 2:
            index = args[1] if isinstance(args[1], tuple) else (args[1],)
            if not all(isinstance(i, (int, slice)) or i is None or i is Ellipsis for i in index):
                raise self.unsupported("indexing a complex tensor with tensors", key=key)
            pair = self._pair_tensor(this)
            with _outside_the_mode():
                picked = _patches.original()(pair, index + (slice(None),))
            h_getitem(self, picked, pair, index + (slice(None),))
            self._bind(out, self.ref(picked))
        elif key in ("to", "contiguous", "detach") and out.dtype == this.dtype and out.shape == this.shape:
            self._bind(out, self.ref(this))  # (the same values: .to(device) where it is)
        elif key in ("mul", "__mul__", "__rmul__") and len(args) == 2 and all(isinstance(a, torch.Tensor) and a.is_complex() for a in args):
            a, b = (self._pair_tensor(t) for t in args)
            parts = [self._real_call(torch.Tensor.select, t, -1, k) for t in (a, b) for k in (0, 1)]
            a0, a1, b0, b1 = parts
            mul = torch.Tensor.mul
            real = self._real_call(torch.Tensor.sub, self._real_call(mul, a0, b0), self._real_call(mul, a1, b1))
            imaginary = self._real_call(torch.Tensor.add, self._real_call(mul, a0, b1), self._real_call(mul, a1, b0))
            self._bind(out, self.ref(self._real_call(torch.stack, [real, imaginary], -1)))
        else:
            raise self.unsupported(f"{func_label(func)} on a complex tensor", key=key, detail=(
                "the engine has no complex dtypes: a complex tensor is recorded as its real pair, through "
                "view_as_complex, view_as_real, view/reshape, basic indexing and a product of two complex tensors; "
                "write this step with real tensors (or keep cos and sin for a rotary embedding)"))
        return out

    def _pair_tensor(self, t):
        """A real tensor for complex `t`'s pair (torch.view_as_real(t)), bound to its reference (a
        complex tensor's reference is its pair's; a captured one, freqs_cis, is read as its pair)."""
        with _outside_the_mode():
            pair = torch.view_as_real(t)
        self._bind(pair, self.ref(t))
        return pair

    def _real_call(self, func, *args):
        """func(*args) on real tensors, recorded as any call of forward's is."""
        return self._torch_function(func, (), args, {})

    def _fallback(self, func, key, args, kwargs):
        """A call with no handler, recorded as ATen operators (torch.ops.aten.*: executed through the
        dispatcher, differentiated by LibTorch's autograd): a builtin that is one ATen operator as that
        operator (torch.gru -> aten.gru.input, whose decomposition LibTorch runs), anything else as the
        operators it runs below autograd. One that runs none (an assert, a query) is not recorded; one
        that yields a Python number (.item(), `if tensor:`) or a value-dependent shape is refused."""
        calls = _AtenCalls(self)
        try:
            with calls:
                out = func(*args, **kwargs)
        except RuntimeError as e:
            raise self.failed(func, args, kwargs, e) from e
        return self._record_aten_calls(func, key, args, kwargs, calls, out)

    def _record_aten_calls(self, func, key, args, kwargs, calls, out):
        """Records the ATen operators `calls` watched while func(*args, **kwargs) ran (see _fallback)."""
        for t in calls.written():  # changed in place by the operators, which the engine runs in the same order
            if id(t) in self.refs:
                self.versions[id(t)] = _storage_version(t)
        whole = _aten_overload(func, key, args, kwargs)
        for op, _, _, _ in calls.calls if whole is None or whole.__name__ not in FIXED_SHAPE else []:
            if op.__name__.split(".")[0] in DATA_DEPENDENT:
                raise self.unsupported(f"{func_label(func)}: {op} gives a shape that depends on the values", key=key,
                                       detail="data-dependent shapes are not traced")
        if whole is not None:  # the builtin is one ATen operator: record it as it was called
            self._emit_aten(func, key, whole, list(args), dict(kwargs), out)
            return out
        for op, op_args, op_kwargs, op_out in calls.calls:
            self._emit_aten(func, key, op, op_args, op_kwargs, op_out)
        leaves = [t for t in pytree.tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
        unseen = [t for t in leaves if id(t) not in self.refs]
        if unseen:  # an output the last operator made under another Python object (a view)
            last = [t for t in pytree.tree_flatten(calls.calls[-1][3])[0] if isinstance(t, torch.Tensor)] if calls.calls else []
            if len(last) != len(leaves) or any(a.shape != b.shape for a, b in zip(last, leaves)):
                raise self.unsupported(func_label(func), key=key, detail="its outputs are not what the ATen operators it ran returned")
            for t, made in zip(leaves, last):
                if id(t) not in self.refs:
                    self.alias(t, made)
        return out

    def _emit_aten(self, func, key, op, op_args, op_kwargs, op_out):
        op_args, op_kwargs = _by_schema(op._schema, list(op_args), dict(op_kwargs))
        for name, value in op_kwargs.items():
            if isinstance(value, torch.Tensor) and value.is_floating_point() and value.requires_grad:
                raise self.unsupported(f"{func_label(func)}: {op} takes a tensor that requires grad by keyword only ({name})",
                                       key=key, detail="the engine differentiates an ATen operator's positional arguments")
        outs = [o for o in pytree.tree_flatten(op_out)[0] if o is not None]
        if not any(isinstance(a, torch.Tensor) for a in pytree.tree_flatten((op_args, op_kwargs))[0]) and \
                not any(isinstance(o, torch.Tensor) for o in outs):
            return  # a query that reads no tensor (torchvision's _cuda_version at its import): nothing to record
        if not str(op).startswith("aten.") and not _shape_follows_from_metadata(op, op_args, op_kwargs, outs):
            raise self.unsupported(f"{func_label(func)}: {op} gives a shape that depends on the values", key=key,
                                   detail="run on stand-in values of the same shapes it gives other shapes "
                                          "(data-dependent shapes are not traced)")
        # (the indices, not the tensor indexed: a bool mask buffer picked by positions has a fixed shape)
        masks = [a for a in pytree.tree_flatten(op_args[1:])[0] if isinstance(a, torch.Tensor) and a.dtype in (torch.bool, torch.uint8)]
        if str(op).startswith("aten.index.") and masks:
            raise self.unsupported(f"{func_label(func)}: indexing with a bool mask", key="bool_mask",
                                   detail="its shape depends on the values; use torch.where or masked_fill")
        op_args = [self._constant(a) for a in op_args]
        op_kwargs = {k: self._constant(v) for k, v in op_kwargs.items()}
        if any(not isinstance(o, torch.Tensor) for o in outs):
            if self._of_constants((op_args, op_kwargs)):
                return  # a constant of the recording (see constant_refs): nothing to record
            raise self.unsupported(f"{func_label(func)}: a tensor's value read into Python ({op})", key=key,
                                   detail="data-dependent values and control flow are not traced")
        written = [a for a, spec in zip(op_args, op._schema.arguments)
                   if isinstance(a, torch.Tensor) and spec.alias_info is not None and spec.alias_info.is_write]
        for t in written:
            owner = self.owned.get(id(t))
            if owner is not None and "buffer" not in owner and id(t) in self.read_ids:
                # eager autograd would refuse the backward ("modified by an inplace operation"); the
                # engine would read the new value where the old one was saved
                raise self.unsupported(f"{func_label(func)}: an in-place update of {owner} after a recorded call read it",
                                       key=key, detail="update it before it is read, or compute a new tensor")
            if owner is not None and owner.startswith("the parameter") and self.data_of.get(id(t), t).requires_grad:
                # under no_grad eager changes the leaf's value and its later reads differentiate to it;
                # the trace's reads of the new value would not lead back to the parameter
                raise self.unsupported(f"{func_label(func)}: an in-place update of {owner}, which requires grad, in forward",
                                       key=key, detail="update it outside forward (after optimizer.step()), or use "
                                                       "torch.nn.utils.parametrize to compute the weight from it")
        if written and not all(id(t) in self.owned for t in written):
            # An intermediate written in place: the trace is functional, so the out-of-place twin is
            # recorded (add_ -> add, fill_ -> fill), and each base the written tensor is a view of
            # takes its new value by the view's scatter (x[0:2, 1] = v: select_scatter, then
            # slice_scatter). Later reads of other tensors over that memory are refused.
            chains = [self._view_chain(func, key, t) for t in written]
            at = len(self.program.ops)
            history = self._histories(written + [link[1] for chain in chains for link in chain])
            self._emit_functional_twin(func, key, op, op_args, op_kwargs, outs)
            for chain in chains:
                self._scatter_chain(chain)
            self._keep_histories(history)
            for t in written:
                self.rewritten[memory_span(t)] = (id(t), at)
            return
        if len(written) == 1 and len(outs) == 1 and outs[0] is written[0] and \
                (not torch.is_grad_enabled() or self.refs[id(written[0])] != self.place[id(written[0])] or
                 written[0].requires_grad):
            # Written in place again, or with grad off (which reads it through ltorch.detach): the
            # trace's value of the tensor is a computed one, which the engine does not write into.
            # The new value is computed out of place and copied into the tensor's own place.
            t = written[0]
            new = t.detach().clone()  # stands for the new value in the recording
            unread = id(t) not in self.read_ids
            is_input = self.owned[id(t)].startswith("the input")
            graded = is_input and torch.is_grad_enabled() and t.requires_grad
            if graded and id(t) not in self.inputs_written:
                # the first write into an input in the gradient's path (x.mul_(gamma)): jit.py copies
                # the new value into the caller's tensor after the call, which the operator's backward
                # must not read, so the operator reads a copy
                old = t.detach().clone()
                self.emit("ltorch.clone", [t], old)
                op_args = [old if a is t else a for a in op_args]
            self._emit_functional_twin(func, key, op, op_args, op_kwargs, new)
            if graded or id(t) in self.inputs_written:
                # eager's write is part of the caller's tensor's history: jit.py writes the new value
                # with its gradient's path (Program.rebased_inputs), the trace reads it from here on
                self.inputs_written.add(id(t))
                self._bind(t, self.refs[id(new)])
                return
            self.emit("torch.ops.aten.copy_.default", [_Encoded(self.place[id(t)]), new], t)
            if unread:  # its own update is not a read that a later update would invalidate
                self.read_ids.discard(id(t))
            if is_input:
                # an input written with grad off (or through .data) keeps its history in eager: later
                # reads differentiate to it, so the trace reads its place, which now holds the value
                self._bind(t, self.place[id(t)])
            base = self.data_of.get(id(t))
            if base is not None:  # written through `.data`: the tensor itself holds the new value
                self._bind(base, self.refs[id(t)])
            return
        unread = [id(t) for t in written if id(t) not in self.read_ids]
        rule = ATEN_RULES.get(str(op)) if not written else None
        native = None
        if rule is not None:
            native = self._as_linear(str(op), op_args, op_kwargs) or \
                rule(outs[0] if len(outs) == 1 else outs, *op_args, **op_kwargs)
        if native is not None and native[0] == "alias":
            self.alias(outs[0], native[1])
        elif native is not None and native[0] == "select":
            (a, starts, ends, strides), d = native[1], native[2]
            sliced = a.narrow(d, starts[d], 1)  # (the slice's value, for its slot: below the recording)
            self.emit("prims.slice", [a, starts, ends, strides], sliced)
            self.emit("ltorch.reshape", [sliced, list(outs[0].shape)], outs)
        elif native is not None:
            self.emit(native[0], native[1], outs, native[2] if len(native) > 2 else None)
        else:
            if written and not op._schema.name.endswith("_") and "_norm" not in op._schema.name and \
                    torch.is_grad_enabled() and any(isinstance(o, torch.Tensor) and o.requires_grad for o in outs):
                # (an observer's statistics updated by a fake-quantization operator; a norm's running
                # statistics are not: its training output reads the batch's): the fallback's
                # backward runs the operator again, which would update them again and differ
                raise self.unsupported(f"{func_label(func)}: an operator that updates {self.owned[id(written[0])]} "
                                       f"and is differentiated ({op}), with grad", key=key, detail=(
                                           "its backward would run it again on the updated values; call it under "
                                           "torch.no_grad() or in eval() (for QAT: train with eager torch)"))
            if _draw_shapes_gradient(op, op_args) and torch.is_grad_enabled() and \
                    any(isinstance(a, torch.Tensor) and a.requires_grad for a in pytree.tree_flatten(op_args)[0]):
                # the fallback's backward runs the operator again, which would draw other numbers
                raise self.unsupported(f"{func_label(func)}: an operator whose gradient depends on its random draws "
                                       f"({op}), with grad", key=key, detail=(
                                           "run it under torch.no_grad() or in eval(), or use a layer the engine has "
                                           "a rule for (nn.Dropout between stacked single-layer nn.LSTMs)"))
            self.emit("torch.ops." + str(op), op_args, outs, op_kwargs)
            if _drops_out_in_training(op, op_args):
                self.program.draws_in_ops = True  # (an LSTM's dropout between layers: no eager twin to check)
        self.read_ids.difference_update(unread)
        returns = op._schema.returns
        if len(returns) == 1 and returns[0].alias_info is not None and not returns[0].alias_info.is_write and \
                op_args and isinstance(op_args[0], torch.Tensor) and isinstance(op_out, torch.Tensor):
            self.view_of[id(op_out)] = (op_args[0], op, op_args, op_kwargs)

    def _as_linear(self, op, args, kwargs):
        """("ltorch.linear", [x, w, bias]) for aten's mm(x, w.t()) and addmm(bias, x, w.t()) (what
        F.linear becomes below a torch function with no handler: multi_head_attention_forward's
        projections), None otherwise. Recorded as the product with the transposed weight, the weight's
        gradient would come back transposed, [in, out] read as [out, in], and autograd would copy it
        into the parameter's layout at every step; linear's rule computes it in that layout."""
        if op not in ("aten.mm.default", "aten.addmm.default") or kwargs and op == "aten.mm.default":
            return None
        *bias, x, wt = args
        if op == "aten.addmm.default" and (kwargs.get("beta", 1) != 1 or kwargs.get("alpha", 1) != 1):
            return None
        view = self.view_of.get(id(wt))
        if view is None or str(view[1]) not in ("aten.t.default", "aten.transpose.int") or view[0].dim() != 2 or \
                str(view[1]) == "aten.transpose.int" and view[2][1] % 2 == view[2][2] % 2:
            return None
        w = view[0]
        if bias and (bias[0].dim() != 1 or bias[0].shape[0] != w.shape[0]):
            return None
        if not _same_floating(x, w) or bias and not _same_floating(x, bias[0]):
            return None
        return ("ltorch.linear", [x, w, bias[0] if bias else None])

    def _histories(self, tensors):
        """[(tensor, its reference)] of those that carry a gradient, when an in-place call under
        no_grad inside a differentiated forward is about to write them (see _keep_histories)."""
        if torch.is_grad_enabled() or not self.differentiable:
            return []
        return [(t, self.refs[id(t)]) for t in {id(t): t for t in tensors}.values()
                if t.requires_grad and t.is_floating_point() and id(t) in self.refs]

    def _keep_histories(self, history):
        """Eager autograd does not see an in-place write made under no_grad: the tensor keeps its
        history, and a later read is differentiated as a read of its value before the write (a
        gradient reaches the layer that made it). Its new reference is that value plus the write's
        change, the change read without gradient."""
        for t, before_ref in history:
            if self.refs.get(id(t)) == before_ref:
                continue
            self.kept_histories.append(self.location or user_frame())
            with _outside_the_mode():
                before, change = torch.empty_like(t), torch.empty_like(t)
            self._bind(before, before_ref)
            self.emit("ltorch.sub", [t, before], change)  # (grad off: both read detached)
            with torch.enable_grad():
                self.emit("ltorch.add", [before, change], t)

    def _view_chain(self, func, key, t):
        """[(view, its base, the operator, its arguments)] from the written tensor `t` up to the
        tensor its views start from, for the views the recorded ATen operators made, as far as each
        has a scatter (_SCATTERS, _WHOLE_VIEWS). A chain that starts from an input, a parameter or a
        buffer is refused: the engine does not write into the caller's or the module's tensor
        through a view."""
        chain = []
        while id(t) in self.view_of:
            base, op, args, kwargs = self.view_of[id(t)]
            if op not in ("getitem", "whole") and str(op) not in _SCATTERS and str(op).split(".")[1] not in _WHOLE_VIEWS:
                return chain  # (detach, unfold, ...): the base keeps its value; a later read of it is refused
            chain.append((t, base, op, args, kwargs))
            t = base
        owner = self.owned.get(id(t))
        if chain and owner is not None:
            why = ("a parameter is updated by the optimizer, not in forward" if owner.startswith("the parameter")
                   else "it requires grad: eager would make it part of this call's graph" if t.requires_grad
                   else "")
            if why:
                raise self.unsupported(f"{func_label(func)}: an in-place write into a view of {owner}", key=key,
                                       detail=f"{why}; compute a new tensor (x = x.clone(); x[...] = v), or write "
                                              "it under torch.no_grad() from values that do not require grad")
        return chain

    def _owned_base(self, t):
        """The input or buffer that `t` is a recorded view of (see _view_chain), or None."""
        while id(t) in self.view_of:
            t = self.view_of[id(t)][0]
        return t if id(t) in self.owned else None

    def _scatter_chain(self, chain):
        """Records the new value of each base along a written view's chain (see _view_chain). Each
        base's ref still holds its value before the write, which the scatter reads."""
        for view, base, view_op, view_args, view_kwargs in chain:
            self.versions[id(base)] = _storage_version(base)
            self._scatter_back(view, base, view_op, view_args, view_kwargs)
        top = chain[-1][1] if chain else None
        if top is not None and id(top) in self.owned:
            # a cache written through a view (llama's cache_k[:b, pos:pos + n] = k): the trace computes
            # the buffer's new value out of place and copies it into the buffer's own place, as eager
            # leaves it
            with _outside_the_mode():
                new = top.detach().clone()
            self._bind(new, self.refs[id(top)])
            self.emit("torch.ops.aten.copy_.default", [_Encoded(self.place[id(top)]), new], top)

    def _scatter_back(self, view, base, op, args, kwargs):
        """Records `base`'s value after its view `view` (op(base, *args[1:])) took a new one."""
        name = str(op)
        if name == "getitem":
            self._scatter_getitem(view, base, *args[1:])
            return
        if name in _SCATTERS:
            self.emit("torch.ops." + _SCATTERS[name], [base, view] + list(args[1:]), base, kwargs)
            return
        # A view of every element: base's dims in the view's order, or None for the same order
        order = args[1] if name == "whole" else _whole_view_order(name.split(".")[1], base.dim(), args)
        if order is None:
            self.emit("torch.ops.aten.reshape.default", [view, list(base.shape)], base)
        else:
            self.emit("torch.ops.aten.permute.default", [view, [order.index(d) for d in range(base.dim())]], base)

    def _scatter_getitem(self, view, base, start, end, strides, sliced_shape):
        """`base`'s new value after its basic-indexing view took one (see h_getitem: one slice per
        dim, then a reshape): the old value sliced dim by dim down to the view, then the new value
        scattered back up, one slice_scatter per sliced dim."""
        dims = [d for d, (s, e, st) in enumerate(zip(start, end, strides)) if (s, e, st) != (0, base.shape[d], 1)]
        with _outside_the_mode():
            sliced = view if list(view.shape) == list(sliced_shape) else view.reshape(sliced_shape)
            if not dims:
                self.emit("torch.ops.aten.reshape.default", [view, list(base.shape)], base)
                return
            if sliced is not view:
                self.emit("torch.ops.aten.reshape.default", [view, list(sliced_shape)], sliced)
            olds = [base]
            for d in dims[:-1]:
                olds.append(torch.ops.aten.slice.Tensor(olds[-1], d, start[d], end[d], strides[d]))
                self.emit("torch.ops.aten.slice.Tensor", [olds[-2], d, start[d], end[d], strides[d]], olds[-1])
            new = sliced
            for k in reversed(range(len(dims))):
                d = dims[k]
                target = base if k == 0 else olds[k].clone()
                self.emit("torch.ops.aten.slice_scatter.default", [olds[k], new, d, start[d], end[d], strides[d]], target)
                new = target

    def refuse_tensor_bounds(self, idx):
        """UnsupportedOp for an index whose slice takes a bound from a tensor (x[:, :lengths.max()]):
        torch reads its value into Python, and the trace would keep the first call's."""
        for part in idx if isinstance(idx, tuple) else (idx,):
            if isinstance(part, slice) and any(isinstance(b, torch.Tensor) for b in (part.start, part.stop, part.step)):
                raise self.unsupported("a slice bound given as a tensor", key="__index__", detail=(
                    "torch reads the bound's value into Python (a data-dependent shape), which a trace would keep "
                    "from its first call"))

    def refuse_value_shaped(self, key, args, kwargs):
        """UnsupportedOp for a call whose output shape is read from its input's values."""
        if key == "one_hot" and (args[1] if len(args) > 1 else kwargs.get("num_classes", -1)) < 0:
            raise self.unsupported("torch.nn.functional.one_hot without num_classes", key="one_hot", detail=(
                "its width is the largest class index plus one, read from the values"))

    def note_data(self, alias, t):
        """`t.data` while recording: a tensor of t's values read without gradient (ltorch.detach of
        t); an in-place write into it (a mean teacher's `pt.data.mul_(m).add_(...)`) writes t's own
        place, and later reads of t see it, as in eager."""
        if id(t) not in self.refs:
            self._adopt(t)
        r = self.refs.get(id(t))
        if r is None:
            return  # an unknown tensor: ref() refuses a read of either
        self._bind(alias, self._detached(t, r) if t.is_floating_point() and r not in self.detached else r)
        self.data_of[id(alias)] = t
        if id(t) in self.owned:
            self.owned[id(alias)] = self.owned[id(t)]
            self.place[id(alias)] = self.place[id(t)]

    def assign_data(self, t, value):
        """`t.data = value` while recording: the value copied into the parameter's or buffer's own
        place, which the engine's run writes as eager's assignment does (the recording's own
        assignment is undone afterwards)."""
        owner = self.owned.get(id(t))
        why = ("it is not a parameter or buffer of the module" if owner is None or owner.startswith("the input")
               else f"{owner} requires grad" if t.requires_grad
               else f"a recorded call read {owner} before" if id(t) in self.read_ids
               else "the value has another shape or dtype" if (value.shape, value.dtype) != (t.shape, t.dtype)
               else "")
        if why:
            raise self.unsupported("assigning Tensor.data inside forward", detail=(
                f"{why}; update it in place under torch.no_grad() (p.mul_(m).add_(q, alpha=1 - m)) or outside forward"))
        self.restore_after.setdefault(id(t), (t, t.detach().clone()))
        with _outside_the_mode():
            self.emit("torch.ops.aten.copy_.default", [_Encoded(self.place[id(t)]), value], t)
            self.read_ids.discard(id(t))

    def note_view(self, key, view, base):
        """Remembers that a handler's output `view` shares every element of `base` (a reshape,
        transpose or permute of it): a later in-place write into it gives base its new value."""
        if key not in _HANDLER_VIEWS or not isinstance(view, torch.Tensor) or view is base or \
                view.numel() != base.numel() or view.device.type == "meta" or \
                memory_span(view) != memory_span(base) or id(view) in self.view_of:
            return
        if view.is_contiguous() and base.is_contiguous():
            order = None  # the same elements in the same order
        else:
            order, free = [], [d for d in range(base.dim())]
            for size, stride in zip(view.shape, view.stride()):
                match = [d for d in free if base.shape[d] == size and (base.stride(d) == stride or size == 1)]
                if not match or view.dim() != base.dim():
                    return
                order.append(match[0])
                free.remove(match[0])
        self.view_of[id(view)] = (base, "whole", [base, order], {})

    def _emit_functional_twin(self, func, key, op, op_args, op_kwargs, outs):
        """Records in-place operator `op`'s call out of place, its new value bound to `outs`."""
        if op is torch.ops.aten.copy_.default:
            # aten.copy, copy_'s twin, has no autograd kernel in torch 2.x: the value written is the
            # source cast to the destination's dtype and broadcast to its shape
            dst, src = op_args[0], op_args[1]
            if (src.dtype, src.device) != (dst.dtype, dst.device):
                with _outside_the_mode():
                    cast = src.detach().to(dst.dtype).to(dst.device)
                self.emit("torch.ops.aten._to_copy.default", [src], cast, {"dtype": dst.dtype, "device": dst.device})
                src = cast
            self.emit("torch.ops.aten.expand_copy.default", [src, list(dst.shape)], outs)
            return
        if op is torch.ops.aten.normal_.default and op_kwargs.get("generator") is None:
            # (no out-of-place overload takes its arguments: a fresh tensor of the same draws, which
            # consume torch's generator as the fill does)
            t, mean, std = (_with_defaults(op._schema, op_args) + [None, None])[:3]
            self.emit("torch.ops.aten.normal.float_float", [float(mean), float(std), list(t.shape)], outs,
                      {"dtype": t.dtype, "device": t.device})
            return
        self.emit("torch.ops." + str(self._functional_twin(func, key, op)), _with_defaults(op._schema, op_args),
                  outs, _but_out(op_kwargs))

    def _functional_twin(self, func, key, op):
        """add_.Tensor -> add.Tensor, transpose_.default -> transpose.int, div.out -> div.Tensor: the
        out-of-place overload that takes the same argument types (but `out`)."""
        if str(op) == "aten.requires_grad_.default":
            raise self.unsupported(f"{func_label(func)}: a tensor made to require grad inside forward", key=key,
                                   detail="a gradient taken inside forward (torch.autograd.grad of an energy for "
                                          "its forces) is not traced: differentiate outside the jitted module, or "
                                          "call the module itself for that part")
        packet_name, overload = str(op).split(".")[1:3]
        packet = getattr(torch.ops.aten, packet_name[:-1], None) if packet_name.endswith("_") else None
        types = [str(a.type) for a in op._schema.arguments]
        if overload == "out" or overload.endswith("_out"):  # div.out -> div.Tensor: the same arguments but `out`
            packet, overload = getattr(torch.ops.aten, packet_name), overload[:-len("_out")] if overload != "out" else "default"
            types = [str(a.type) for a in op._schema.arguments if not (a.alias_info is not None and a.alias_info.is_write)]
        twin = None
        for name in ([overload] + list(packet.overloads())) if packet is not None else []:
            candidate = getattr(packet, name, None)
            if candidate is not None and [str(a.type) for a in candidate._schema.arguments] == types:
                twin = candidate
                break
        if twin is None or any(a.alias_info is not None and a.alias_info.is_write for a in twin._schema.arguments):
            raise self.unsupported(f"{func_label(func)}: {op} writes into a tensor in place", key=key,
                                   detail="it has no out-of-place twin the functional trace could record; "
                                          "write the computation out of place")
        return twin

    def _constant(self, x):
        """`x` with each tensor in it that the recording does not know adopted (_adopt)."""
        if isinstance(x, (list, tuple)):
            return type(x)(self._constant(e) for e in x)
        if isinstance(x, torch.Tensor) and id(x) not in self.refs:
            self._adopt(x)
        return x

    def _adopt(self, t):
        """Gives a tensor no recorded call made a reference, if it may have one: a tensor that
        existed before the call (a module's tensor attribute, a global of the code reading it) is
        captured as an input of the trace; a small one found in no such place, which torch made from
        Python values (a number it wrapped, torch.tensor([0.5, 2.0]), the list of x[[0, 2]]), is
        written into the trace as ltorch.full of each element, joined by ltorch.cat. Any other stays
        unknown, and ref() refuses it."""
        if self._capture(t) is not None:
            return
        if id(t) in self.unseen:
            raise self.computed_unseen(t)
        if not writes_as_literal(t):
            return
        if t.requires_grad:
            swapped = any("_attr_to_path" in vars(m) for m in self.module.modules()) if self.module is not None else False
            raise self.unsupported("a tensor that requires grad and is no parameter", detail=(
                f"a tensor of shape {list(t.shape)} found in no module attribute nor global: its gradient would be "
                "lost; make it an nn.Parameter of the module or pass it as an argument" + (
                    " (torch.nn.utils.stateless.functional_call's replacements are such tensors: call "
                    "functional_call on the module itself, not on the jitted one)" if swapped else "")))
        if t.dim() == 0:
            self.emit("ltorch.full", [[], t.item(), t.dtype, t.device], t)
            return
        if t.numel() == 0:  # torch.tensor([]), an accumulator that torch.cat grows
            self.emit("ltorch.full", [list(t.shape), 0, t.dtype, t.device], t)
            return
        pieces = [t.reshape(-1)[k:k + 1].clone() for k in range(t.numel())]
        for piece in pieces:
            self.emit("ltorch.full", [[1], piece.item(), t.dtype, t.device], piece)
        flat = torch.cat(pieces) if len(pieces) > 1 else pieces[0]
        if len(pieces) > 1:
            self.emit("ltorch.cat", [pieces, 0], flat)
        if flat.shape != t.shape:
            self.emit("ltorch.reshape", [flat, list(t.shape)], t)
        else:
            self.alias(t, flat)

    def computed_unseen(self, t):
        """The UnsupportedOp of a tensor an ATen operator made outside any torch call the recording saw."""
        op = self.unseen[id(t)][1]
        return self.unsupported(f"a tensor computed below the recording ({op})", detail=(
            "a TorchScript function or module (torch.jit.script, torch.jit.trace) or a C++ extension's function "
            "runs its torch calls where the recording does not see them: call the Python function or module it was "
            "made from, or register the C++ function as an operator with torch.library (a torch.ops call is recorded)"))

    def _capture(self, t):
        """The reference of `t` as a captured input of the trace (Captured), if it is a plain tensor
        attribute of one of the module's submodules or a global of a frame of the user's code on the
        stack; else None."""
        place = self._place_of(t)
        if place is None:
            return None
        table, key, name, index = place if len(place) == 4 else place + (None,)
        if t.dtype not in DTYPES and t.dtype not in (torch.complex64, torch.complex128):
            raise self.unsupported(f"the tensor '{name}' of dtype {str(t.dtype).replace('torch.', '')}", detail=(
                "the engine has no complex dtypes; keep the real and imaginary parts (or cos and sin, for rotary "
                "embeddings) as two real tensors"))
        taken = set(self.program.input_names) | {c.name for c in self.program.captured}
        while name in taken:
            name += "_"
        slot = self._new_slot()
        self.program.captured.append(Captured(name, slot, t, table, key, index))
        self._bind(t, ("v", slot))
        self.owned[id(t)] = f"the captured tensor '{name}'"
        self.place[id(t)] = ("v", slot)
        return ("v", slot)

    def parameter_assigned(self):
        return self.unsupported("a parameter or buffer assigned inside forward", detail=(
            "the jitted module reads the module's parameters and buffers as they are at the call; "
            "assign it outside forward (after optimizer.step()), or, for one that requires no grad, "
            "update it in place under torch.no_grad() (p.copy_(new))"))

    def _place_of(self, t):
        """(dict, key, a name for the trace[, index]) of where `t` lives before the call: a
        submodule's __dict__ (a plain attribute; `index`: an item of a tuple or list there), a dict
        or settings object it holds, the parameters or buffers of a module it keeps in a list or
        dict rather than as a submodule (a teacher hidden from parameters()) and the places of such a
        module as of a submodule, else a variable of the closure or the globals (or a global dict's
        entry) of the innermost frame of the user's code that holds it; None if none does. A
        parameter or buffer the forward put in place of the module's own is refused."""
        def named(*parts):
            return "_".join(p for p in parts if p).replace(".", "_")

        # the model's modules, then those it keeps in lists, tuples or dicts (and theirs in turn)
        todo = [(prefix, m, False) for prefix, m in self.module.named_modules()]
        visited = {id(m) for _, m, _ in todo}
        while todo:
            prefix, m, kept = todo.pop(0)
            for table in (m._parameters, m._buffers):
                for q, w in table.items():
                    if w is t and kept:
                        return table, q, named(prefix, q)
                    if w is t:
                        raise self.parameter_assigned()
            for cls in type(m).__mro__ if not kept else ():  # a tensor kept on the class (MASK = torch.ones(3))
                if cls is not object and not is_torchs(cls):
                    for n, v in vars(cls).items():
                        if v is t:
                            return vars(cls), n, named(prefix, cls.__name__, n)
            for n, v in vars(m).items():
                if v is t:
                    return vars(m), n, named(prefix, n)
                if type(v) in (list, tuple) and len(v) <= 64:  # normalisation constants kept as a pair
                    for i, e in enumerate(v):
                        if e is t:
                            return vars(m), n, named(prefix, n, str(i)), i
                if holds_fields(v):  # a dict (by the module's attribute and key), a settings object's fields
                    table = fields_table(v)
                    for k, e in table.items():
                        if e is t and isinstance(k, str):
                            return (vars(m), n, named(prefix, n, k), k) if type(v) is dict else \
                                (table, k, named(prefix, n, k))
                    place = _nested_place(table, t, named(prefix, n))  # (self.hist["cfg"]["ema"])
                    if place is not None:
                        return place
                if type(v) in (list, tuple, dict) and len(v) <= 1024:
                    for i, module in (v.items() if type(v) is dict else enumerate(v)):
                        for owner_name, owner in module.named_modules() if isinstance(module, torch.nn.Module) else ():
                            if id(owner) not in visited and len(visited) < 4096:
                                visited.add(id(owner))
                                todo.append((named(prefix, n, str(i), owner_name), owner, True))
        seen = set()
        f = sys._getframe(1)
        while f is not None:
            cells = closure_cells(self.functions[f.f_code]) if f.f_code in self.functions else None
            if cells is not None:  # a variable of the closure of a factory-made forward or a hook
                place = _nested_place(cells, t, "", depth=-1) or _module_place(cells, t)
                if place is not None:
                    return place
            if id(f.f_globals) not in seen and not _code_in(f.f_code, _SKIP_DIRS):
                seen.add(id(f.f_globals))
                place = _module_place({n: f.f_globals[n] for n in f.f_code.co_names if n in f.f_globals}, t)
                if place is not None:
                    return place  # a parameter of a module the code names as a global (a frozen teacher)
                for n, v in f.f_globals.items():
                    if v is t:
                        return f.f_globals, n, n
                    if type(v) in (list, tuple) and len(v) <= 64 and not n.startswith("__"):
                        for i, e in enumerate(v):  # a global list or tuple of tensors (GAINS[0])
                            if e is t:
                                return f.f_globals, n, f"{n}_{i}", i
                for n in f.f_code.co_names:  # a field of a global config module, object or class (conf.T, STATS.mean)
                    v = f.f_globals.get(n)
                    if (isinstance(v, types.ModuleType) and _users_module(v)) or \
                            (holds_fields(v) and not isinstance(v, (dict, types.ModuleType))):
                        table = vars(v) if isinstance(v, types.ModuleType) else fields_table(v)
                        for k in f.f_code.co_names:
                            if k in table and table[k] is t:
                                return table, k, f"{n}_{k}"
                    if isinstance(v, dict) and len(v) <= 256 and not (n.startswith("__") and n.endswith("__")):
                        place = _nested_place(v, t, n)  # a global dict's entry (TABLE["gain"])
                        if place is not None:
                            return place
            f = f.f_back
        return None

    def failed(self, func, args, kwargs, error):
        """torch's error of a recorded call, with where it was made and what it was given."""
        file, line = self.location
        code = linecache.getline(file, line) if line else ""
        tensors = [a for a in list(args) + list(kwargs.values()) if isinstance(a, torch.Tensor)]
        described = [f"{str(t.dtype).replace('torch.', '')}{list(t.shape)}" for t in tensors]
        floating = {t.dtype for t in tensors if t.is_floating_point()}
        hint = ""
        if len(floating) > 1:
            hint = ("The tensors have different dtypes and this call does not promote them: cast the inputs to the "
                    "parameters' dtype (e.g. x.to(torch.float32)) or the module to the inputs' (model.double())")
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return RecordedCallError(func_label(func), f"{shown_path(file)}:{line}", code, described, reason, hint)


def _module_place(table, t):
    """(the parameters' or buffers' dict, name, a name for the trace) of `t` as a parameter or buffer
    of a module held in `table` (a closure's variables, the globals a code names)."""
    for n, v in table.items():
        if isinstance(v, torch.nn.Module):
            for prefix, m in v.named_modules():
                for kind in (m._parameters, m._buffers):
                    for q, w in kind.items():
                        if w is t:
                            return kind, q, "_".join(p for p in (n, prefix, q) if p).replace(".", "_")
    return None


def _nested_place(table, t, name, depth=0):
    """(dict, key, a name for the trace[, index]) of `t` as an entry of `table` (a dict, a settings
    object's fields, a closure's variables), an item of a list or tuple there (`index`), or the same
    in a dict or settings object held there or in such a list, MAX_NESTING levels deep."""
    def named(*parts):
        return re.sub(r"\W", "_", "_".join(str(p) for p in parts if p != ""))

    nested = []
    for k, e in list(table.items())[:256]:
        if e is t:
            return table, k, named(name, k)
        if type(e) in (list, tuple) and len(e) <= 64:
            for i, item in enumerate(e):
                if item is t:
                    return table, k, named(name, k, i), i
                if holds_settings(item) and not isinstance(item, types.ModuleType):
                    nested.append((named(name, k, i), item))  # (a list of dicts)
        elif holds_settings(e) and not isinstance(e, types.ModuleType):
            nested.append((named(name, k), e))
    for inner_name, e in nested if depth < MAX_NESTING - 1 else ():
        place = _nested_place(settings_table(e), t, inner_name, depth + 1)
        if place is not None:
            return place
    return None


# A view operator -> the operator that writes a new value of the view into a copy of its base.
_SCATTERS = {"aten.slice.Tensor": "aten.slice_scatter.default", "aten.select.int": "aten.select_scatter.default",
             "aten.diagonal.default": "aten.diagonal_scatter.default"}
def _whole_view_order(packet, ndim, args):
    """The order of base's dims in the view of ATen view operator `packet` (_WHOLE_VIEWS) called with
    `args`; None where the view keeps the elements in base's order (view, alias, (un)squeeze)."""
    order = list(range(ndim))
    if packet == "transpose":
        d0, d1 = args[1] % ndim, args[2] % ndim
        order[d0], order[d1] = order[d1], order[d0]
    elif packet == "t":
        order.reverse()  # a matrix's two dims; nothing to do for a vector
    elif packet == "permute":
        order = [d % ndim for d in args[1]]
    else:
        return None
    return order


# View operators whose view holds every element of its base, undone by a reshape or a permute.
_WHOLE_VIEWS = {"view", "_unsafe_view", "alias", "unsqueeze", "squeeze", "transpose", "t", "permute"}
# Handlers whose output, when it shares its input's memory, holds every element of it.
_HANDLER_VIEWS = {"view", "reshape", "flatten", "squeeze", "unsqueeze", "transpose", "t", "attr:T", "attr:mT", "permute",
                  "view_as", "reshape_as"}

# ATen operators that the recording meets below a torch function with no handler (the mm, bmm and
# views of multi_head_attention_forward) and that an engine rule computes: recorded as that rule,
# (symbol, arguments) from (output, the operator's arguments), so the engine differentiates them with
# its own gradient instead of recomputing the operator under LibTorch's autograd; None where the rule
# does not apply (the ATen operator is recorded).
def _floating(*tensors):
    return all(t.is_floating_point() for t in tensors)


ATEN_RULES = {
    "aten.mm.default": lambda out, a, b: ("ltorch.matmul", [a, b]) if _floating(a, b) else None,
    "aten.bmm.default": lambda out, a, b: ("ltorch.matmul", [a, b]) if _floating(a, b) else None,
    "aten.addmm.default": lambda out, input, a, b, beta=1, alpha=1:
        ("ltorch.addmm", [input, a, b], {"beta": beta, "alpha": alpha}) if _floating(input, a, b) else None,
    "aten.view.default": lambda out, a, size: ("ltorch.reshape", [a, list(out.shape)]),
    # (torch 2's multi_head_attention_forward unflattens its packed projection with these)
    "aten.unsqueeze.default": lambda out, a, dim: ("ltorch.unsqueeze", [a, _dim(dim, a.dim() + 1)]),
    "aten.squeeze.dim": lambda out, a, dim: ("ltorch.reshape", [a, list(out.shape)]),
    "aten.squeeze.dims": lambda out, a, dims: ("ltorch.reshape", [a, list(out.shape)]),
    # (torch 2's multi_head_attention_forward takes q, k and v from the unflattened projection so)
    "aten.select.int": lambda out, a, dim, index: _selected(a, dim, index),
    "aten._unsafe_view.default": lambda out, a, size: ("ltorch.reshape", [a, list(out.shape)]),
    "aten.transpose.int": lambda out, a, d0, d1:
        ("ltorch.transpose", [a, _dim(d0, a.dim()), _dim(d1, a.dim())]) if a.dim() >= 2 else None,
    "aten.t.default": lambda out, a: ("ltorch.transpose", [a, 0, 1]) if a.dim() == 2 else None,
    "aten._softmax.default": lambda out, a, dim, half_to_float:
        ("ltorch.softmax", [a, _dim(dim, a.dim())]) if not half_to_float else None,
    # (two tensors of one floating dtype, neither 0-dim, or a floating tensor and a Python number:
    # no type promotion to follow)
    "aten.add.Tensor": lambda out, a, b, alpha=1:
        ("ltorch.add", [a, b]) if alpha == 1 and _same_floating(a, b) else None,
    "aten.sub.Tensor": lambda out, a, b, alpha=1:
        ("ltorch.sub", [a, b]) if alpha == 1 and _same_floating(a, b) else None,
    "aten.mul.Tensor": lambda out, a, b: ("ltorch.mul", [a, b]) if _same_floating(a, b) else None,
    "aten.div.Tensor": lambda out, a, b: ("ltorch.true_divide", [a, b]) if _same_floating(a, b) else None,
    # (a copy, never the same tensor: a buffer updated later, or the caller's input, would show through)
    "aten.clone.default": lambda out, a, memory_format=None:
        ("ltorch.clone", [a]) if memory_format in (None, torch.contiguous_format, torch.preserve_format) else None,
    "aten.hardtanh.default": lambda out, a, min_val=-1, max_val=1:
        ("ltorch.hardtanh", [a, float(min_val), float(max_val)]) if a.is_floating_point() else None,
    "aten.detach.default": lambda out, a: ("ltorch.detach", [a]) if a.is_floating_point() else ("alias", a),
    "aten.sum.dim_IntList": lambda out, a, dim, keepdim=False, dtype=None:
        ("ltorch.sum", [a, _dims(dim, a.dim()) or None, bool(keepdim)], {"dtype": None})
        if dtype is None and a.is_floating_point() else None,
    "aten.mean.dim": lambda out, a, dim, keepdim=False, dtype=None:
        ("ltorch.mean", [a, _dims(dim, a.dim()) or None, bool(keepdim)], {"dtype": None})
        if dtype is None and a.is_floating_point() else None,
    "aten.narrow.default": lambda out, a, dim, start, length: _narrowed(a, dim, start, length),
    "aten.split.Tensor": lambda outs, a, split_size, dim=0:
        ("ltorch.split", [a, split_size, _dim(dim, a.dim())]) if a.dim() > 0 and split_size > 0 else None,
}


def _selected(a, dim, index):
    """aten.select as indexing records x[..., i]: ("select", the slice's arguments), recorded as a
    prims.slice and a reshape that drops the dim."""
    if not isinstance(index, int) or a.dim() == 0:
        return None
    d = _dim(dim, a.dim())
    index = index + a.shape[d] if index < 0 else index
    sliced = _narrowed(a, d, index, 1)
    return ("select", sliced[1], d) if sliced is not None else None


def _narrowed(a, dim, start, length):
    """aten.narrow as the slice indexing records (prims.slice): its backward reads no value."""
    if not isinstance(start, int) or not isinstance(length, int) or a.dim() == 0:
        return None
    d = _dim(dim, a.dim())
    start = start + a.shape[d] if start < 0 else start
    starts, ends = [0] * a.dim(), list(a.shape)
    starts[d], ends[d] = start, start + length
    return "prims.slice", [a, starts, ends, [1] * a.dim()]


def _same_floating(a, b):
    if isinstance(b, (int, float)) and not isinstance(b, bool):
        return isinstance(a, torch.Tensor) and a.is_floating_point() and a.dim() > 0
    return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dtype == b.dtype and \
        a.is_floating_point() and a.dim() > 0 and b.dim() > 0

# The largest tensor torch makes from Python values (an index list) that is written into the trace.
MAX_CONSTANT_ELEMENTS = 64


def writes_as_literal(t):
    """Whether a tensor torch made from Python values during the call is written into the trace as a
    literal when read: a short one of a real dtype."""
    return isinstance(t, torch.Tensor) and t.numel() <= MAX_CONSTANT_ELEMENTS and t.dtype in DTYPES

# ATen operators whose output shape depends on the values: their metadata cannot be traced.
DATA_DEPENDENT = {"nonzero", "nonzero_static", "argwhere", "unique", "_unique", "_unique2", "unique_consecutive",
                  "unique_dim", "masked_select", "bincount", "histc", "repeat_interleave"}
# Overloads of those whose shape follows from the arguments: an int count of repeats.
FIXED_SHAPE = {"repeat_interleave.self_int"}


def _shape_follows_from_metadata(op, args, kwargs, outs):
    """Whether a library's operator (torchvision's) gives its outputs' shapes from its inputs'
    metadata: on meta tensors, or, where it has no meta kernel, on stand-in values (ones, zeros for
    integers), the shapes are the recorded call's (roi_align's are; nms's are not)."""
    def stand_in(device):
        def make(t):
            if not isinstance(t, torch.Tensor):
                return t
            return torch.empty(t.shape, dtype=t.dtype, device="meta") if device == "meta" else \
                (torch.ones if t.is_floating_point() else torch.zeros)(t.shape, dtype=t.dtype, device=t.device)
        return make
    for device in ("meta", "values"):
        try:
            with torch.no_grad(), _outside_the_mode():
                got = op(*pytree.tree_map(stand_in(device), list(args)), **pytree.tree_map(stand_in(device), dict(kwargs)))
        except (NotImplementedError, RuntimeError):
            continue
        got = [o for o in pytree.tree_flatten(got)[0] if o is not None]
        return len(got) == len(outs) and all(not isinstance(g, torch.Tensor) or g.shape == o.shape for g, o in zip(got, outs))
    return False


def _with_defaults(schema, args):
    """`args` with the defaults of the positional parameters after them: torch's dispatch leaves out an
    argument equal to its default (bernoulli_'s p=0.5), which the out-of-place twin may not have."""
    positional = [p for p in schema.arguments if not p.kwarg_only]
    tail = []
    for p in positional[len(args):]:
        if not p.has_default_value():
            break
        tail.append(p.default_value)
    return list(args) + tail


def _but_out(kwargs):
    return {k: v for k, v in kwargs.items() if k != "out"}


_INT_LISTS = {"List[int]", "Optional[List[int]]", "List[SymInt]", "Optional[List[SymInt]]"}


def _by_schema(schema, args, kwargs):
    """An ATen call's arguments as the engine takes them: every argument that may come by position
    by position (defaults filled in before one given by keyword: the engine's gradient of an ATen
    operator follows its positional arguments), the keyword-only ones by keyword, and a bare int
    where the schema takes a list of ints as that list (torch accepts `dim=1` for `int[1]?`)."""
    positional = [p for p in schema.arguments if not p.kwarg_only]
    last = max((i for i, p in enumerate(positional) if p.name in kwargs), default=-1)
    if last >= len(args):
        filled = list(args)
        for p in positional[len(args):last + 1]:
            if p.name in kwargs:
                filled.append(kwargs[p.name])
            elif p.has_default_value():
                filled.append(p.default_value)
            else:
                break
        else:
            kwargs = {k: v for k, v in kwargs.items() if k not in {p.name for p in positional[len(args):last + 1]}}
            args = filled
    types = {p.name: str(p.type) for p in schema.arguments}

    def as_list(value, name):
        is_int = isinstance(value, int) and not isinstance(value, bool)
        return [value] if is_int and types.get(name) in _INT_LISTS else value
    args = [as_list(a, p.name) for a, p in zip(args, schema.arguments)] + args[len(schema.arguments):]
    return args, {k: as_list(v, k) for k, v in kwargs.items()}


def _aten_overload(func, key, args, kwargs):
    """The ATen overload a builtin torch function or Tensor method is (torch.gru, Tensor.cumsum), when
    exactly one overload of the operator of its name takes these arguments; else None."""
    if not isinstance(func, (types.BuiltinFunctionType, types.MethodDescriptorType)) or key.startswith("__"):
        return None
    packet = getattr(torch.ops.aten, key, None)
    if packet is None:
        return None
    found = [op for op in (getattr(packet, name) for name in packet.overloads()) if _takes(op._schema, args, kwargs)]
    if len(found) != 1 or (key in DATA_DEPENDENT and found[0].__name__ not in FIXED_SHAPE):
        return None
    return found[0] if _in_dispatcher(found[0]) else None


def _in_dispatcher(op):
    """Whether the dispatcher has a kernel of `op` (torch.ops.aten also lists TorchScript's own
    overloads, as aten.tensor.float, which no LibTorch call can run)."""
    name, overload = op.__name__.split(".", 1) if "." in op.__name__ else (op.__name__, "default")
    try:
        return torch._C._dispatch_has_kernel(f"aten::{name}" + ("" if overload == "default" else f".{overload}"))
    except (AttributeError, RuntimeError):
        return True


def _takes(schema, args, kwargs):
    params = schema.arguments
    if len(args) > len(params) or any(p.kwarg_only for p in params[:len(args)]):
        return False
    given = {p.name: a for p, a in zip(params, args)}
    for k, v in kwargs.items():
        if k in given or k not in {p.name for p in params}:
            return False
        given[k] = v
    return all((p.name in given and _fits(str(p.type), given[p.name])) or (p.name not in given and p.has_default_value())
               for p in params)


def _fits(type_text, v):
    if type_text.startswith("Optional["):
        return v is None or _fits(type_text[len("Optional["):-1], v)
    if type_text.startswith("List["):
        item = type_text[len("List["):-1]
        if item in ("int", "SymInt") and isinstance(v, int) and not isinstance(v, bool):
            return True  # int[2] takes one int for both
        return isinstance(v, (list, tuple, torch.Size)) and all(_fits(item, e) for e in v)
    number = isinstance(v, (int, float)) and not isinstance(v, bool)
    return {
        "Tensor": isinstance(v, torch.Tensor),
        "int": (number and isinstance(v, int)) or isinstance(v, (torch.dtype, torch.layout, torch.memory_format)),
        "SymInt": number and isinstance(v, int),
        "float": number,
        "bool": isinstance(v, bool),
        "number": number or isinstance(v, bool),
        "Scalar": number or isinstance(v, bool),
        "str": isinstance(v, str),
        "ScalarType": isinstance(v, torch.dtype),
        "Layout": isinstance(v, torch.layout),
        "MemoryFormat": isinstance(v, torch.memory_format),
        "Device": isinstance(v, torch.device),
    }.get(type_text, False)


def _as_eager_calls(op, args, kwargs):
    """An operator's call as a dispatch mode runs it, as eager's: (args, kwargs) with
    _numbers_as_tensors' arguments, and the dtype eager's Python binding infers where the dispatch
    does not (torch 1.13 hands a dispatch mode `aten.full.default([2], True)` for
    `torch.full((2,), True)`, which then makes an int64 tensor where eager makes a bool one)."""
    kwargs = kwargs or {}
    if op is torch.ops.aten.full.default and len(args) > 1 and isinstance(args[1], bool) and kwargs.get("dtype") is None:
        kwargs = {**kwargs, "dtype": torch.bool}
    return _numbers_as_tensors(op, args), kwargs


def _numbers_as_tensors(op, args):
    """The arguments with a Python number where the operator's schema takes a Tensor made a 0-dim
    tensor: torch 1.13 hands a dispatch mode `aten.bitwise_or.Tensor(t, 2)` for `t | 2` (the
    wrapped number unwrapped), which the operator itself then refuses."""
    schema = getattr(op, "_schema", None)
    if schema is None or not any(isinstance(a, (bool, int, float)) for a in args):
        return args
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    device = tensors[0].device if tensors else None
    # a float as eager's wrapped double where it meets a float64 tensor (torch.tensor(0.1) is float32:
    # x * 0.1 off by float32's rounding of 0.1); elsewhere the default dtype, as a wrapped float promotes to
    double = any(t.dtype in (torch.float64, torch.complex128) for t in tensors)

    def tensor(a):
        return torch.tensor(a, device=device, dtype=torch.float64 if double and isinstance(a, float) else None)
    return [tensor(a) if isinstance(a, (bool, int, float)) and i < len(schema.arguments) and
            str(schema.arguments[i].type) == "Tensor" else a for i, a in enumerate(args)]


class _AtenCalls(TorchDispatchMode):
    """The ATen operators one torch call runs, with their arguments and outputs. Inputs and buffers
    an operator writes into (BatchNorm's running statistics) are put back after the recording, since
    the engine's own run writes them."""

    def __init__(self, recorder):
        super().__init__()
        self.recorder = recorder
        self.calls = []
        self.seen = {}  # id -> (tensor, its version before, a copy of it for the module's and caller's)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        for t in list(args) + list(kwargs.values()):
            if isinstance(t, torch.Tensor) and id(t) not in self.seen:
                # The module's and the caller's tensors that may be written into (BatchNorm's running
                # statistics, whatever the schema says; an input, also one that requires grad as a
                # result of other calls): not the parameters, which eager refuses to write into.
                # (under no_grad a leaf that requires grad may be written too: an input `x.mul_(3)`)
                keep = id(t) in self.recorder.owned and (not t.requires_grad or not t.is_leaf or
                                                         not torch.is_grad_enabled())
                self.seen[id(t)] = (t, _storage_version(t), t.detach().clone() if keep else None)
                if keep and t.grad_fn is not None:
                    self.recorder.had_history.add(id(t))
        call_args, call_kwargs = _as_eager_calls(func, args, kwargs)
        out = func(*call_args, **call_kwargs)
        self.calls.append((func, list(args), dict(kwargs), out))
        return out

    def written(self):
        """The tensors the operators wrote into (their version counters moved once the call was
        over: autograd's layer, above this mode, moves them; or, for inputs and buffers, their
        values changed); the values of those before are put back after the recording."""
        out = []
        for t, version, kept in self.seen.values():
            # torch 1.13's native_batch_norm writes the running statistics without saying so (its
            # schema has no alias annotation, the version counter stays): compare the values too.
            if _storage_version(t) != version or (kept is not None and not torch.equal(t, kept)):
                out.append(t)
                if kept is not None:
                    self.recorder.restore_after.setdefault(id(t), (t, kept))
        return out


class _UnseenCalls(TorchDispatchMode):
    """Watches the whole recorded forward for ATen operators that run outside any torch call the
    recording handles (a TorchScript function's, a C++ extension's): their outputs are remembered
    (Recorder.unseen), so that such a tensor is refused where it is read, rather than taken for a
    constant torch made from Python values."""

    def __init__(self, recorder):
        super().__init__()
        self.recorder = recorder
        self.detached = {}  # id -> the output of an aten.detach run outside any torch call

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        rec = self.recorder
        outside = not rec.in_call and not rec.in_getitem
        if outside and torch.is_grad_enabled() and rec.differentiable and \
                any(id(a) in self.detached for a in pytree.tree_flatten((args, kwargs))[0]):
            # an operator reads what a detach outside any torch call gave (TorchScript's
            # differentiable graph detaches its inputs; autograd's own detach of a saved output is
            # read by no operator)
            rec.unseen_detach = True
        try:
            call_args, call_kwargs = _as_eager_calls(func, args, kwargs)
            out = func(*call_args, **call_kwargs)
        except BaseException as e:
            if outside:  # (TorchScript's interpreter replaces it by an error without its message)
                rec.inner_error = rec.inner_error or e
            raise
        if outside:
            if func is torch.ops.aten.detach.default:
                self.detached[id(out)] = out
            for t in pytree.tree_flatten(out)[0]:
                if isinstance(t, torch.Tensor):
                    rec.unseen[id(t)] = (t, func)
        return out


def _out_of_place(key):
    """The out-of-place twin of an in-place call's name: add_ -> add, __iadd__ -> __add__; else None."""
    if key.startswith("__i") and key.endswith("__"):
        return "__" + key[3:]
    if key.endswith("_") and not key.endswith("__"):
        return key[:-1]
    return None


# ---------------------------------------------------------------- handlers

def _emits(*symbols):
    """Marks a handler with the engine symbols it records (checked against the engine's registry)."""
    def mark(h):
        h.symbols = symbols
        return h
    return mark


def _dim(d, ndim):
    return d + ndim if d < 0 else d


def _binary(name, swap=False):
    def h(rec, out, a, b, *rest, alpha=1, **kw):
        if rest or kw or alpha != 1:
            raise rec.unsupported(f"{name} with alpha/out/extra arguments")
        x, y = (b, a) if swap else (a, b)
        rec.emit("ltorch." + name, [x, y], out, {"alpha": 1} if name in ("add", "sub") else None)
    h.symbols = ("ltorch." + name,)
    return h


def _unary(name):
    def h(rec, out, a, *rest, **kw):
        rec.emit("ltorch." + name, [a], out)
    h.symbols = ("ltorch." + name,)
    return h


@_emits('ltorch.linear')
def h_linear(rec, out, input, weight, bias=None):
    rec.emit("ltorch.linear", [input, weight, bias], out)


@_emits('ltorch.matmul')
def h_matmul(rec, out, a, b):
    rec.emit("ltorch.matmul", [a, b], out)


@_emits('ltorch.matmul')
def h_rmatmul(rec, out, a, b):
    rec.emit("ltorch.matmul", [b, a], out)


@_emits('ltorch.gelu')
def h_gelu(rec, out, input, approximate="none"):
    rec.emit("ltorch.gelu", [input], out, {"approximate": approximate})


@_emits('ltorch.layer_norm')
def h_layer_norm(rec, out, input, normalized_shape, weight=None, bias=None, eps=1e-5):
    rec.emit("ltorch.layer_norm", [input, list(normalized_shape), weight, bias, float(eps)], out)


def _softmax(name):
    def h(rec, out, input, dim=None, _stacklevel=3, dtype=None):
        if dim is None or dtype is not None:
            raise rec.unsupported(f"{name} without dim or with dtype", key=name)
        rec.emit("ltorch." + name, [input, _dim(dim, input.dim())], out)
    h.symbols = ("ltorch." + name,)
    return h


@_emits('ltorch.relu')
def h_relu(rec, out, input, inplace=False):
    rec.emit("ltorch.relu", [input], out)


@_emits('ltorch.hardtanh')
def h_hardtanh(rec, out, input, min_val=-1.0, max_val=1.0, inplace=False):
    rec.emit("ltorch.hardtanh", [input, float(min_val), float(max_val)], out)


@_emits('ltorch.hardtanh')
def h_relu6(rec, out, input, inplace=False):
    rec.emit("ltorch.hardtanh", [input, 0.0, 6.0], out)


@_emits("torch.ops.aten.leaky_relu.default")
def h_rrelu(rec, out, input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False, generator=None):
    """rrelu out of training is leaky_relu with the mean of its slopes (torch 2.x runs it as an
    operator that may write its noise tensor, which the functional trace cannot record)."""
    if training:
        raise rec.unsupported("rrelu in training", key="rrelu", final=True, detail=(
            "its negative slopes are drawn from torch's generator on every call, which the engine does not "
            "replay: use leaky_relu, or call the jitted module's eval()"))
    rec.emit("torch.ops.aten.leaky_relu.default", [input, (float(lower) + float(upper)) / 2], out)


@_emits('ltorch.silu')
def h_silu(rec, out, input, inplace=False):
    rec.emit("ltorch.silu", [input], out)


@_emits('ltorch.cross_entropy')
def h_cross_entropy(rec, out, input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                    reduction="mean", label_smoothing=0.0):
    if size_average is not None or reduce is not None:
        raise rec.unsupported("cross_entropy with the legacy size_average or reduce (pass reduction=)")
    if input.dim() < 2:
        raise rec.unsupported("cross_entropy of an unbatched input (the engine takes logits [N, C, ...] and "
                              "class indices [N, ...] or class probabilities [N, C, ...])")
    keywords = {"ignore_index": int(ignore_index)}
    if weight is not None:
        keywords["weight"] = weight
    if reduction != "mean":
        keywords["reduction"] = str(reduction)
    if label_smoothing:
        keywords["label_smoothing"] = float(label_smoothing)
    rec.emit("ltorch.cross_entropy", [input, target], out, keywords)


@_emits('ltorch.embedding')
def h_embedding(rec, out, input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                sparse=False):
    if max_norm is not None:
        raise rec.unsupported("embedding with max_norm", final=True,
                              detail="max_norm renormalises the weight's rows in place during forward")
    if sparse:
        raise rec.unsupported("embedding with sparse=True", final=True,
                              detail="the engine gives dense gradients; use sparse=False (and a dense optimizer)")
    if scale_grad_by_freq:
        raise rec.unsupported("embedding with scale_grad_by_freq")  # (recorded as its ATen operator)
    if padding_idx is None:
        rec.emit("ltorch.embedding", [input, weight], out)
    else:
        # as torch.nn.functional.embedding reads it: a negative index counts from the last row
        padding_idx = int(padding_idx)
        rec.emit("ltorch.embedding", [input, weight, padding_idx + weight.shape[0] if padding_idx < 0 else padding_idx], out)


@_emits('ltorch.dropout')
def h_dropout(rec, out, input, p=0.5, training=True, inplace=False):
    if not training or p == 0:
        if out is not input:
            rec.alias(out, input)
    else:
        seed, offset = rec.seed()
        rec.emit("ltorch.dropout", [input, float(p), _Encoded(seed), True, offset], out)


@_emits('ltorch.detach')
def h_detach(rec, out, a):
    if not a.is_floating_point():
        rec.alias(out, a)
    else:
        rec.emit("ltorch.detach", [a], out)


def _reshape(name):
    def h(rec, out, a, *shape, **kw):
        rec.emit("ltorch." + name, [a, list(out.shape)], out)
    h.symbols = ("ltorch." + name,)
    return h


@_emits('ltorch.transpose')
def h_transpose(rec, out, a, d0, d1):
    n = a.dim()
    rec.emit("ltorch.transpose", [a, _dim(d0, n), _dim(d1, n)], out)


@_emits('ltorch.transpose')
def h_t(rec, out, a):
    if a.dim() < 2:
        rec.alias(out, a)
    else:
        rec.emit("ltorch.transpose", [a, 0, 1], out)


@_emits('ltorch.permute')
def h_T(rec, out, a):
    rec.emit("ltorch.permute", [a, list(reversed(range(a.dim())))], out)


@_emits('ltorch.transpose')
def h_mT(rec, out, a):
    n = a.dim()
    rec.emit("ltorch.transpose", [a, n - 2, n - 1], out)


@_emits('ltorch.permute')
def h_permute(rec, out, a, *dims):
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = dims[0]
    rec.emit("ltorch.permute", [a, [_dim(d, a.dim()) for d in dims]], out)


@_emits('ltorch.unsqueeze')
def h_unsqueeze(rec, out, a, dim):
    rec.emit("ltorch.unsqueeze", [a, _dim(dim, a.dim() + 1)], out)


@_emits('ltorch.clone')
def h_clone(rec, out, a, *args, **kw):
    """A copy, never the same tensor (a snapshot of a buffer updated later in the forward, an
    output the caller may change in place)."""
    rec.emit("ltorch.clone", [a], out)


@_emits('ltorch.clone')
def h_contiguous(rec, out, a, *args, **kw):
    if out is a:
        rec.alias(out, a)  # (already contiguous: eager returns the tensor itself)
    else:
        rec.emit("ltorch.clone", [a], out)


@_emits('ltorch.convert_element_type', 'ltorch.clone')
def h_to(rec, out, a, *args, **kw):
    if out is a:
        return
    if out.device != a.device:
        raise rec.unsupported("Tensor.to(device) inside forward", detail="move the module and inputs before jit")
    if out.dtype != a.dtype:
        rec.emit("ltorch.convert_element_type", [a, out.dtype], out)
    else:
        rec.emit("ltorch.clone", [a], out)  # (copy=True, or another memory format: eager made a new tensor)


def _cast(dtype):
    def h(rec, out, a, *args, **kw):
        if out is a:
            rec.alias(out, a)
        elif out.dtype == a.dtype:
            rec.emit("ltorch.clone", [a], out)
        else:
            rec.emit("ltorch.convert_element_type", [a, dtype], out)
    h.symbols = ("ltorch.convert_element_type", "ltorch.clone")
    return h


def _is_basic_index(idx):
    """Ints, slices, None, Ellipsis and one-element int lists (what prims.slice and a reshape record);
    a bool mask counts as basic here so that h_getitem refuses it (its shape depends on the values)."""
    items = idx if isinstance(idx, tuple) else (idx,)
    return all(i is None or i is Ellipsis or isinstance(i, (int, slice))
               or (isinstance(i, (list, tuple)) and len(i) == 1 and isinstance(i[0], int))
               or (isinstance(i, torch.Tensor) and (i.dtype == torch.bool or i.dim() == 0)) for i in items)


def _index_of(rec, i, size):
    """(start, end, stride) of one basic index along a dim of `size`."""
    if isinstance(i, bool) or (isinstance(i, torch.Tensor) and i.dtype == torch.bool):
        raise rec.unsupported("indexing with a bool mask (data-dependent shape)", key="bool_mask")
    if isinstance(i, torch.Tensor) and i.dim() == 0 and not i.is_floating_point():
        raise rec.unsupported("indexing with a tensor (its value is data)", key="__getitem__",
                              detail="index with a Python int, or use torch.index_select / gather")
    if isinstance(i, (list, tuple)) and len(i) == 1 and isinstance(i[0], int):
        k = i[0] + size if i[0] < 0 else i[0]
        return k, k + 1, 1
    if isinstance(i, int):
        k = i + size if i < 0 else i
        return k, k + 1, 1
    if isinstance(i, slice):
        start, stop, step = i.indices(size)
        return start, max(start, stop), step
    raise rec.unsupported(f"indexing with a {type(i).__name__} (advanced indexing)", key="__getitem__",
                          detail="basic indexing (ints, slices, None, ...) and one-element int lists are recorded")


@_emits("prims.slice", "ltorch.reshape")
def h_getitem(rec, out, a, idx):
    """Basic indexing as one prims.slice (start, end, stride per dim) and a reshape to the result's
    shape (an int index drops its dim, None adds one)."""
    idx = idx if isinstance(idx, tuple) else (idx,)
    if sum(i is Ellipsis for i in idx) > 1:
        raise rec.unsupported("an index with more than one Ellipsis", key="__getitem__")
    consuming = sum(1 for i in idx if i is not None and i is not Ellipsis)
    if Ellipsis not in idx:
        idx = idx + (Ellipsis,)
    expanded = []
    for i in idx:
        expanded.extend([slice(None)] * (a.dim() - consuming) if i is Ellipsis else [i])
    start, end, strides = [], [], []
    for i in (i for i in expanded if i is not None):
        s, e, st = _index_of(rec, i, a.shape[len(start)])
        start.append(s), end.append(e), strides.append(st)
    whole = all(s == 0 and e == n and st == 1 for s, e, st, n in zip(start, end, strides, a.shape))
    if whole:
        mid = a
    else:
        mid = _patches.original()(a, tuple(slice(s, e, st) for s, e, st in zip(start, end, strides)))
        rec.emit("prims.slice", [a, start, end, strides], mid)
    if tuple(mid.shape) == tuple(out.shape):
        rec.alias(out, mid)
    else:
        rec.emit("ltorch.reshape", [mid, list(out.shape)], out)
    if out is not a and out.device.type != "meta" and out._base is not None and a.is_contiguous() and \
            memory_span(out)[0] == memory_span(a)[0] and id(out) not in rec.view_of:
        rec.view_of[id(out)] = (a, "getitem", [a, start, end, strides, list(mid.shape)], {})


@_emits("ltorch.arange", "prims.iota")
def h_arange(rec, out, *args, **kw):
    """arange(end), arange(start, end[, step]), by position or keyword: prims.iota of the result's length."""
    if kw.get("requires_grad"):
        raise rec.unsupported("torch.arange with requires_grad")
    start, end, step = (0, args[0], 1) if len(args) == 1 else (tuple(args) + (1,))[:3] if args else (0, None, 1)
    start, step = kw.get("start", start), kw.get("step", step)
    if out.dtype == torch.int64 and start == 0 and step == 1:
        rec.emit("ltorch.arange", [out.numel(), out.device], out)
    else:
        number = int if not out.is_floating_point() else float
        rec.emit("prims.iota", [out.numel(), number(start), number(step), out.device, out.dtype], out)


@_emits("ltorch.convert_element_type")
def h_type_as(rec, out, a, other):
    _cast(other.dtype)(rec, out, a)


@_emits('ltorch.split')
def h_split(rec, out, a, split_size_or_sections, dim=0):
    if not isinstance(split_size_or_sections, int):
        raise rec.unsupported("split with a list of sections", key="narrow")
    rec.emit("ltorch.split", [a, split_size_or_sections, _dim(dim, a.dim())], list(out))


@_emits('ltorch.split')
def h_chunk(rec, out, a, chunks, dim=0):
    d = _dim(dim, a.dim())
    size = -(-a.shape[d] // chunks)
    rec.emit("ltorch.split", [a, size, d], list(out))


@_emits('ltorch.amax', 'ltorch.cat')
def h_cat(rec, out, tensors, dim=0):
    # torch skips a 1-d tensor of no elements beside tensors of more dims (an accumulator that starts
    # as torch.tensor([])); one that is all of them gives that empty tensor
    kept = [t for t in tensors if not (t.dim() == 1 and t.numel() == 0)] or list(tensors)[:1]
    if len(kept) == 1 and kept[0].shape == out.shape:
        rec.emit("ltorch.clone", [kept[0]], out)
        return
    rec.emit("ltorch.cat", [kept, _dim(dim, kept[0].dim())], out)


def _dims(dim, ndim):
    """A reduction's dims as a list; [] for every dim."""
    if dim is None:
        return []
    if isinstance(dim, int):
        return [_dim(dim, ndim)]
    return [_dim(d, ndim) for d in dim]


def _reduction(name):
    def h(rec, out, a, dim=None, keepdim=False, *, dtype=None):
        if dtype is not None:
            raise rec.unsupported(f"{name} with dtype")
        dims = _dims(dim, a.dim())
        if name in ("amax", "amin"):
            rec.emit("ltorch." + name, [a, dims, bool(keepdim)], out)
        else:  # as the engine's own ltorch.sum and ltorch.mean: every dim is None, dtype a keyword
            rec.emit("ltorch." + name, [a, dims or None, bool(keepdim)], out, {"dtype": None})
    h.symbols = ("ltorch." + name,)
    return h


@_emits('ltorch.where')
def h_where(rec, out, cond, a=None, b=None):
    if a is None:
        raise rec.unsupported("torch.where(cond) (data-dependent shape)")
    rec.emit("ltorch.where", [cond, a, b], out)


@_emits('ltorch.where')
def h_tensor_where(rec, out, a, cond, other):
    """Tensor.where(cond, other): torch.where(cond, self, other)."""
    rec.emit("ltorch.where", [cond, a, other], out)


@_emits('ltorch.masked_fill')
def h_masked_fill(rec, out, a, mask, value):
    if isinstance(value, torch.Tensor):
        raise rec.unsupported("masked_fill with a tensor value")
    rec.emit("ltorch.masked_fill", [a, mask, value], out)


@_emits('ltorch.full', 'ltorch.scaled_dot_product_attention')
def h_sdpa(rec, out, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, **kw):
    if dropout_p != 0.0 or scale is not None or kw:
        raise rec.unsupported("scaled_dot_product_attention with dropout_p, scale or extra arguments")
    rec.emit("ltorch.scaled_dot_product_attention", [q, k, v, attn_mask, bool(is_causal)], out)


def _creation(name):
    def h(rec, out, *args, **kw):
        if name == "full":
            fill = args[1] if len(args) > 1 else kw.get("fill_value")
            rec.emit("ltorch.full", [list(out.shape), fill, out.dtype, out.device], out)
        else:
            rec.emit("ltorch." + name, [list(out.shape), out.dtype, out.device], out)
    h.symbols = ("ltorch." + name,)
    return h


@_emits('ltorch.maximum')
def h_maximum(rec, out, a, b):
    rec.emit("ltorch.maximum", [a, b], out)


def _conv(n):
    def h(rec, out, input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        if isinstance(padding, str) and padding not in ("valid", "same"):
            raise rec.unsupported(f"conv{n}d with padding={padding!r}")
        pad = padding if isinstance(padding, str) else _ints(padding)
        if padding == "same":
            # as torch's own: half the padding each side, the odd one (an even kernel) on the right
            dilations = [dilation] * n if isinstance(dilation, int) else list(dilation)
            totals = [dl * (k - 1) for dl, k in zip(dilations, weight.shape[2:])]
            pad = [t // 2 for t in totals]
            extra = [t - 2 * (t // 2) for t in totals]
            if any(extra):
                widths = [w for e in reversed(extra) for w in (0, e)]
                with _outside_the_mode():
                    padded = torch.nn.functional.pad(input, widths)
                rec.emit("torch.ops.aten.constant_pad_nd.default", [input, widths, 0.0], padded)
                input = padded
        rec.emit(f"ltorch.conv{n}d", [input, weight, bias, _ints(stride), pad, _ints(dilation), int(groups)], out)
    h.symbols = (f"ltorch.conv{n}d",)
    return h


def _ints(v):
    return [int(x) for x in v] if isinstance(v, (list, tuple, torch.Size)) else int(v)


def _window_stride(stride):
    """A pooling stride as given, None when absent or empty (the kernel size then)."""
    return _ints(stride) if stride is not None and stride != [] and stride != () else None


def _batch_norm_writes(input, running_mean=None, running_var=None, weight=None, bias=None, training=False, *rest, **kw):
    """The running statistics a training batch_norm writes (the engine's run writes them again)."""
    return [t for t in (running_mean, running_var) if t is not None] if training else []


@_emits('ltorch.batch_norm')
def h_batch_norm(rec, out, input, running_mean=None, running_var=None, weight=None, bias=None, training=False,
                 momentum=0.1, eps=1e-5):
    if momentum is None:
        raise rec.unsupported("batch_norm with momentum=None")
    rec.emit("ltorch.batch_norm", [input, running_mean, running_var, weight, bias, bool(training), float(momentum),
                                   float(eps)], out)


h_batch_norm.writes = _batch_norm_writes


@_emits('ltorch.max_pool2d')
def h_max_pool2d(rec, out, input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                 return_indices=False):
    rec.emit("ltorch.max_pool2d", [input, _ints(kernel_size), _window_stride(stride), _ints(padding), _ints(dilation),
                                   bool(ceil_mode),
                                   bool(return_indices)], list(out) if return_indices else out)


def h_max_pool2d_with_indices(rec, out, *args, **kw):
    h_max_pool2d(rec, out, *args, **dict(kw, return_indices=True))


h_max_pool2d_with_indices.symbols = h_max_pool2d.symbols


@_emits('ltorch.avg_pool2d')
def h_avg_pool2d(rec, out, input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
    rec.emit("ltorch.avg_pool2d", [input, _ints(kernel_size), _window_stride(stride), _ints(padding), bool(ceil_mode),
                                   bool(count_include_pad), divisor_override], out)


@_emits('ltorch.adaptive_avg_pool2d')
def h_adaptive_avg_pool2d(rec, out, input, output_size):
    size = list(out.shape[-2:])
    rec.emit("ltorch.adaptive_avg_pool2d", [input, size], out)


@_emits('ltorch.clamp')
def h_clamp(rec, out, input, min=None, max=None):
    if isinstance(min, torch.Tensor) or isinstance(max, torch.Tensor):
        raise rec.unsupported("clamp with tensor bounds")
    rec.emit("ltorch.clamp", [input, min, max], out)


@_emits('ltorch.flip')
def h_flip(rec, out, input, *dims):
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = dims[0]
    rec.emit("ltorch.flip", [input, [_dim(d, input.dim()) for d in dims]], out)


def _triangle(name):
    def h(rec, out, input, diagonal=0):
        rec.emit("ltorch." + name, [input, int(diagonal)], out)
    h.symbols = ("ltorch." + name,)
    return h


@_emits('ltorch.nll_loss')
def h_nll_loss(rec, out, input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
               reduction="mean"):
    if size_average is not None or reduce is not None:
        raise rec.unsupported("nll_loss with the legacy size_average or reduce (pass reduction=)")
    if input.dim() == 1:
        raise rec.unsupported("nll_loss of one unbatched sample")  # (recorded as its ATen operators)
    rec.emit("ltorch.nll_loss", [input, target, weight, None, int(ignore_index), None, reduction], out)


@_emits('ltorch.mse_loss')
def h_mse_loss(rec, out, input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    if weight is not None or size_average is not None or reduce is not None:
        raise rec.unsupported("mse_loss with a weight or the legacy size_average/reduce")
    rec.emit("ltorch.mse_loss", [input, target, None, None, reduction], out)


def _legacy_reduction(rec, name, size_average, reduce):
    if size_average is not None or reduce is not None:
        raise rec.unsupported(f"{name} with the legacy size_average/reduce")


@functools.lru_cache(maxsize=None)
def _smooth_l1_of_beta_zero_is_l1():
    """Whether this torch's F.smooth_l1_loss computes beta=0 as l1_loss (torch 2 does; its gradient
    where the input equals the target is then abs's 0, where smooth_l1's kernel gives -1). Asked
    once, at the first such call (not at import)."""
    x = torch.zeros(1, requires_grad=True)
    torch.nn.functional.smooth_l1_loss(x, torch.zeros(1), beta=0.0).backward()
    return x.grad.item() == 0.0


@_emits('ltorch.smooth_l1_loss', 'ltorch.sub', 'ltorch.abs', 'ltorch.mean', 'ltorch.sum')
def h_smooth_l1_loss(rec, out, input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    _legacy_reduction(rec, "smooth_l1_loss", size_average, reduce)
    if beta == 0 and input.shape == target.shape and _smooth_l1_of_beta_zero_is_l1():  # as this torch's F: l1_loss
        difference = input - target
        rec.emit("ltorch.sub", [input, target], difference)
        if reduction == "none":
            rec.emit("ltorch.abs", [difference], out)
            return
        distance = difference.abs()
        rec.emit("ltorch.abs", [difference], distance)
        rec.emit("ltorch.mean" if reduction == "mean" else "ltorch.sum", [distance, None, False], out, {"dtype": None})
        return
    if input.shape != target.shape:
        raise rec.unsupported("smooth_l1_loss of an input and a target of different shapes")
    rec.emit("ltorch.smooth_l1_loss", [input, target, None, None, reduction, float(beta)], out)


@_emits('ltorch.binary_cross_entropy')
def h_binary_cross_entropy(rec, out, input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    _legacy_reduction(rec, "binary_cross_entropy", size_average, reduce)
    rec.emit("ltorch.binary_cross_entropy", [input, target, weight, None, None, reduction], out)


@_emits('ltorch.binary_cross_entropy_with_logits')
def h_binary_cross_entropy_with_logits(rec, out, input, target, weight=None, size_average=None, reduce=None,
                                       reduction="mean", pos_weight=None):
    _legacy_reduction(rec, "binary_cross_entropy_with_logits", size_average, reduce)
    rec.emit("ltorch.binary_cross_entropy_with_logits", [input, target, weight, None, None, reduction, pos_weight], out)


@_emits('ltorch.group_norm')
def h_group_norm(rec, out, input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    if input.dim() < 2 or not input.is_floating_point():
        raise rec.unsupported("group_norm of an input that is not a floating [N, C, ...] tensor")
    rec.emit("ltorch.group_norm", [input, int(num_groups), weight, bias, float(eps)], out)


_INSTANCE_NORM = ("running_mean", "running_var", "weight", "bias", "use_input_stats", "momentum", "eps")


def _instance_norm_args(input, *args, **kw):
    """F.instance_norm's arguments by name; torch.instance_norm's positional layout (weight and bias
    first, then the running statistics, ..., cudnn_enabled) is told apart by its 9 arguments."""
    if len(args) == 8:
        args = (args[2], args[3], args[0], args[1]) + tuple(args[4:7])
    given = dict(running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True, momentum=0.1,
                 eps=1e-5)
    given.update(zip(_INSTANCE_NORM, args))
    given.update({k: v for k, v in kw.items() if k in given})
    return given


def _instance_norm_writes(input, *args, **kw):
    """The running statistics instance_norm writes: LibTorch copies them back even when it normalises
    with them (use_input_stats=False), unchanged."""
    given = _instance_norm_args(input, *args, **kw)
    return [t for t in (given["running_mean"], given["running_var"]) if t is not None]


@_emits('ltorch.instance_norm')
def h_instance_norm(rec, out, input, *args, **kw):
    given = _instance_norm_args(input, *args, **kw)
    if input.dim() < 3 or not input.is_floating_point() or given["momentum"] is None:
        raise rec.unsupported("instance_norm of an input that is not a floating [N, C, ...] tensor, or momentum=None")
    rec.emit("ltorch.instance_norm", [input] + [given[k] for k in _INSTANCE_NORM[:4]] +
             [bool(given["use_input_stats"]), float(given["momentum"]), float(given["eps"])], out)


h_instance_norm.writes = _instance_norm_writes


def _conv_transpose(n):
    def h(rec, out, input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
        rec.emit(f"ltorch.conv_transpose{n}d", [input, weight, bias, _ints(stride), _ints(padding), _ints(output_padding),
                                                int(groups), _ints(dilation)], out)
    h.symbols = (f"ltorch.conv_transpose{n}d",)
    return h


def _recurrent(rec, symbol, out, input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
               batch_first):
    """torch.lstm / torch.gru on a padded (not packed) input, as ltorch.lstm / ltorch.gru."""
    directions = 2 if bidirectional else 1
    if dropout and train and num_layers > 1:
        raise rec.unsupported(f"{symbol[7:]} with dropout between layers in training (random)")
    if len(params) != num_layers * directions * (4 if has_biases else 2):
        raise rec.unsupported(f"{symbol[7:]} with a projection (proj_size)")
    if input.dim() != 3 or not input.is_floating_point():
        raise rec.unsupported(f"{symbol[7:]} of an input that is not a floating 3-D tensor")
    rec.emit(symbol, [input, hx, list(params), bool(has_biases), int(num_layers), float(dropout), bool(train),
                      bool(bidirectional), bool(batch_first)], list(out))


@_emits('ltorch.lstm')
def h_lstm(rec, out, input, hx, params, *rest):
    if not isinstance(hx, (list, tuple)) or len(rest) != 6:  # lstm(data, batch_sizes, hx, params, ...): packed
        raise rec.unsupported("lstm on a packed sequence")
    _recurrent(rec, "ltorch.lstm", out, input, list(hx), params, *rest)


@_emits('ltorch.gru')
def h_gru(rec, out, input, hx, params, *rest):
    if not isinstance(params, (list, tuple)) or len(rest) != 6:  # gru(data, batch_sizes, hx, params, ...): packed
        raise rec.unsupported("gru on a packed sequence")
    _recurrent(rec, "ltorch.gru", out, input, hx, params, *rest)


def _variance(name):
    """var/std in torch's three spellings: (dim, unbiased, keepdim), (unbiased), (dim, *, correction, keepdim)."""
    def h(rec, out, a, *args, dim=None, unbiased=None, keepdim=False, correction=None):
        if args and isinstance(args[0], bool):
            unbiased, args = args[0], args[1:]
        if args:
            dim, args = args[0], args[1:]
        if args:
            unbiased, args = args[0], args[1:]
        if args:
            keepdim, args = args[0], args[1:]
        if correction is None:
            correction = 0 if unbiased is False else 1
        if float(correction) != int(correction):
            raise rec.unsupported(f"{name} with a fractional correction")
        rec.emit("ltorch." + name, [a, _dims(dim, a.dim()), bool(keepdim)], out, {"correction": int(correction)})
    h.symbols = ("ltorch." + name,)
    return h


@_emits('ltorch.cumsum')
def h_cumsum(rec, out, a, dim, *, dtype=None):
    rec.emit("ltorch.cumsum", [a, _dim(dim, max(a.dim(), 1))], out, {"dtype": dtype})


@_emits('ltorch.roll')
def h_roll(rec, out, a, shifts, dims=None):
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    dims = None if dims is None else [dims] if isinstance(dims, int) else list(dims)
    rec.emit("ltorch.roll", [a, shifts, dims], out)


@_emits('ltorch.repeat')
def h_repeat(rec, out, a, *sizes):
    if len(sizes) == 1 and not isinstance(sizes[0], int):
        sizes = sizes[0]
    rec.emit("ltorch.repeat", [a, [int(s) for s in sizes]], out)


def _scaled_product(name):
    def h(rec, out, input, mat1, mat2, *, beta=1, alpha=1):
        rec.emit("ltorch." + name, [input, mat1, mat2], out, {"beta": beta, "alpha": alpha})
    h.symbols = ("ltorch." + name,)
    return h


@_emits('ltorch.einsum')
def h_einsum(rec, out, equation, *operands):
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise rec.unsupported("einsum in the sublist format", key="einsum")
    for spec in equation.split("->")[0].split(","):
        letters = spec.replace(".", "").replace(" ", "")
        if len(set(letters)) != len(letters):
            raise rec.unsupported("einsum with a subscript repeated within one operand (a diagonal)", key="einsum")
    rec.emit("ltorch.einsum", [equation, *operands], out)


@_emits('ltorch.normalize')
def h_normalize(rec, result, input, p=2.0, dim=1, eps=1e-12, out=None):
    if not p > 0 or out is not None:
        raise rec.unsupported("normalize with p <= 0 or out=")
    rec.emit("ltorch.normalize", [input, float(p), _dim(dim, max(input.dim(), 1)), float(eps)], result)


# ---------------------------------------------------------------- indexing

def _same_shape(a, b):
    return tuple(a.shape) == tuple(b.shape)


@_emits('ltorch.gather')
def h_gather(rec, out, input, dim, index, *, sparse_grad=False):
    if sparse_grad:
        raise rec.unsupported("gather with sparse_grad=True")
    rec.emit("ltorch.gather", [input, _dim(dim, max(input.dim(), 1)), index], out)


@_emits('ltorch.take_along_dim')
def h_take_along_dim(rec, out, input, indices, dim=None):
    if dim is None or indices.dim() != input.dim():
        raise rec.unsupported("take_along_dim without a dim or with indices of another rank")
    d = _dim(dim, input.dim())
    if any(indices.shape[k] != input.shape[k] for k in range(input.dim()) if k != d):
        raise rec.unsupported("take_along_dim with broadcast indices")
    rec.emit("ltorch.take_along_dim", [input, indices, d], out)


@_emits('ltorch.scatter_add')
def h_scatter_add(rec, out, input, dim, index, src):
    if not _same_shape(index, src):
        raise rec.unsupported("scatter_add with an index smaller than src")
    rec.emit("ltorch.scatter_add", [input, _dim(dim, max(input.dim(), 1)), index, src], out)


@_emits('ltorch.scatter')
def h_scatter(rec, out, input, dim, index, src=None, value=None, reduce=None):
    source = src if src is not None else value
    if reduce is not None:
        raise rec.unsupported("scatter with reduce")
    if isinstance(source, torch.Tensor) and not _same_shape(index, source):
        raise rec.unsupported("scatter with an index smaller than src")
    if not isinstance(source, (torch.Tensor, int, float)) or isinstance(source, bool):
        raise rec.unsupported(f"scatter with a {type(source).__name__} source")
    rec.emit("ltorch.scatter", [input, _dim(dim, max(input.dim(), 1)), index, source], out)


@_emits('ltorch.index_select')
def h_index_select(rec, out, input, dim, index):
    if index.dim() != 1:
        raise rec.unsupported("index_select with an index that is not 1-D")
    rec.emit("ltorch.index_select", [input, _dim(dim, max(input.dim(), 1)), index], out)


@_emits('ltorch.index_add')
def h_index_add(rec, out, input, dim, index, source, *, alpha=1):
    if index.dim() != 1 or source.dim() != input.dim() or isinstance(alpha, torch.Tensor):
        raise rec.unsupported("index_add with an index that is not 1-D, a source of another rank or a tensor alpha")
    rec.emit("ltorch.index_add", [input, _dim(dim, max(input.dim(), 1)), index, source], out, {"alpha": alpha})


@_emits('ltorch.index_put')
def h_index_put(rec, out, input, indices, values, accumulate=False):
    indices = list(indices)
    at = [k for k, t in enumerate(indices) if t is not None]
    if any(not isinstance(indices[k], torch.Tensor) or indices[k].dtype in (torch.bool, torch.uint8)
           or indices[k].is_floating_point() for k in at):
        raise rec.unsupported("index_put with a mask or a non-tensor index (data-dependent shape)")
    if not at or at != list(range(at[0], at[-1] + 1)) or values.dtype != input.dtype:
        raise rec.unsupported("index_put with index tensors separated by None, or values of another dtype")
    rec.emit("ltorch.index_put", [input, indices, values, bool(accumulate)], out)


@_emits('ltorch.topk')
def h_topk(rec, out, input, k, dim=-1, largest=True, sorted=True):
    if input.dim() == 0:
        raise rec.unsupported("topk of a 0-d tensor")
    rec.emit("ltorch.topk", [input, int(k), _dim(dim, input.dim()), bool(largest), bool(sorted)], list(out))


def _extreme(name):
    """torch.max / torch.min: of two tensors (maximum), of a whole tensor, or along a dim (values, indices)."""
    def h(rec, out, input, dim=None, keepdim=False, other=None):
        if isinstance(dim, torch.Tensor):
            other, dim = dim, None
        if other is not None:
            rec.emit("ltorch.maximum" if name == "max" else "ltorch.minimum", [input, other], out)
        elif dim is None:  # (not amax: its gradient splits among ties, max()'s goes to NaNs first)
            rec.emit(f"ltorch.torch_{name}", [input, None, False], out)
        elif input.dim() == 0:
            raise rec.unsupported(f"torch.{name} of a 0-d tensor along a dim", key=name)
        else:
            rec.emit(f"ltorch.torch_{name}", [input, _dim(dim, input.dim()), bool(keepdim)], list(out))
    h.symbols = (f"ltorch.torch_{name}", "ltorch.amax" if name == "max" else "ltorch.amin",
                 "ltorch.maximum" if name == "max" else "ltorch.minimum")
    return h


def _arg_extreme(name):
    def h(rec, out, input, dim=None, keepdim=False):
        if dim is None and keepdim:
            raise rec.unsupported(f"{name} with keepdim and no dim", key=name)
        d = None if dim is None else _dim(dim, max(input.dim(), 1))
        rec.emit("ltorch." + name, [input, d, bool(keepdim)], out)
    h.symbols = ("ltorch." + name,)
    return h


_LINEAR_MODES = {3: "linear", 4: "bilinear", 5: "trilinear"}


@_emits('ltorch.interpolate')
def h_interpolate(rec, out, input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                  recompute_scale_factor=None, antialias=False):
    if antialias or mode not in ("nearest", _LINEAR_MODES.get(input.dim())) or not input.is_floating_point():
        raise rec.unsupported(f"interpolate with mode={mode!r}, antialias or an integer input", key="interpolate")
    factors = None
    if scale_factor is not None and not recompute_scale_factor:
        many = isinstance(scale_factor, (list, tuple))
        factors = [float(f) for f in scale_factor] if many else [float(scale_factor)] * (input.dim() - 2)
    rec.emit("ltorch.interpolate", [input, list(out.shape[2:]), factors, mode,
                                    bool(align_corners) if mode != "nearest" else None], out)


HANDLERS = {
    "linear": h_linear,
    "matmul": h_matmul, "__matmul__": h_matmul, "__rmatmul__": h_rmatmul, "bmm": h_matmul,
    "add": _binary("add"), "__add__": _binary("add"), "__radd__": _binary("add", swap=True),
    "sub": _binary("sub"), "__sub__": _binary("sub"), "__rsub__": _binary("sub", swap=True), "subtract": _binary("sub"),
    "mul": _binary("mul"), "__mul__": _binary("mul"), "__rmul__": _binary("mul", swap=True), "multiply": _binary("mul"),
    "div": _binary("true_divide"), "true_divide": _binary("true_divide"), "__truediv__": _binary("true_divide"),
    "__rtruediv__": _binary("true_divide", swap=True), "__div__": _binary("true_divide"),
    "pow": _binary("pow"), "__pow__": _binary("pow"), "__rpow__": _binary("pow", swap=True),
    "eq": _binary("eq"), "__eq__": _binary("eq"), "ne": _binary("ne"), "__ne__": _binary("ne"),
    "lt": _binary("lt"), "__lt__": _binary("lt"), "le": _binary("le"), "__le__": _binary("le"),
    "gt": _binary("gt"), "__gt__": _binary("gt"), "ge": _binary("ge"), "__ge__": _binary("ge"),
    "maximum": h_maximum, "minimum": _binary("minimum"),
    "abs": _unary("abs"), "__abs__": _unary("abs"), "absolute": _unary("abs"), "sign": _unary("sign"),
    "sin": _unary("sin"), "cos": _unary("cos"), "reciprocal": _unary("reciprocal"),
    "bitwise_not": _unary("bitwise_not"), "__invert__": _unary("bitwise_not"),
    "clamp": h_clamp, "clip": h_clamp, "flip": h_flip, "tril": _triangle("tril"), "triu": _triangle("triu"),
    "conv1d": _conv(1), "conv2d": _conv(2), "conv3d": _conv(3), "batch_norm": h_batch_norm,
    "max_pool2d": h_max_pool2d, "_max_pool2d": h_max_pool2d, "max_pool2d_with_indices": h_max_pool2d_with_indices,
    "avg_pool2d": h_avg_pool2d, "adaptive_avg_pool2d": h_adaptive_avg_pool2d,
    "mse_loss": h_mse_loss, "nll_loss": h_nll_loss,
    "smooth_l1_loss": h_smooth_l1_loss, "binary_cross_entropy": h_binary_cross_entropy,
    "binary_cross_entropy_with_logits": h_binary_cross_entropy_with_logits,
    "group_norm": h_group_norm, "instance_norm": h_instance_norm,
    "conv_transpose1d": _conv_transpose(1), "conv_transpose2d": _conv_transpose(2), "conv_transpose3d": _conv_transpose(3),
    "lstm": h_lstm, "gru": h_gru,
    "neg": _unary("neg"), "__neg__": _unary("neg"), "negative": _unary("neg"),
    "exp": _unary("exp"), "log": _unary("log"), "tanh": _unary("tanh"), "erf": _unary("erf"),
    "rsqrt": _unary("rsqrt"), "sqrt": _unary("sqrt"), "sigmoid": _unary("sigmoid"),
    "relu": h_relu, "silu": h_silu, "gelu": h_gelu, "rrelu": h_rrelu, "hardtanh": h_hardtanh, "relu6": h_relu6,
    "layer_norm": h_layer_norm,
    "softmax": _softmax("softmax"), "log_softmax": _softmax("log_softmax"),
    "cross_entropy": h_cross_entropy, "embedding": h_embedding, "dropout": h_dropout,
    "reshape": _reshape("reshape"), "view": _reshape("view"), "flatten": _reshape("reshape"),
    "squeeze": _reshape("reshape"), "expand": _reshape("expand"),
    # `other` gives only its shape: not an input of the trace, so no gradient (eager's is None)
    "view_as": _reshape("view"), "reshape_as": _reshape("reshape"), "expand_as": _reshape("expand"),
    "transpose": h_transpose, "t": h_t, "attr:T": h_T, "attr:mT": h_mT,
    "permute": h_permute, "unsqueeze": h_unsqueeze,
    "contiguous": h_contiguous, "clone": h_clone, "detach": h_detach,
    "to": h_to, "float": _cast(torch.float32), "double": _cast(torch.float64), "half": _cast(torch.float16),
    "bfloat16": _cast(torch.bfloat16), "long": _cast(torch.int64), "int": _cast(torch.int32), "bool": _cast(torch.bool),
    "type_as": h_type_as,
    "split": h_split, "chunk": h_chunk, "cat": h_cat, "concat": h_cat,
    "sum": _reduction("sum"), "mean": _reduction("mean"), "amax": _reduction("amax"), "amin": _reduction("amin"),
    "where": h_where, "masked_fill": h_masked_fill,
    "var": _variance("var"), "std": _variance("std"), "cumsum": h_cumsum, "roll": h_roll, "repeat": h_repeat,
    "addmm": _scaled_product("addmm"), "baddbmm": _scaled_product("baddbmm"), "einsum": h_einsum,
    "normalize": h_normalize,
    "scaled_dot_product_attention": h_sdpa,
    "ones": _creation("ones"), "zeros": _creation("zeros"), "full": _creation("full"), "arange": h_arange,
    "__getitem__": h_getitem,
    "gather": h_gather, "take_along_dim": h_take_along_dim, "scatter_add": h_scatter_add, "scatter": h_scatter,
    "index_select": h_index_select, "index_add": h_index_add, "index_put": h_index_put, "topk": h_topk,
    "max": _extreme("max"), "min": _extreme("min"), "argmax": _arg_extreme("argmax"), "argmin": _arg_extreme("argmin"),
    "interpolate": h_interpolate,
}

# Tensor methods whose arguments come in another order than the torch function of the same name.
METHOD_HANDLERS = {"where": h_tensor_where}


def supported_ops():
    """The torch function names thunder_viz.jit records (and their in-place twins: add_, __iadd__)."""
    return sorted(HANDLERS)


def recorded_symbols():
    """{torch function name: the engine symbols its handler records}."""
    return {key: tuple(getattr(h, "symbols", ())) for key, h in HANDLERS.items()}


def record(module, inputs, input_names, call=None, own_inputs=False, arguments=()):
    """Runs the forward under the recorder (`call()`, by default module(*inputs)); returns (Program,
    real output). `inputs` are the call's tensors, in the order of `input_names`. The forward runs
    in the caller's grad mode (a branch on torch.is_grad_enabled() goes the caller's way; jit.py keys
    entries on it): with grad, a `torch.no_grad()` block inside forward is seen as one; without,
    every read is. Under inference mode it runs under no_grad outside it (the recording follows
    version counters, which inference tensors lack). What the forward writes in place is put back
    after it, but for the inputs where `own_inputs` (copies of the caller's made for the recording).
    `arguments` are the call's arguments: a forward that changes a list, dict or settings object
    among them (an activation appended to a list it was passed) records at every call."""
    _refuse_backward_hooks(module)
    _refuse_cumulative_batch_norms(module)
    _refuse_cached_parametrizations(module)
    _refuse_script_modules(module)
    functions = user_functions(module.modules())
    _unoptimize_scripted_functions(module, functions)
    rec = Recorder(module, inputs, input_names, functions)
    rec.outer_frame = sys._getframe()
    assignable = _assignable_state(module, functions, arguments)
    generators = _generator_states(module)
    modules = list(module.modules())
    parameters = _parameters_by_place(modules)
    try:
        grad = rec.differentiable = torch.is_grad_enabled() and not torch.is_inference_mode_enabled()
        with torch.inference_mode(False), torch.set_grad_enabled(grad):
            # (TorchScript's optimized graphs run a scripted function's calls inside an autograd node
            # of their own, under no_grad: its interpreter dispatches them one by one, as in eager)
            try:
                with rec, _UnseenCalls(rec), torch.jit.optimized_execution(False), _LookupsByName() as lookups:
                    out = call() if call is not None else module(*inputs)
            except RuntimeError as e:
                if rec.inner_error is not None and rec.inner_error is not e:
                    raise rec.inner_error from None  # (the error TorchScript's interpreter reported without it)
                raise
            if rec.unseen_detach:
                raise UnsupportedOp("a TorchScript function's optimized graph", "forward", detail=(
                    "TorchScript ran it as a graph that differentiates itself, whose calls the recording sees "
                    "detached: call the Python function it was made from, or call it from a method of the "
                    "model's classes (whose scripted functions the recording runs unoptimized)"))
    finally:
        rec.outer_frame = None  # the frame holds the recorder: no cycle keeps its tensors' graphs alive
        with torch.no_grad():
            kept = {id(t) for t in inputs} if own_inputs else set()
            for t, before in rec.restore_after.values():
                if id(t) in kept:
                    continue
                if t.grad_fn is not None and id(t) not in rec.had_history and t._base is None:
                    # written in place from a tensor that requires grad (x.mul_(gamma)), it joined the
                    # recording's graph: it leaves it, as it came
                    rec.left_the_graph[id(t)] = t.grad_fn
                    t.detach_()
                t.copy_(before)
                rec.versions[id(t)] = _storage_version(t)  # the recorder's own write: its value is still the one bound
    if _parameters_by_place(modules) != parameters:
        # replaced where the recording did not see it read as the module's (a read that follows the
        # tensor it was made from: torch 2.x's nn.Parameter(t) shares t's recorded value)
        raise rec.parameter_assigned()
    if rec.kept_histories:
        _refuse_overwritten_saved_values(rec, out)
    prog = rec.program
    prog.global_values, prog.global_objects, prog.global_absent, prog.global_sizes = \
        _global_values({**_hook_code(modules), **rec.user_code}, assignable, dict(rec.functions))
    _watch_lookups(prog, lookups.found.values())
    if not prog.python_draws and _generator_states(module) != generators:
        prog.python_draws.append("a generator whose state the forward advanced (Python's or numpy's, or one "
                                 "the module holds)")
    register_containers(out)
    leaves, prog.output_spec = pytree.tree_flatten(out)
    refs = []
    rec.output_tensors = [leaf for leaf in leaves if isinstance(leaf, torch.Tensor)]
    for i, leaf in enumerate(leaves):
        if isinstance(leaf, torch.Tensor):
            if id(leaf) not in rec.refs and id(leaf) in rec.unseen:
                raise rec.computed_unseen(leaf)
            if id(leaf) not in rec.refs:
                file, line = user_frame()
                raise UnsupportedOp("an output made by a call the recorder did not see", f"{shown_path(file)}:{line}",
                                    detail="the forward returned a tensor no recorded torch call produced")
            refs.append(rec.ref(leaf))
        elif leaf is None or isinstance(leaf, (bool, int, float, str)):
            prog.output_constants[i] = leaf
        else:
            raise UnsupportedOp(f"a forward returning a {type(leaf).__name__}", "forward",
                                detail="return tensors, or tuples, lists and dicts of tensors (None and numbers may sit beside them)")
    prog.outputs = refs
    prog.user_outputs = len(refs)
    for i, t in enumerate(inputs):
        if id(t) in rec.inputs_written and not own_inputs:
            raise UnsupportedOp(f"an in-place write in the gradient's path into the input '{prog.input_names[i]}', in a "
                                "call that passes containers or inputs that share memory", "forward", detail=(
                                    "pass the tensors by themselves (the recording then writes copies of them), or "
                                    "compute a new tensor in forward (x = x * w instead of x.mul_(w))"))
        if id(t) in rec.inputs_written:
            # written in place in the gradient's path (x.mul_(gamma)): jit.py copies this extra
            # output into the caller's tensor, which takes its history as eager's write gives it
            rec.output_tensors.append(t)
            prog.outputs.append(rec.ref(t))
            prog.rebased_inputs.append((len(prog.outputs) - 1, i))
    for function, args, kwargs in rec.recomputed_blocks:
        prog.recomputations.append((function, *pytree.tree_map(lambda v: _block_input(rec, prog, v), (list(args), kwargs))))
    _note_side_effects(rec, assignable, _assignable_state(module, functions, arguments))
    # outputs that carry no gradient in eager (y.detach(), made under no_grad, an op on those):
    # returned without autograd history
    prog.output_views = _output_views(rec.output_tensors[:prog.user_outputs])
    # an input returned as it is (`return x, f(x)`): eager's output is the caller's tensor itself
    at = {id(t): i for i, t in enumerate(inputs)}
    prog.returned_inputs = [(k, at[id(t)]) for k, t in enumerate(rec.output_tensors[:prog.user_outputs])
                            if id(t) in at]
    # a view of an input returned (`x.mul_(w); return x.view(-1)`): eager's output is a view of the
    # caller's tensor, whose later writes it shows (stand-ins keep the caller's strides and offset)
    prog.input_views = [(k, i, tuple(t.shape), t.stride(), t.storage_offset() - x.storage_offset())
                        for k, t in enumerate(rec.output_tensors[:prog.user_outputs]) if id(t) not in at
                        for i, x in enumerate(inputs) if t.requires_grad == x.requires_grad and within_output(t, x)]
    prog.output_memory = _memory_groups(rec.output_tensors[:prog.user_outputs])
    # eager's tensor of each output (or the node that made one the recording detached): jit.py reads them once
    prog.recorded_outputs = [rec.left_the_graph.get(id(t)) or t for t in rec.output_tensors]
    prog.detached_outputs = [i for i, t in enumerate(rec.output_tensors)
                             if not t.requires_grad and id(t) not in rec.left_the_graph]
    return prog, out


def _hook_code(modules):
    """{code: globals} of the forward hooks of the modules and torch's global ones that are the user's
    functions (a partial's too): such a hook runs at every call, and one that makes no torch call
    (`if ABLATE: return o * 0`) leaves no frame the recording sees, though its globals decide."""
    import torch.nn.modules.module as nn_module
    hooks = [hook for m in modules for _, _, hook in forward_hooks(m)]
    hooks += [hook for n in ("_global_forward_hooks", "_global_forward_pre_hooks") for hook in getattr(nn_module, n, {}).values()]
    found = {}
    for hook in hooks:
        fn = getattr(hook, "func", hook)  # (functools.partial)
        fn = getattr(fn, "__func__", fn)  # (a bound method)
        if isinstance(fn, types.FunctionType) and not _code_in(fn.__code__, _SKIP_DIRS):
            found[fn.__code__] = fn.__globals__
    return found


def _refuse_overwritten_saved_values(rec, out):
    """Eager's backward raises where an in-place write under no_grad changed a tensor that an
    autograd node saved (`y = lin(x).exp()`, then `y.mul_(2)`: exp saved y); the engine would
    differentiate the value before the write. The recording's own eager graph tells: reading a
    node's saved tensor raises torch's error once its version moved."""
    todo = [t.grad_fn for t in pytree.tree_flatten(out)[0] if isinstance(t, torch.Tensor) and t.grad_fn is not None]
    seen = set()
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        for name in dir(node):
            if not name.startswith("_saved_"):
                continue
            try:
                getattr(node, name)
            except RuntimeError as e:
                if "modified by an inplace operation" not in str(e):
                    continue
                file, line = rec.kept_histories[0]
                raise UnsupportedOp(
                    "an in-place write under torch.no_grad() into a tensor autograd saved for the backward",
                    f"{shown_path(file)}:{line}", linecache.getline(file, line),
                    detail=f"{type(node).__name__} saved it; eager's backward raises: {str(e).splitlines()[0]} "
                           "Write into a copy (y = y.clone() before the write), or make the change out of place "
                           "(y = y * 2)") from None
        todo += [n for n, _ in node.next_functions]


def _parameters_by_place(modules):
    """{(id(module), name): the parameter's id} of the modules' own parameters."""
    return {(id(m), n): id(p) for m in modules for n, p in m._parameters.items()}


def _generator_states(module):
    """The states of the random generators a forward may draw from outside torch: Python's and
    numpy's global ones, and the random.Random and numpy Generators the modules hold (a draw not
    seen by the patched functions, `from random import random`, shows here)."""
    numpy = sys.modules.get("numpy")
    states = [random.getstate()]
    if numpy is not None:
        _, key, pos, has_gauss, gauss = numpy.random.get_state()
        states.append((key.tobytes(), pos, has_gauss, gauss))
    for m in module.modules():
        for v in vars(m).values():
            if isinstance(v, random.Random):
                states.append(v.getstate())
            elif numpy is not None and isinstance(v, numpy.random.Generator):
                states.append(repr(v.bit_generator.state))
    return states


def _list_holder(module, lst):
    """(the __dict__, attribute) of a module or of a module's hook object that holds list `lst`, or
    None: the forward appends to the list held there at each call."""
    holders = [vars(m) for m in module.modules()]
    holders += [vars(hook) for m in module.modules() for _, _, hook in hook_objects(m) if holds_settings(hook)]
    return next(((table, n) for table in holders for n, v in table.items() if v is lst), None)


def _assignable_state(module, functions, arguments=()):
    """What a forward may change in Python (`functions`: closures.user_functions of the model, whose
    closures it may change), before or after it ran:
    - ("attr", module, name) -> value: each module's attributes;
    - ("entry", id(dict), key) -> (dict, value): the entries of the dicts the modules hold, of the
      dict globals of the user's code (the modules of the model's classes and of its hooks), and of
      the dicts a hook's closure holds (the features a hook collects);
    - ("list", id(list)) -> (list, items): the lists in those places (activations appended);
    - ("global", id(globals), name) -> (globals, value): those modules' globals, and the variables
      the closures of the user's functions hold (ClosureCells for `globals`);
    - ("argument", id(container)) -> True for each list and dict among or inside the call's
      `arguments`, a settings object's (a dataclass batch) and a UserDict's own dict included."""
    state = {}
    dicts, lists = {}, {}
    keyed = set()  # ids of the dicts whose entries jit.py's key holds (a module's dicts and settings objects)

    def contents(v, held=False, depth=0):
        """Notes the dicts and lists `v` is or holds, MAX_NESTING levels deep (a hook's store["feats"])."""
        if isinstance(v, dict) and len(v) <= 1024 and id(v) not in dicts:
            dicts[id(v)] = v
            inner = list(v.values())
        elif type(v) is list and len(v) <= 1024 and id(v) not in lists:
            lists[id(v)] = v
            inner = list(v)
        elif held and holds_settings(v) and type(v) is not dict and id(vars(v)) not in dicts:
            dicts[id(vars(v))] = vars(v)  # a config object's fields (a flag the forward toggles)
            inner = list(vars(v).values())
        else:
            return
        if held:
            keyed.add(id(dicts.get(id(v), vars(v) if holds_settings(v) and type(v) is not dict else v)))
        if depth < MAX_NESTING:
            for e in inner:
                if isinstance(e, dict) or type(e) is list or (held and holds_settings(e) and not isinstance(e, types.ModuleType)):
                    contents(e, held, depth + 1)

    code_globals = {}
    for m in module.modules():
        for n, v in vars(m).items():
            if n in ("_parameters", "_buffers", "_modules"):
                continue  # a parameter, buffer or submodule assigned is a new structure, which the next call reads
            state[("attr", m, n)] = v
            contents(v, held=True)
        for cls in type(m).__mro__:
            if not cls.__module__.split(".")[0] in ("torch", "builtins") and cls.__module__ in sys.modules:
                code_globals[cls.__module__] = vars(sys.modules[cls.__module__])
        for _, _, hook in forward_hooks(m):
            if isinstance(hook, types.FunctionType):
                code_globals[hook.__module__] = hook.__globals__
        for _, _, hook in hook_objects(m):  # a hook object's own state (SaveOutput's outputs list, a counter)
            if not holds_settings(hook):
                continue  # (a slots object: its fields are keyed, a change is a new recording)
            contents(vars(hook))
    import torch.nn.modules.module as nn_module
    for table in ("_global_forward_hooks", "_global_forward_pre_hooks"):  # torch's, run for every module
        for hook in getattr(nn_module, table, {}).values():
            hook = getattr(hook, "__func__", hook)
            if isinstance(hook, types.FunctionType):
                code_globals[hook.__module__] = hook.__globals__
    for fn in functions.values():
        cells = closure_cells(fn)
        for n, v in (cells or {}).items():  # a hook's or a factory-made forward's closure
            state[("global", id(cells), n)] = (cells, v)
            contents(v)
        # a default argument the forward changes in place (`def forward(self, x, seen=[])`)
        for item in list(fn.__defaults__ or ()) + list((fn.__kwdefaults__ or {}).values()):
            contents(item)
    for name, g in code_globals.items():
        if name.split(".")[0] in ("torch", "thunder_viz"):
            continue
        for n, v in g.items():
            if not (n.startswith("__") and n.endswith("__")):
                state[("global", id(g), n)] = (g, v)
                contents(v)
    before_arguments = set(dicts) | set(lists)
    for v in arguments:
        if isinstance(v, collections.UserDict):
            v = v.data
        elif holds_settings(v) and not isinstance(v, (dict, types.ModuleType)):
            v = vars(v)  # (a dataclass batch: its fields)
        contents(v)
    for i in (set(dicts) | set(lists)) - before_arguments:
        state[("argument", i)] = True
    for d in dicts.values():
        state[("size", id(d))] = (d, len(d))
        for k, e in d.items():
            state[("entry", id(d), k)] = (d, e, id(d) in keyed)
    for l in lists.values():
        state[("list", id(l))] = (l, tuple(l))
    return state


def _changed(old, new):
    """Whether a list's items or a dict's entry (_assignable_state's values) differ, by identity."""
    if old is GONE or new is GONE:
        return old is not new
    if isinstance(new[1], tuple) and isinstance(new[0], list):
        return len(new[1]) != len(old[1]) or any(a is not b for a, b in zip(new[1], old[1]))
    return new[1] is not old[1]


def _note_side_effects(rec, before, after):
    """The program's side effects: each attribute, dict entry or global the forward assigned and
    each list it appended to, as a SideEffect where a replay can redo it (a tensor of the trace
    becomes an extra output of the program), else a reason in `unreplayable`."""
    prog = rec.program
    watched = {(id(table), name) for table, name, _ in prog.global_values}
    read = names_read(rec.module.modules())

    def source(t):
        """A SideEffect's source for a tensor the recording knows (an output of the program for one
        the trace computes), else None."""
        if not isinstance(t, torch.Tensor) or id(t) not in rec.refs:
            return None
        ref = rec.refs[id(t)]
        if ref[0] == "p":
            return ("value", t)  # a parameter or buffer
        if ref[1] < len(prog.input_names):
            return ("input", ref[1])
        prog.outputs.append(ref)
        rec.output_tensors.append(t)
        return ("output", len(prog.outputs) - 1)

    for key in after.keys() | before.keys():
        old, new = before.get(key, GONE), after.get(key, GONE)
        kind = key[0]
        if kind in ("size", "argument"):
            continue  # (what changed it is an entry, below)
        if kind in ("list", "entry") and ("argument", key[1]) in before and _changed(old, new):
            # a container the call passed (each call passes its own): no replay reaches the next one's
            prog.unreplayable.append("a list, dict or object the call passed changed in forward")
            continue
        if kind == "list":
            if new is GONE or old is GONE or new[1] == old[1]:
                continue
            grown = new[1][:len(old[1])] == old[1]
            sources = [source(t) for t in new[1][len(old[1]):]] if grown else [None]
            if any(src is None or src[0] != "output" for src in sources):
                prog.unreplayable.append("a list changed other than by appending tensors the trace computes")
            else:
                effect = SideEffect(new[0], None, ("outputs", [k for _, k in sources]))
                # a module's list is the one its attribute holds at the call (a loop that resets
                # `model.feats = []` between steps)
                effect.holder = _list_holder(rec.module, new[0])
                prog.side_effects.append(effect)
            continue
        if kind in ("entry", "global"):
            if old is not GONE and new is not GONE and new[1] is old[1]:
                continue
            held = (new if new is not GONE else old)
            owner, name = held[0], key[2]
            # a constant set where the key looks (a module's dict or settings object, a watched global)
            # follows from the key; set elsewhere (a counter in a hook's closure) it does not
            keyed = (kind == "entry" and held[2]) or (id(owner), name) in watched
            where, new = (f"{name!r} of a dict" if kind == "entry" else f"the global {name}"), \
                (new[1] if new is not GONE else GONE)
        else:
            if new is old:
                continue
            _, owner, name = key
            where, keyed = f"{type(owner).__name__}.{name}", keyed_attribute(owner, name, read)
        src = source(new) if new is not GONE else None
        if new is GONE:
            prog.unreplayable.append(f"{where} deleted")
        elif src is not None:
            prog.side_effects.append(SideEffect(owner, name, src))
        elif is_constant(new) and keyed:
            prog.side_effects.append(SideEffect(owner, name, ("value", snapshot(new))))
        elif is_constant(new):
            prog.unreplayable.append(f"{where} set to a value the cache key does not hold")
        elif isinstance(new, torch.nn.Module) and kind == "attr":
            continue  # a submodule made once is a new structure, which the next call reads
        else:
            prog.unreplayable.append(f"{where} = a {type(new).__name__}")


def _refuse_backward_hooks(module):
    """UnsupportedOp naming a module backward hook (register_full_backward_hook, the older
    register_backward_hook, torch.nn's global ones): it runs in autograd's backward of the forward's
    tensors, which the engine's backward replaces."""
    import torch.nn.modules.module as nn_module
    found = [f"the module '{name or type(module).__name__}'" for name, m in module.named_modules()
             if getattr(m, "_backward_hooks", None) or getattr(m, "_backward_pre_hooks", None)]
    found += [f"torch.nn.modules.module.{n}" for n in ("_global_backward_hooks", "_global_backward_pre_hooks")
              if getattr(nn_module, n, None)]
    if found:
        raise UnsupportedOp("a module backward hook", found[0], detail=(
            "the engine's backward runs no module backward hook (register_full_backward_hook, register_backward_hook); "
            "register a hook on the parameters (p.register_hook) or on the jitted module's output instead"))


def _refuse_cached_parametrizations(module):
    """UnsupportedOp for a parametrized module called inside torch.nn.utils.parametrize.cached(): eager
    computes each parametrized weight once in such a block and reads it after, which a replay of the
    trace, computing it at every call, would not."""
    parametrize = sys.modules.get("torch.nn.utils.parametrize")
    if not getattr(parametrize, "_cache_enabled", 0):
        return
    for name, m in module.named_modules():
        if hasattr(m, "parametrizations"):
            raise UnsupportedOp("a parametrized module called inside torch.nn.utils.parametrize.cached()",
                                f"the module '{name or type(m).__name__}'", detail=(
                                    "eager computes its weight once in the block, the engine at every call: "
                                    "call the jitted module outside cached()"))


def _refuse_script_modules(module):
    """UnsupportedOp naming a TorchScript module among the modules (torch.jit.script or trace of a
    module): its forward is TorchScript's graph, whose calls the recording cannot follow as it
    follows a scripted function's."""
    for name, m in module.named_modules():
        if isinstance(m, torch.jit.ScriptModule):
            raise UnsupportedOp("a TorchScript module (torch.jit.script or torch.jit.trace of a module)",
                                f"the module '{name or type(m).__name__}'", detail=(
                                    "jit the Python module it was made from instead (a scripted function "
                                    "called in forward is recorded)"))


def _new_helper(value, seen):
    """Whether `value` is a function of the user's whose code is not in `seen` (then added), as long
    as fewer than 256 were seen: a helper the code of the model calls, looked into in turn."""
    if not isinstance(value, types.FunctionType) or value.__code__ in seen or len(seen) >= 256 or \
            _code_in(value.__code__, _SKIP_DIRS):
        return False
    seen.add(value.__code__)
    return True


def _unoptimize_scripted_functions(module, functions):
    """Clears the plans TorchScript made for the scripted functions the model may call: run under
    torch.jit.optimized_execution(False), as the recording runs them, each then dispatches its calls
    one by one under autograd (an optimized plan already made would run them in a graph that
    differentiates itself). Looked for: the modules' attributes, and the globals and closure
    variables the code of the model's classes and hooks names, of the user's functions that code
    names in turn, each with the items of a list, tuple or dict or the fields of an object held there."""
    def found(value, depth=0):
        if isinstance(value, torch.jit.ScriptFunction):
            value._debug_flush_compilation_cache()
        elif _new_helper(value, seen):
            todo.append(value)  # a helper of the user's that calls one
        elif depth < 2 and type(value) in (list, tuple) and len(value) <= 64:
            for item in value:
                found(item, depth + 1)
        elif depth < 2 and (isinstance(value, dict) or (holds_settings(value) and not isinstance(value, types.ModuleType))):
            for item in list(settings_table(value).values())[:64]:
                found(item, depth + 1)

    todo = list(functions.values())
    seen = {fn.__code__ for fn in todo}
    for m in module.modules():
        for value in vars(m).values():
            found(value)
    while todo:
        fn = todo.pop()
        for name in fn.__code__.co_names:
            found(fn.__globals__.get(name))
        for name, value in (closure_cells(fn) or {}).items():
            found(value)


def _refuse_cumulative_batch_norms(module):
    """UnsupportedOp naming a batch norm in training whose momentum is None: its running statistics
    are a cumulative average, whose factor it reads from num_batches_tracked into Python at every
    call, which a trace cannot hold."""
    for name, m in module.named_modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.momentum is None and m.training and \
                m.track_running_stats:
            raise UnsupportedOp(f"{type(m).__name__}(momentum=None) in training", f"the module '{name or type(m).__name__}'",
                                detail="its cumulative average reads num_batches_tracked into Python at every call: "
                                       "give it a momentum (torch's default is 0.1), or run it in eval(); "
                                       "torch.optim.swa_utils.update_bn sets momentum=None for its pass: give it the "
                                       "module the jitted one wraps (jitted.module; swa_model.module.module for an "
                                       "AveragedModel of a jitted module), which runs eagerly on the same tensors")


def _global_values(user_code, before, functions):
    """([(table, name, snapshot)], [(table, name, object)], [(dict, key)], [(dict, size)]): each value the code of the forward's frames may read from its
    globals and bake into the trace: a global constant named in its co_names (the globals and
    attributes it loads; functions aside), the constant fields named there of a global settings
    object or Python module (`config.SCALE`), and the constant entries of a global dict
    (`CFG["scale"]`); and so for the user's functions those name in turn (a helper that computes a
    number from a global and makes no torch call, so no frame of it was seen). The entry holds
    while each is as it was before the recorded forward ran (`before`: _assignable_state, where it
    looked; a forward that changes one is replayed by its side effects). The variables of the
    closures of the user's functions (`functions`: code -> function) and their default arguments
    are watched as globals are.
    Also (table, name, object) of each dict, settings object and module read so (another put in its
    place is a new recording), (dict, key) of each key the code names that such a dict lacks, and
    (dict, size) of those dicts before the call and of the hook tables of those modules (their train
    or eval mode is watched too)."""
    found, objects, absent, sizes = {}, {}, {}, {}
    todo, seen = list(user_code.items()), set(user_code)
    # the fields and keys any of that code names: a global config passed to a helper is read there
    # (`helper(CFG, y)`: CFG named by forward, CFG.mult by the helper)
    field_names, key_names = set(), set()
    keys_at_run_time = False  # whether some of that code picks a dict's entries at run time: all are watched

    def names_of(code):
        nonlocal keys_at_run_time
        field_names.update(code.co_names)
        key_names.update(k for k in code.co_consts if isinstance(k, str))
        keys_at_run_time = keys_at_run_time or _reads_keys_at_run_time(code)
        for inner in code.co_consts:
            if isinstance(inner, types.CodeType):
                names_of(inner)

    for code in user_code:
        names_of(code)

    def watch(table, name, value):
        was = before.get(("global", id(table), name), before.get(("entry", id(table), name), (None, value)))[1]
        if is_constant(was):  # a function too: a helper monkeypatched is a new recording
            found[(id(table), name)] = (table, name, snapshot(was))
        elif isinstance(was, dict) or too_many_items(was) or (holds_fields(was) and not isinstance(was, types.ModuleType)):
            found[(id(table), name)] = (table, name, DeepValue(was))  # (past MAX_NESTING, or a long list)

    def look(code, table, name, depth=0):
        """What `code` reads through `table[name]` (a global, a variable of its closure, or an entry
        or field of a dict or settings object read so, MAX_NESTING levels deep)."""
        value = table.get(name, _MISSING)
        if isinstance(value, types.FunctionType) and value.__code__ in user_code:
            functions.setdefault(value.__code__, value)  # a helper whose frame the recording saw: its defaults
        if _new_helper(value, seen):
            functions.setdefault(value.__code__, value)
            todo.append((value.__code__, value.__globals__))
            names_of(value.__code__)
        elif isinstance(value, dict):
            objects[(id(table), name)] = (table, name, value)  # a dict put in its place is a new recording
            tracked = ("size", id(value)) in before
            # its size before the call (a len() of it is a constant of the trace)
            sizes[id(value)] = (value, before[("size", id(value))][1] if tracked else len(value))
            if len(value) <= 256:  # the entries the code may name (CFG["scale"]: a constant of its code)
                named = list(value) if keys_at_run_time else [k for k in value if not isinstance(k, str) or k in key_names]
                for key in named + sorted(k for k in key_names if k not in value):
                    if (("entry", id(value), key) not in before) if tracked else (key not in value):
                        absent[(id(value), key)] = (value, key)  # cfg.get("act"): set later, a new recording
                    elif depth < MAX_NESTING - 1 and (isinstance(value[key], dict) or holds_fields(value[key])):
                        look(code, value, key, depth + 1)
                    else:
                        watch(value, key, value[key])
        elif isinstance(value, torch.nn.Module):
            objects[(id(table), name)] = (table, name, value)  # a module it calls: another is a new recording
            for m in value.modules():  # its mode, and a hook added (the model's own modules: jit.py's key)
                watch(vars(m), "training", m.training)  # (a jitted module's: its wrapped module's, modules() gives)
                for hooks in (m._forward_hooks, m._forward_pre_hooks):
                    sizes[id(hooks)] = (hooks, len(hooks))
        elif isinstance(value, types.ModuleType) and not _users_module(value):
            return  # torch, math: a library's module does not change
        elif isinstance(value, types.ModuleType) or holds_fields(value):
            if not isinstance(value, types.ModuleType):
                objects[(id(table), name)] = (table, name, value)  # CONF = Config(7): a new recording
            fields = vars(value) if isinstance(value, types.ModuleType) else fields_table(value)
            for field in field_names:
                if field in fields and depth < MAX_NESTING - 1 and (isinstance(fields[field], dict) or
                                                      (holds_fields(fields[field]) and not isinstance(fields[field], types.ModuleType))):
                    look(code, fields, field, depth + 1)
                elif field in fields:
                    watch(fields, field, fields[field])
        elif value is not _MISSING:
            watch(table, name, value)

    def look_all(code, g):
        """What `code` reads through its globals and its closure."""
        for name in code.co_names:
            look(code, g, name)
        cells = closure_cells(functions[code]) if code in functions else None
        for name in code.co_freevars if cells is not None else ():
            look(code, cells, name)

    visited, closures_seen = [], set()
    while todo:
        code, g = todo.pop()
        visited.append((code, g))
        if code in functions:
            closures_seen.add(code)
        look_all(code, g)
    for code, _ in visited:  # (once every helper the code names is known)
        defaults = function_defaults(functions[code]) if code in functions else None
        for name in defaults or ():
            watch(defaults, name, defaults[name])
    # again, once every helper and its function are known: a helper found after its caller's globals
    # were looked at (their names), a function whose frame was seen before its caller named it (its closure)
    if len(visited) > len(user_code) or any(code in functions and code not in closures_seen for code, _ in visited):
        for code, g in visited:
            look_all(code, g)
    return list(found.values()), list(objects.values()), list(absent.values()), list(sizes.values())


_MISSING = object()


@functools.lru_cache(maxsize=4096)
def _reads_keys_at_run_time(code):
    """Whether a code (not the code nested in it) subscripts with a key it computes
    (`CFG[f"scale_{k}"]`, `table[name]`, a tensor's `x[:, i]` too), calls get, pop or setdefault with
    one, or walks a container's entries (items, values, keys): which entries of a dict it names it
    reads is then known only at run time."""
    instructions = list(dis.get_instructions(code))
    for i, ins in enumerate(instructions[1:], 1):
        subscript = ins.opname == "BINARY_SUBSCR" or (ins.opname == "BINARY_OP" and ins.argrepr == "[]")  # (3.14's)
        if subscript and instructions[i - 1].opname not in ("LOAD_CONST", "LOAD_SMALL_INT"):
            return True
        if ins.opname in ("LOAD_METHOD", "LOAD_ATTR") and ins.argval in ("get", "pop", "setdefault", "__getitem__") \
                and i + 1 < len(instructions) and instructions[i + 1].opname != "LOAD_CONST":
            return True
        if ins.opname in ("LOAD_METHOD", "LOAD_ATTR") and ins.argval in ("items", "values", "keys"):
            return True
        if ins.opname == "GET_ITER" and instructions[i - 1].opname in ("LOAD_GLOBAL", "LOAD_DEREF", "LOAD_NAME"):
            return True
    return False


class _LookupsByName:
    """builtins.getattr and hasattr while the forward is recorded, noting each lookup the user's
    own code makes (not torch's, a library's or this package's): `getattr(self, f"alpha_{k}")`
    reads an attribute by a name that no code of the model spells, so jit.py's key does not hold
    it; _watch_lookups makes the program watch it as it watches a global. The builtins are
    replaced while any thread records, and note into the recordings of the thread that looks up."""

    _real = (builtins.getattr, builtins.hasattr)
    _active = 0
    _lock = threading.Lock()
    _recording = threading.local()  # .found: the innermost recording's of this thread, or absent

    def __init__(self):
        self.found = {}  # (id(object), name) -> (table, name, the value then or GONE)

    def __enter__(self):
        self._outer = self._recording.__dict__.get("found")
        self._recording.found = self.found
        with self._lock:
            if _LookupsByName._active == 0:
                builtins.getattr, builtins.hasattr = _noted_getattr, _noted_hasattr
            _LookupsByName._active += 1
        return self

    def __exit__(self, *exc):
        with self._lock:
            _LookupsByName._active -= 1
            if _LookupsByName._active == 0:
                builtins.getattr, builtins.hasattr = self._real
        self._recording.found = self._outer


_LOOKUPS_SKIP = _SKIP_DIRS + _LIBRARY_DIRS


def _note_lookup(obj, name):
    found = _LookupsByName._recording.__dict__.get("found")  # (no getattr: this is getattr)
    if found is not None and type(name) is str and (id(obj), name) not in found and \
            not _code_in(sys._getframe(2).f_code, _LOOKUPS_SKIP):
        table = _fields_looked_up(obj, name)
        if table is not None:
            found[(id(obj), name)] = (table, name, table.get(name, GONE))


def _noted_getattr(obj, name, *default):
    _note_lookup(obj, name)
    return _LookupsByName._real[0](obj, name, *default)


def _noted_hasattr(obj, name):
    _note_lookup(obj, name)
    return _LookupsByName._real[1](obj, name)


def _fields_looked_up(obj, name):
    """The table where getattr(obj, name) finds a Python value the trace may hold: a module's
    __dict__, a settings object's fields, a user's Python module's globals, or the user's class
    that holds it as a class attribute; None for anything else (a tensor, torch's objects)."""
    if isinstance(obj, types.ModuleType):
        return vars(obj) if _users_module(obj) else None
    if not (isinstance(obj, torch.nn.Module) or holds_fields(obj)):
        return None
    if isinstance(obj, torch.nn.Module) and any(name in vars(obj).get(t, ()) for t in ("_parameters", "_buffers", "_modules")):
        return None  # (a tensor or submodule: the module's structure and places, which jit.py reads)
    table = vars(obj) if isinstance(obj, torch.nn.Module) else fields_table(obj)
    if name not in table and not isinstance(obj, type):
        for cls in type(obj).__mro__:  # a class default the object does not override
            if name in vars(cls):
                return vars(cls) if not is_torchs(cls) else None
    return table


def _watch_lookups(prog, found):
    """Adds what the forward looked up by name (_LookupsByName) to the program's watched values:
    each constant as it was when first looked up, and each name then absent (hasattr false,
    getattr's default taken) with its table's size after the forward (a guard sees a field added)."""
    for table, name, value in found:
        if value is GONE:
            prog.global_absent.append((table, name))
            if isinstance(table, dict):
                prog.global_sizes.append((table, len(table)))
        elif is_constant(value):
            prog.global_values.append((table, name, snapshot(value)))


def _users_module(module):
    """Whether a Python module is the user's own (a config module), not a library's or a builtin."""
    file = getattr(module, "__file__", None)
    if not file:  # a builtin, or a module made in code (types.ModuleType)
        return module.__name__ not in sys.builtin_module_names
    return not os.path.abspath(file).startswith(_SKIP_DIRS + _LIBRARY_DIRS)


def register_containers(out):
    """Makes the dataclasses, dict subclasses (Hugging Face's ModelOutput is both) and UserDicts
    (a BatchEncoding) in an output or argument trees torch's pytree flattens and rebuilds as the
    same type, as their libraries often do themselves."""
    if isinstance(out, torch.Tensor) or out is None or isinstance(out, (bool, int, float, str)):
        return
    kind = type(out)
    if kind not in pytree.SUPPORTED_NODES:
        if dataclasses.is_dataclass(out) and not isinstance(out, type):  # ModelOutput too: None fields included
            _register_node(kind, _flatten_dataclass, functools.partial(_unflatten_dataclass, kind))
        elif isinstance(out, dict):
            _register_node(kind, lambda d: (list(d.values()), list(d.keys())),
                           lambda values, keys, kind=kind: kind(zip(keys, values)))
        elif isinstance(out, collections.UserDict):
            _register_node(kind, lambda d: (list(d.data.values()), list(d.data.keys())),
                           lambda values, keys, kind=kind: kind(dict(zip(keys, values))))
        else:
            return
    children = _flatten_dataclass(out)[0] if dataclasses.is_dataclass(out) else \
        out.values() if isinstance(out, (dict, collections.UserDict)) else out if isinstance(out, (list, tuple)) else []
    for child in children:
        register_containers(child)


def _flatten_dataclass(d):
    """A dataclass's values: a dict's items first (a ModelOutput's keys, in their order), then its
    attributes that are no key (a field that is None, one set after it was made: `out.loss = loss`,
    one __post_init__ set; a field never set, init=False, stays unset)."""
    base = _dict_base(type(d))
    keys = list(base.keys(d)) if base else []
    names = list(vars(d)) if hasattr(d, "__dict__") else [f.name for f in dataclasses.fields(d) if hasattr(d, f.name)]
    attributes = [n for n in names if n not in keys]
    return [base.__getitem__(d, k) for k in keys] + [getattr(d, n) for n in attributes], (keys, attributes)


def _unflatten_dataclass(kind, values, names):
    """The dataclass as it was made, not made again: __init__ and __post_init__ do not run (a
    ModelOutput's would put a field set after it was made among its keys)."""
    keys, attributes = names
    base = _dict_base(kind)
    d = kind.__new__(kind)
    for k, v in zip(keys, values):
        base.__setitem__(d, k, v)
    for f in dataclasses.fields(kind):
        if f.name in keys:
            object.__setattr__(d, f.name, base.__getitem__(d, f.name))
    for n, v in zip(attributes, values[len(keys):]):
        object.__setattr__(d, n, v)
    return d


def _dict_base(kind):
    """The builtin mapping a class derives from (OrderedDict keeps its own order), or None."""
    return collections.OrderedDict if issubclass(kind, collections.OrderedDict) else dict if issubclass(kind, dict) else None


def _register_node(kind, flatten, unflatten):
    register = getattr(pytree, "register_pytree_node", None)
    if register is not None:
        register(kind, flatten, unflatten)
    else:
        pytree._register_pytree_node(kind, flatten, unflatten)


def rebuild_output(prog, tensors):
    """forward's output structure again, with the engine's tensors in the recorded tensors' places."""
    if prog.output_spec.type is None and not prog.output_constants:  # (a tensor alone)
        return tensors[0]
    it = iter(tensors)
    n = prog.output_spec.num_leaves
    leaves = [prog.output_constants[i] if i in prog.output_constants else next(it) for i in range(n)]
    return pytree.tree_unflatten(leaves, prog.output_spec)
