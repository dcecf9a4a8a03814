"""What a recorded trace may hold as a constant, and how a cache key and a CallGuard spell it.

A forward's Python values (a module's `self.scale`, `self.config.eps`, a global `TEMPERATURE`, the
activation function it chose in __init__) are written into the trace as they were at the
recording. jit.py keys and guards an entry on them, so that a later change is a new recording:
is_constant says which values are held (and compared), snapshot copies one so that a change in
place of the original is seen, hashable spells one in a key, holds_settings and settings_table find
the fields of a settings object (a config dataclass, a SimpleNamespace, a dict) a module holds, and
holds_fields and fields_table also those of a slots object or a class used as one.
"""
import collections.abc
import enum
import fractions
import functools
import os
import sys
import sysconfig
import types

import torch

FUNCTIONS = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, functools.partial)
GONE = object()  # a field deleted since it was read


def is_constant(value, depth=0):
    """None, a number (numpy's too), bool or string, an Enum, a torch dtype, device or Size, a
    function (compared by identity), a numpy array of numbers of up to MAX_ITEMS elements (compared
    by value: torch.from_numpy(self.anchors) is a constant of the trace), or a list, tuple or set of
    those (a kernel size, the dims of a sum) of up to MAX_ITEMS items."""
    if value is None or isinstance(value, SCALARS) or isinstance(value, FUNCTIONS) or _small_array(value):
        return True
    if type(value) is slice:
        return all(is_constant(v, depth + 1) for v in (value.start, value.stop, value.step))
    return (type(value) in (list, tuple, set, frozenset) or _is_named_tuple(value)) and len(value) <= MAX_ITEMS and \
        depth < 3 and all(is_constant(v, depth + 1) for v in value)  # (not a struct sequence: torch.return_types)


def _is_named_tuple(value):
    """A collections.namedtuple or typing.NamedTuple of the user's (a config swapped by _replace)."""
    return isinstance(value, tuple) and hasattr(type(value), "_fields") and type(value).__module__.split(".")[0] != "torch"


def _small_array(value):
    numpy = sys.modules.get("numpy")
    return numpy is not None and type(value) is numpy.ndarray and value.size <= MAX_ITEMS and value.dtype.kind in "biuf"


def _numpy_scalars():
    numpy = sys.modules.get("numpy")
    return (numpy.generic,) if numpy is not None else ()


SCALARS = (bool, int, float, str, enum.Enum, torch.dtype, torch.device, torch.Size, range, fractions.Fraction) + \
    _numpy_scalars()
MAX_ITEMS = 1024
# How many levels of dicts and settings objects held in one another the key, the guard, the
# captured tensors' places and the side effects look into (CFG["a"]["b"]["c"]["scale"]).
MAX_NESTING = 6


def snapshot(value):
    """A copy that a later change in place of the original does not reach; lists stay lists (a
    guard compares types), tuples tuples, sets sets."""
    if type(value) in (list, tuple, set):
        return type(value)(snapshot(v) for v in value)
    if _small_array(value):
        return value.copy()
    return value


def hashable(value):
    """The key's spelling of a constant: typed (1, True and 1.0 are three keys), floats by repr (0.0
    and -0.0 are two)."""
    if type(value) is list:
        return ("list", tuple(hashable(v) for v in value))
    if type(value) is tuple:
        return tuple(hashable(v) for v in value)
    if _is_named_tuple(value):
        return (type(value).__qualname__, id(type(value)), tuple(hashable(v) for v in value))
    if type(value) is slice:  # (unhashable before Python 3.12)
        return ("slice", hashable(value.start), hashable(value.stop), hashable(value.step))
    if type(value) in (set, frozenset):
        return (type(value).__name__, frozenset(hashable(v) for v in value))
    if isinstance(value, torch.Size):
        return ("Size", tuple(value))
    if _small_array(value):  # (its bytes: a write into it in place is another key)
        return ("ndarray", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, float):
        return ("float", repr(value))
    if not is_constant(value):
        return (type(value).__name__,)  # what a slot of a constant holds now (a tensor kept where None was)
    return (type(value).__name__, value)


class DeepValue:
    """A value held deeper than MAX_NESTING levels of dicts and settings objects (or past the key's
    count of tables), compared by deep_value at every call: a guard, which compares by type, never
    matches it, so such a call takes the slow path, whose key reads it."""

    def __init__(self, value):
        self.value = deep_value(value)

    def __eq__(self, other):
        return isinstance(other, DeepValue) and other.value == self.value

    __hash__ = None


def deep_value(value, depth=0, seen=None):
    """hashable's spelling of a value and of everything it holds: dicts, lists, tuples and the
    fields of settings objects, at any depth (an object met again, inside itself or shared by two
    holders, is spelled by its type and identity the second time: one walk over each object),
    tensors by their type (their places are jit.py's captures)."""
    if is_constant(value):
        return hashable(value)
    if too_many_items(value) and not isinstance(value, (list, tuple)):  # a numpy array: its bytes
        return ("ndarray", value.dtype.str, value.shape, value.tobytes())
    seen = set() if seen is None else seen
    if id(value) in seen or depth > MAX_DEEP_LEVELS:
        return ("again", type(value).__name__, id(value))
    seen.add(id(value))
    if isinstance(value, dict):
        return ("dict", tuple((hashable(k), deep_value(v, depth + 1, seen)) for k, v in list(value.items())),
                len(value))
    if type(value) in (list, tuple):
        return (type(value).__name__, tuple(deep_value(v, depth + 1, seen) for v in value), len(value))
    if holds_fields(value) and not isinstance(value, types.ModuleType):
        fields = fields_table(value)
        return (type(value).__qualname__, id(type(value)),
                tuple((k, deep_value(v, depth + 1, seen)) for k, v in list(fields.items())
                      if not (isinstance(k, str) and k.startswith("__") and k.endswith("__"))))
    return (type(value).__name__,)


MAX_DEEP_LEVELS = 64


def too_many_items(value):
    """A list, tuple or numpy array of more items than is_constant takes (a table of 4 096 anchor
    sizes): compared whole as a DeepValue."""
    numpy = sys.modules.get("numpy")
    return (type(value) in (list, tuple) and len(value) > MAX_ITEMS) or (
        numpy is not None and type(value) is numpy.ndarray and value.size > MAX_ITEMS)


def holds_settings(value):
    """Whether a value is an object whose fields a forward may read as settings (a config dataclass,
    a SimpleNamespace, Hugging Face's PretrainedConfig) or a dict of them."""
    if isinstance(value, dict):
        return True
    # (a GraphModule's fx Graph and Nodes are its code, which its forward is made from, not settings)
    return hasattr(value, "__dict__") and not isinstance(
        value, (torch.nn.Module, torch.Tensor, type, types.ModuleType, enum.Enum) + FUNCTIONS) and \
        not type(value).__module__.startswith("torch.fx.")


def settings_table(value):
    """The dict that holds a settings object's fields (the dict itself for a dict)."""
    return value if isinstance(value, dict) else vars(value)


class NamedSlots(collections.abc.MutableMapping):
    """A mapping over a fixed list of names, each of which may be unset (a missing key): a
    function's closure cells (closures.ClosureCells), a slots object's fields (SlotFields).
    Subclasses set `_names` and give __getitem__ (KeyError where unset), __setitem__, __delitem__."""
    _names = ()

    def __iter__(self):
        return (n for n in self._names if n in self)

    def __len__(self):
        return sum(1 for _ in self)

    def __contains__(self, name):
        try:
            self[name]
        except KeyError:
            return False
        return True


class SlotFields(NamedSlots):
    """The fields of an object that has no __dict__ (a dataclass(slots=True)) as a mapping."""

    def __init__(self, obj):
        self._obj = obj
        names = []
        for cls in type(obj).__mro__:
            slots = getattr(cls, "__slots__", ())
            names += [slots] if isinstance(slots, str) else [n for n in slots if n not in ("__weakref__", "__dict__")]
        self._names = names

    def __getitem__(self, name):
        if name not in self._names:
            raise KeyError(name)
        try:
            return getattr(self._obj, name)
        except AttributeError:
            raise KeyError(name) from None

    def __setitem__(self, name, value):
        setattr(self._obj, name, value)

    def __delitem__(self, name):
        delattr(self._obj, name)


def _plain_class(value):
    """A class of the user's used as a settings holder (`class CFG: scale = 2.0`), not a module,
    tensor, enum or exception class."""
    return isinstance(value, type) and not is_torchs(value) and not issubclass(
        value, (torch.nn.Module, torch.Tensor, enum.Enum, BaseException))


def _slots_object(value):
    return not hasattr(value, "__dict__") and getattr(type(value), "__slots__", None) is not None and \
        not is_torchs(type(value)) and not isinstance(value, (tuple, torch.Tensor))


def holds_fields(value):
    """holds_settings, or a settings object without a __dict__ (slots), or a class used as one: the
    key and the guard read their fields too (fields_table)."""
    return holds_settings(value) or _slots_object(value) or _plain_class(value)


def fields_table(value):
    """settings_table, or a slots object's SlotFields, or a class's own attributes (a mapping proxy)."""
    if _slots_object(value):
        return SlotFields(value)
    return settings_table(value)


def is_torchs(cls):
    """Whether a class is torch's own (or a builtin): its code is not the user's."""
    return cls.__module__.split(".")[0] in ("torch", "builtins")


def _functions_of(cls):
    """The functions of a class's body: methods, static and class methods, property accessors."""
    for v in vars(cls).values():
        if isinstance(v, (staticmethod, classmethod)):
            v = v.__func__
        if isinstance(v, property):
            yield from (f for f in (v.fget, v.fset) if isinstance(f, types.FunctionType))
        elif isinstance(v, types.FunctionType):
            yield v


_LIBRARY_PATHS = tuple(p for p in {sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
                       if p) + ("site-packages", "dist-packages", os.path.dirname(os.path.abspath(torch.__file__)))


def _users(fn_or_cls):
    """Whether a function or class is defined in the user's code, not a library's or Python's."""
    if isinstance(fn_or_cls, type):
        module = sys.modules.get(fn_or_cls.__module__)
        file = getattr(module, "__file__", None) or ""
    else:
        file = fn_or_cls.__code__.co_filename
    return not any(part in file for part in _LIBRARY_PATHS) and \
        (fn_or_cls.__module__ or "").split(".")[0] not in ("torch", "thunder_viz", "builtins")


def names_loaded(cls, limit=256):
    """The names the code of a class's functions and properties (nested code included) loads or
    stores, and the names it spells as strings (getattr(self.config, "scale", 1.0)): the globals and
    attributes it may read or set. The user's functions and classes that code names as globals (a
    helper `scale(cfg, x)`, a helper object's class) are read in turn, up to `limit` of them."""
    names, seen = set(), set()
    todo = [(f.__code__, f.__globals__) for f in _functions_of(cls)]
    while todo:
        code, globals_ = todo.pop()
        names.update(code.co_names)
        names.update(_spelled_names(code.co_consts))
        todo += [(c, globals_) for c in code.co_consts if isinstance(c, types.CodeType)]
        for name in code.co_names:
            value = globals_.get(name)
            if id(value) in seen or len(seen) >= limit or value is None:
                continue
            if isinstance(value, types.FunctionType) and _users(value):
                seen.add(id(value))
                todo.append((value.__code__, value.__globals__))
                helper = value.__code__  # its parameters: fields passed as `helper(x, **vars(self.cfg))`
                names.update(helper.co_varnames[:helper.co_argcount + helper.co_kwonlyargcount])
            elif isinstance(value, type) and not is_torchs(value) and _users(value):
                seen.add(id(value))
                todo += [(f.__code__, f.__globals__) for k in value.__mro__ if k is not object and not is_torchs(k)
                         for f in _functions_of(k)]
    return names


def _spelled_names(consts):
    """The attribute names a code's string constants spell: "scale", and each part of a dotted path
    (operator.attrgetter("cfg.scale"))."""
    for c in consts:
        if isinstance(c, str) and len(c) <= 256:
            parts = c.split(".")
            if all(p.isidentifier() for p in parts):
                yield from parts


def _names_in(functions):
    """The names the functions' code (nested code included) loads or stores, and spells as strings."""
    names, todo = set(), [f.__code__ for f in functions]
    while todo:
        code = todo.pop()
        names.update(code.co_names)
        names.update(_spelled_names(code.co_consts))
        todo += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return names


@functools.lru_cache(maxsize=1024)
def names_of_settings_class(cls):
    """The names a settings object's class reads of it (a property `use_return_dict` that reads
    `return_dict`; Hugging Face's `attribute_map`, whose values are the fields read under other
    names), its library's classes included."""
    names = set()
    for k in cls.__mro__:
        if k is object or k.__module__ == "builtins":
            continue
        names |= _names_in(_functions_of(k))
        mapping = vars(k).get("attribute_map")
        if isinstance(mapping, dict):
            names.update(v for v in mapping.values() if isinstance(v, str))
    return frozenset(names)


@functools.lru_cache(maxsize=1024)
def _torch_layer_names(cls):
    """The names the code of a module class's torch.nn layers (Conv2d's, _ConvNd's; not Module's)
    reads or sets: the attributes of such a module its own forward may read."""
    return frozenset(_names_in(f for k in cls.__mro__ if is_torchs(k) and k not in (torch.nn.Module, object)
                               for f in _functions_of(k)))


def names_read(modules):
    """The names the code of the modules' own classes (not torch's) loads or stores, and
    `training`: of a module of the user's own class, or of a settings object, an attribute that no
    such code names (a step count the training loop keeps on the model) is no part of jit.py's key."""
    read, seen = {"training"}, set()
    for m in modules:
        for cls in type(m).__mro__:
            if not is_torchs(cls) and not cls.__module__.startswith("thunder_viz") and cls not in seen:
                seen.add(cls)
                read |= names_loaded(cls)
        for _, _, hook in forward_hooks(m):  # a hook reads its module's attributes too
            read |= _names_in([hook]) if isinstance(hook, types.FunctionType) else names_of_settings_class(type(hook))
    return read


def forward_hooks(module):
    """(table, key, hook) of a module's forward hooks and pre-hooks; a bound method as its function,
    an object (SaveOutput, a counter) as itself."""
    for table in (module._forward_hooks, module._forward_pre_hooks):
        for key, hook in table.items():
            yield table, key, hook.__func__ if isinstance(hook, types.MethodType) else hook


def hook_objects(module):
    """(table, key, object) of a module's forward hooks and pre-hooks that are objects holding state
    of their own (SaveOutput, a counter; slots ones too), and of the objects whose bound methods are
    hooks (`scaler.hook`, reading `self.k`), each of those in a one-entry table of its own."""
    found = []
    for table in (module._forward_hooks, module._forward_pre_hooks):
        for key, hook in table.items():
            holder = table
            if isinstance(hook, types.MethodType):
                hook = hook.__self__
                holder = {key: hook}
            if holds_fields(hook) and not isinstance(hook, (types.FunctionType, dict, torch.nn.Module)):
                found.append((holder, key, hook))
    return found


def keyed_attribute(module, name, read):
    """Whether jit.py's key holds a module's attribute `name` (when it is a constant), `read` being
    names_read of the model's modules: one that the code of the model's classes (and their helpers)
    or of the torch.nn layers the module derives from names. An attribute a training loop keeps on
    the model (`model._step = i`, `model.head.last_norm = x`) that no such code names is not. One
    that hides its class's attribute of that name (`m.lin.forward = ...`, patched per instance) is."""
    return name in read or name in _torch_layer_names(type(module)) or name in _class_attribute_names(type(module))


@functools.lru_cache(maxsize=1024)
def _class_attribute_names(cls):
    return frozenset(n for k in cls.__mro__ for n in vars(k))
