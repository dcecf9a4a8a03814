"""The closures and default arguments of the user's functions that a forward runs, as mappings the
key and the guard read.

A forward built by a factory (`def make(scale): class Block(nn.Module): def forward(self, x): return
x * scale`), or a hook that closes over a tensor or a flag, reads values from its closure cells, not
from its globals or module: ClosureCells shows one function's cells as a mapping from the free
variables' names to their values (the value a `nonlocal` assignment gives is the one read), so
that jit.py watches them as it watches globals. user_functions finds the functions of a model whose
frames the recording may meet: its classes' methods, its hooks, the functions it holds.
FunctionDefaults shows a function's default arguments the same way (`def forward(self, x,
scale=2.0)`: a default replaced later, `Block.forward.__defaults__ = (3.0,)`, is read by the next
call that leaves the argument out).
"""
import collections.abc
import types
import weakref

from .constants import NamedSlots, forward_hooks, is_torchs


class ClosureCells(NamedSlots):
    """fn's closure by free variable name; an empty cell is a missing key."""

    def __init__(self, fn):
        self._cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
        self._names = list(self._cells)
        self.function = fn.__qualname__

    def __getitem__(self, name):
        try:
            return self._cells[name].cell_contents
        except ValueError:  # an empty cell (a name bound later in its scope)
            raise KeyError(name) from None

    def __setitem__(self, name, value):
        self._cells[name].cell_contents = value

    def __delitem__(self, name):
        del self._cells[name].cell_contents

    def __repr__(self):
        return f"<closure of {self.function}>"


# One mapping per function: the key, the guard and the side effects name a cell by the mapping's
# identity.
_cells_of = weakref.WeakKeyDictionary()


def closure_cells(fn):
    """fn's ClosureCells (the same object for the same function), or None if it closes over nothing."""
    if not fn.__closure__:
        return None
    cells = _cells_of.get(fn)
    if cells is None:
        cells = _cells_of[fn] = ClosureCells(fn)
    return cells


class FunctionDefaults(collections.abc.Mapping):
    """fn's default arguments as two entries: "__defaults__" (the positional ones' tuple) and
    "__kwdefaults__" (the keyword-only ones' (name, value) pairs, sorted), read from the function at
    each lookup."""

    KEYS = ("__defaults__", "__kwdefaults__")

    def __init__(self, fn):
        self._fn = fn
        self.function = fn.__qualname__

    def __getitem__(self, name):
        if name == "__defaults__":
            return self._fn.__defaults__
        if name == "__kwdefaults__":
            return tuple(sorted((self._fn.__kwdefaults__ or {}).items()))
        raise KeyError(name)

    def __iter__(self):
        return iter(self.KEYS)

    def __len__(self):
        return len(self.KEYS)

    def __repr__(self):
        return f"<default arguments of {self.function}>"


_defaults_of = weakref.WeakKeyDictionary()


def function_defaults(fn):
    """fn's FunctionDefaults (the same object for the same function), or None if it has none."""
    if not fn.__defaults__ and not fn.__kwdefaults__:
        return None
    defaults = _defaults_of.get(fn)
    if defaults is None:
        defaults = _defaults_of[fn] = FunctionDefaults(fn)
    return defaults


def user_functions(modules):
    """{code object: function} of the functions the modules' forwards may run that are the user's
    own: the methods of their classes (torch's aside), their forward hooks and the functions they
    hold as attributes."""
    found = {}

    def add(f):
        if isinstance(f, (staticmethod, classmethod, types.MethodType)):
            f = f.__func__
        if isinstance(f, types.FunctionType) and (f.__module__ or "").split(".")[0] not in ("torch", "thunder_viz"):
            found.setdefault(f.__code__, f)

    for m in modules:
        for cls in type(m).__mro__:
            if cls is object or is_torchs(cls):
                continue
            for v in vars(cls).values():
                if isinstance(v, property):
                    add(v.fget)
                else:
                    add(v)
        for _, _, hook in forward_hooks(m):
            add(hook)
        for v in vars(m).values():
            add(v)
    return found
