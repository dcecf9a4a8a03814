"""Recording the torch-level calls of a module's forward with a TorchFunctionMode.

Each call goes through one table, keyed by the function's name: a handler turns the call (and its
real result, which gives shapes) into engine ops (`ltorch.*` names without the prefix) whose
arguments are references to earlier values, parameters by qualified name, or literals. Metadata
queries (size, shape, dtype, ...) run and are not recorded; anything else is an UnsupportedOp that
names the function, the user's file:line and the supported alternatives where known.
"""
import linecache
import os
import sys
import threading

import torch
from torch.overrides import TorchFunctionMode

from .errors import RecordedCallError, UnsupportedOp

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))
_SKIP_DIRS = (_PKG_DIR, _TORCH_DIR)

_DTYPES = {torch.float64: "f64", torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16",
           torch.int64: "i64", torch.int32: "i32", torch.int16: "i16", torch.int8: "i8", torch.uint8: "ui8",
           torch.bool: "b8"}

# Queries that read metadata only: run, not recorded.
PASSTHROUGH = {
    "size", "dim", "ndimension", "numel", "__len__", "is_floating_point", "is_contiguous", "element_size",
    "get_device", "stride", "__repr__", "__format__", "__hash__", "nelement",
    "attr:shape", "attr:dtype", "attr:device", "attr:requires_grad", "attr:is_cuda", "attr:ndim", "attr:is_leaf",
    "attr:grad_fn", "attr:layout", "attr:names", "attr:is_sparse", "attr:is_quantized", "attr:is_meta",
}

ALTERNATIVES = {
    "__getitem__": ["Tensor.split", "Tensor.chunk", "torch.split"],
    "bmm": ["torch.matmul"],
    "mm": ["torch.matmul"],
    "addmm": ["torch.nn.functional.linear"],
    "baddbmm": ["torch.matmul", "torch.add"],
    "item": ["keep the value a tensor (data-dependent values are not traced)"],
    "__bool__": ["torch.where (data-dependent control flow is not traced)"],
    "tolist": ["keep the value a tensor"],
    "narrow": ["Tensor.split"],
    "index_select": ["torch.nn.functional.embedding"],
    "gather": ["torch.take_along_dim (engine op take_along_dim)"],
    "max": ["torch.amax", "torch.maximum"],
    "var": ["torch.nn.functional.layer_norm"],
    "std": ["torch.nn.functional.layer_norm"],
    "batch_norm": ["torch.nn.functional.layer_norm"],
    "conv2d": ["torch.nn.functional.linear"],
    "leaky_relu": ["torch.nn.functional.relu", "torch.nn.functional.gelu", "torch.nn.functional.silu"],
    "elu": ["torch.nn.functional.relu", "torch.nn.functional.gelu", "torch.nn.functional.silu"],
    "softplus": ["torch.nn.functional.silu", "torch.sigmoid"],
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
    if qual.startswith("_TensorBase.") or qual.startswith("Tensor."):
        return "Tensor." + qual.split(".", 1)[1]
    if qual.startswith("_VariableFunctionsClass."):
        return "torch." + qual.split(".", 1)[1]
    if mod in ("torch._C._nn",):
        return "torch.nn.functional." + key
    return f"{mod}.{qual}" if mod else qual


def user_frame():
    """(file, line) of the innermost frame outside torch and thunder_viz."""
    f = sys._getframe(1)
    while f is not None:
        fn = os.path.abspath(f.f_code.co_filename)
        if not fn.startswith(_SKIP_DIRS) and not f.f_code.co_filename.startswith("<frozen"):
            return f.f_code.co_filename, f.f_lineno
        f = f.f_back
    return "<unknown>", 0


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


class Program:
    """The recorded calls: ops (name, args, output slots, header), inputs and outputs."""

    def __init__(self, input_names):
        self.input_names = list(input_names)
        self.ops = []
        self.outputs = []
        self.output_structure = None
        self.num_slots = len(self.input_names)

    def to_dict(self):
        return {"inputs": self.input_names, "ops": self.ops, "outputs": self.outputs, "num_slots": self.num_slots}

    def describe(self):
        return "\n".join(f"{o[2]} = {o[0]}{tuple(o[1])}    # {o[3]}" for o in self.ops)


_active = threading.local()  # the recorder of this thread (World ranks record concurrently)


class _GetitemPatch:
    """torch 1.13 does not route Tensor.__getitem__ through TorchFunctionMode, so while any thread
    records, Tensor.__getitem__ is replaced by one that reports it; the last recorder to finish
    puts back what was there."""

    def __init__(self):
        self._lock = threading.Lock()
        self._users = 0
        self._saved = None

    def enter(self):
        with self._lock:
            if self._users == 0:
                self._saved = torch.Tensor.__getitem__
                torch.Tensor.__getitem__ = _getitem
            self._users += 1

    def exit(self):
        with self._lock:
            self._users -= 1
            if self._users == 0:
                torch.Tensor.__getitem__ = self._saved

    def original(self):
        return self._saved


_getitem_patch = _GetitemPatch()


def _getitem(self, idx):
    rec = getattr(_active, "recorder", None)
    if rec is not None:
        rec.location = user_frame()
        raise rec.unsupported("Tensor.__getitem__ (indexing/slicing)", key="__getitem__")
    return _getitem_patch.original()(self, idx)


class Recorder(TorchFunctionMode):
    def __init__(self, module, inputs, input_names):
        super().__init__()
        self.program = Program(input_names)
        self.refs = {}
        self.keep = []  # tensors whose id() is a key of refs stay alive
        for i, t in enumerate(inputs):
            self._bind(t, ("v", i))
        for name, p in module.named_parameters():
            self._bind(p, ("p", name))
        for name, b in module.named_buffers():
            self._bind(b, ("p", name))
        self.location = None

    def _bind(self, t, ref):
        self.refs[id(t)] = ref
        self.keep.append(t)

    # -- encoding
    def ref(self, t):
        r = self.refs.get(id(t))
        if r is None:
            raise self.unsupported("a tensor constant", detail=(
                "the tensor was not produced by a recorded call nor is it an input, parameter or buffer "
                f"(shape {list(t.shape)}); register it as a buffer or pass it as an input"))
        return r

    def enc(self, x):
        if isinstance(x, torch.Tensor):
            return self.ref(x)
        if isinstance(x, torch.dtype):
            return ("d", _DTYPES[x])
        if isinstance(x, (list, tuple)) and x and all(isinstance(e, torch.Tensor) for e in x):
            return ("l", [self.ref(e) for e in x])
        if isinstance(x, (list, tuple, torch.Size)):
            return [int(e) for e in x]
        if x is None or isinstance(x, (bool, int, float, str)):
            return x
        raise self.unsupported(f"an argument of type {type(x).__name__}")

    def emit(self, name, args, outs):
        """Records engine op `name`; `outs` (a tensor or a list of tensors) get fresh slots."""
        single = isinstance(outs, torch.Tensor)
        outs = [outs] if single else list(outs)
        slots = []
        for t in outs:
            slots.append(self.program.num_slots)
            self._bind(t, ("v", self.program.num_slots))
            self.program.num_slots += 1
        file, line = self.location
        self.program.ops.append((name, [self.enc(a) for a in args], slots, header_of(file, line)))

    def alias(self, out, of):
        self._bind(out, self.ref(of))

    def unsupported(self, what, detail="", key=None):
        file, line = self.location or user_frame()
        code = linecache.getline(file, line) if line else ""
        return UnsupportedOp(what, f"{shown_path(file)}:{line}", code, ALTERNATIVES.get(key or "", []), detail)

    # -- the mode
    def __enter__(self):
        _active.recorder = self
        _getitem_patch.enter()
        return super().__enter__()

    def __exit__(self, *exc):
        _active.recorder = None
        _getitem_patch.exit()
        return super().__exit__(*exc)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        key = func_key(func)
        if key in PASSTHROUGH:
            return func(*args, **kwargs)
        self.location = user_frame()
        handler = HANDLERS.get(key)
        if handler is None:
            raise self.unsupported(func_label(func), key=key)
        try:
            out = func(*args, **kwargs)
        except RuntimeError as e:
            raise self.failed(func, args, kwargs, e) from e
        handler(self, out, *args, **kwargs)
        return out

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


# ---------------------------------------------------------------- handlers

def _dim(d, ndim):
    return d + ndim if d < 0 else d


def _binary(name, swap=False):
    def h(rec, out, a, b, *rest, alpha=1, **kw):
        if rest or kw or alpha != 1:
            raise rec.unsupported(f"{name} with alpha/out/extra arguments")
        x, y = (b, a) if swap else (a, b)
        rec.emit(name, [x, y], out)
    return h


def _unary(name):
    def h(rec, out, a, *rest, **kw):
        rec.emit(name, [a], out)
    return h


def h_linear(rec, out, input, weight, bias=None):
    rec.emit("linear", [input, weight, bias], out)


def h_matmul(rec, out, a, b):
    rec.emit("matmul", [a, b], out)


def h_rmatmul(rec, out, a, b):
    rec.emit("matmul", [b, a], out)


def h_gelu(rec, out, input, approximate="none"):
    rec.emit("gelu", [input, approximate], out)


def h_layer_norm(rec, out, input, normalized_shape, weight=None, bias=None, eps=1e-5):
    rec.emit("layer_norm", [input, list(normalized_shape), weight, bias, float(eps)], out)


def _softmax(name):
    def h(rec, out, input, dim=None, _stacklevel=3, dtype=None):
        if dim is None or dtype is not None:
            raise rec.unsupported(f"{name} without dim or with dtype", key=name)
        rec.emit(name, [input, _dim(dim, input.dim())], out)
    return h


def h_relu(rec, out, input, inplace=False):
    rec.emit("relu", [input], out)


def h_silu(rec, out, input, inplace=False):
    rec.emit("silu", [input], out)


def h_cross_entropy(rec, out, input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                    reduction="mean", label_smoothing=0.0):
    if weight is not None or reduction != "mean" or label_smoothing != 0.0:
        raise rec.unsupported("cross_entropy with weight, reduction other than 'mean' or label_smoothing")
    rec.emit("cross_entropy", [input, target], out)


def h_embedding(rec, out, input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                sparse=False):
    if max_norm is not None:
        raise rec.unsupported("embedding with max_norm")
    rec.emit("embedding", [input, weight], out)


def h_dropout(rec, out, input, p=0.5, training=True, inplace=False):
    if not training or p == 0:
        rec.alias(out, input)
    else:
        rec.emit("dropout", [input, float(p), 0, True], out)


def _reshape(name):
    def h(rec, out, a, *shape, **kw):
        rec.emit(name, [a, list(out.shape)], out)
    return h


def h_transpose(rec, out, a, d0, d1):
    n = a.dim()
    rec.emit("transpose", [a, _dim(d0, n), _dim(d1, n)], out)


def h_t(rec, out, a):
    if a.dim() < 2:
        rec.alias(out, a)
    else:
        rec.emit("transpose", [a, 0, 1], out)


def h_T(rec, out, a):
    rec.emit("permute", [a, list(reversed(range(a.dim())))], out)


def h_mT(rec, out, a):
    n = a.dim()
    rec.emit("transpose", [a, n - 2, n - 1], out)


def h_permute(rec, out, a, *dims):
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = dims[0]
    rec.emit("permute", [a, [_dim(d, a.dim()) for d in dims]], out)


def h_unsqueeze(rec, out, a, dim):
    rec.emit("unsqueeze", [a, _dim(dim, a.dim() + 1)], out)


def h_alias(rec, out, a, *args, **kw):
    rec.alias(out, a)


def h_to(rec, out, a, *args, **kw):
    if out is a:
        return
    if out.device != a.device:
        raise rec.unsupported("Tensor.to(device) inside forward", detail="move the module and inputs before jit")
    if out.dtype != a.dtype:
        rec.emit("convert_element_type", [a, out.dtype], out)
    else:
        rec.alias(out, a)


def _cast(dtype):
    def h(rec, out, a, *args, **kw):
        if out.dtype == a.dtype:
            rec.alias(out, a)
        else:
            rec.emit("convert_element_type", [a, dtype], out)
    return h


def h_type_as(rec, out, a, other):
    _cast(other.dtype)(rec, out, a)


def h_split(rec, out, a, split_size_or_sections, dim=0):
    if not isinstance(split_size_or_sections, int):
        raise rec.unsupported("split with a list of sections", key="narrow")
    rec.emit("split", [a, split_size_or_sections, _dim(dim, a.dim())], list(out))


def h_chunk(rec, out, a, chunks, dim=0):
    d = _dim(dim, a.dim())
    size = -(-a.shape[d] // chunks)
    rec.emit("split", [a, size, d], list(out))


def h_cat(rec, out, tensors, dim=0):
    rec.emit("cat", [list(tensors), _dim(dim, tensors[0].dim())], out)


def _reduction(name):
    def h(rec, out, a, dim=None, keepdim=False, *, dtype=None):
        if dtype is not None:
            raise rec.unsupported(f"{name} with dtype")
        if dim is None:
            dims = []
        elif isinstance(dim, int):
            dims = [_dim(dim, a.dim())]
        else:
            dims = [_dim(d, a.dim()) for d in dim]
        rec.emit(name, [a, dims, bool(keepdim)], out)
    return h


def h_where(rec, out, cond, a=None, b=None):
    if a is None:
        raise rec.unsupported("torch.where(cond) (data-dependent shape)")
    rec.emit("where", [cond, a, b], out)


def h_masked_fill(rec, out, a, mask, value):
    if isinstance(value, torch.Tensor):
        raise rec.unsupported("masked_fill with a tensor value")
    rec.emit("masked_fill", [a, mask, value], out)


def h_sdpa(rec, out, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, **kw):
    if dropout_p != 0.0 or scale is not None or kw:
        raise rec.unsupported("scaled_dot_product_attention with dropout_p, scale or extra arguments")
    rec.emit("scaled_dot_product_attention", [q, k, v, attn_mask, bool(is_causal)], out)


def _dev(t):
    return "cpu" if t.device.type == "cpu" else f"cuda:{t.device.index or 0}"


def _creation(name):
    def h(rec, out, *args, **kw):
        if name == "full":
            fill = args[1] if len(args) > 1 else kw.get("fill_value")
            rec.emit("full", [list(out.shape), fill, out.dtype, _dev(out)], out)
        else:
            rec.emit(name, [list(out.shape), out.dtype, _dev(out)], out)
    return h


def h_arange(rec, out, *args, **kw):
    if len(args) != 1 or isinstance(args[0], float):
        raise rec.unsupported("torch.arange with start/step (only arange(end))")
    if out.dtype != torch.int64:
        raise rec.unsupported("torch.arange with a dtype other than int64")
    rec.emit("arange", [int(args[0]), _dev(out)], out)


def h_maximum(rec, out, a, b):
    rec.emit("maximum", [a, b], out)


HANDLERS = {
    "linear": h_linear,
    "matmul": h_matmul, "__matmul__": h_matmul, "__rmatmul__": h_rmatmul,
    "add": _binary("add"), "__add__": _binary("add"), "__radd__": _binary("add", swap=True),
    "sub": _binary("sub"), "__sub__": _binary("sub"), "__rsub__": _binary("sub", swap=True), "subtract": _binary("sub"),
    "mul": _binary("mul"), "__mul__": _binary("mul"), "__rmul__": _binary("mul", swap=True), "multiply": _binary("mul"),
    "div": _binary("true_divide"), "true_divide": _binary("true_divide"), "__truediv__": _binary("true_divide"),
    "__rtruediv__": _binary("true_divide", swap=True), "__div__": _binary("true_divide"),
    "pow": _binary("pow"), "__pow__": _binary("pow"), "__rpow__": _binary("pow", swap=True),
    "eq": _binary("eq"), "__eq__": _binary("eq"), "ne": _binary("ne"), "__ne__": _binary("ne"),
    "lt": _binary("lt"), "__lt__": _binary("lt"), "le": _binary("le"), "__le__": _binary("le"),
    "gt": _binary("gt"), "__gt__": _binary("gt"), "ge": _binary("ge"), "__ge__": _binary("ge"),
    "maximum": h_maximum,
    "neg": _unary("neg"), "__neg__": _unary("neg"), "negative": _unary("neg"),
    "exp": _unary("exp"), "log": _unary("log"), "tanh": _unary("tanh"), "erf": _unary("erf"),
    "rsqrt": _unary("rsqrt"), "sqrt": _unary("sqrt"), "sigmoid": _unary("sigmoid"),
    "relu": h_relu, "silu": h_silu, "gelu": h_gelu,
    "layer_norm": h_layer_norm,
    "softmax": _softmax("softmax"), "log_softmax": _softmax("log_softmax"),
    "cross_entropy": h_cross_entropy, "embedding": h_embedding, "dropout": h_dropout,
    "reshape": _reshape("reshape"), "view": _reshape("view"), "flatten": _reshape("reshape"),
    "squeeze": _reshape("reshape"), "expand": _reshape("expand"),
    "transpose": h_transpose, "t": h_t, "attr:T": h_T, "attr:mT": h_mT,
    "permute": h_permute, "unsqueeze": h_unsqueeze,
    "contiguous": h_alias, "clone": h_alias, "detach": h_alias,
    "to": h_to, "float": _cast(torch.float32), "double": _cast(torch.float64), "half": _cast(torch.float16),
    "bfloat16": _cast(torch.bfloat16), "long": _cast(torch.int64), "int": _cast(torch.int32), "bool": _cast(torch.bool),
    "type_as": h_type_as,
    "split": h_split, "chunk": h_chunk, "cat": h_cat, "concat": h_cat,
    "sum": _reduction("sum"), "mean": _reduction("mean"), "amax": _reduction("amax"),
    "where": h_where, "masked_fill": h_masked_fill,
    "scaled_dot_product_attention": h_sdpa,
    "ones": _creation("ones"), "zeros": _creation("zeros"), "full": _creation("full"), "arange": h_arange,
}


def supported_ops():
    """The torch function names thunder_viz.jit records."""
    return sorted(HANDLERS)


def record(module, inputs, input_names):
    """Runs module(*inputs) under the recorder; returns (Program, real outputs)."""
    rec = Recorder(module, inputs, input_names)
    with torch.no_grad():
        with rec:
            out = module(*inputs)
    prog = rec.program
    if isinstance(out, torch.Tensor):
        prog.output_structure = "tensor"
        outs = [out]
    elif isinstance(out, (tuple, list)) and all(isinstance(o, torch.Tensor) for o in out):
        prog.output_structure = (type(out), len(out))
        outs = list(out)
    else:
        raise UnsupportedOp(f"a forward returning {type(out).__name__}", "forward",
                            detail="return a tensor or a tuple/list of tensors")
    for o in outs:
        if id(o) not in rec.refs:
            file, line = user_frame()
            raise UnsupportedOp("an output made by a call the recorder did not see", f"{shown_path(file)}:{line}",
                                detail="the forward returned a tensor no recorded torch call produced")
    prog.outputs = [rec.ref(o) for o in outs]
    return prog, out
