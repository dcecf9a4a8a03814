"""Two programs side by side when they are spelled differently: Lightning Thunder's trace of a module
and ours. Thunder prints the same op as `torch.matmul` (what the user called), `ltorch.matmul`
(its symbol), or an executor's function (`torch_prims_reshape_impl` for `prims.reshape`); the
engine writes `ltorch.*` and `prims.*`. Each top-level statement is reduced to its op in one
spelling, structural statements (unpacking, copies, del, return) are left out, and the two op
sequences are aligned (difflib): the rows say which ops both programs run and where they differ.
"""
import difflib
import re

# Statements that move values around rather than compute (Thunder's and ours).
STRUCTURAL = {"unpack_trivial", "unpack_sequence", "unpack_key", "unpack_attr", "python_return", "python_del",
              "del", "return", "shallow_copy", "prims.shallow_copy", "prims.python_return", "prims.python_del",
              "prims.unpack_trivial", "prims.unpack_sequence", "clear_mutable_collection"}

_EXECUTOR_NAME = [re.compile(r"torch_prims_(\w+)_impl"), re.compile(r"torch_(\w+)_prim_impl")]
_TORCH_PREFIXES = ("torch.nn.functional.", "torch.Tensor.", "Tensor.", "torch.")


def op_name(symbol):
    """The op of a printed symbol in the engine's spelling: torch.matmul, Tensor.matmul -> ltorch.matmul;
    torch_prims_reshape_impl, torch_pad_prim_impl -> prims.reshape, prims.pad; others unchanged."""
    for pattern in _EXECUTOR_NAME:
        m = pattern.fullmatch(symbol)
        if m:
            return "prims." + m.group(1)
    for prefix in _TORCH_PREFIXES:
        if symbol.startswith(prefix):
            return "ltorch." + symbol[len(prefix):]
    return symbol


class ProgramComparison:
    """`rows`: (kind, left statement, right statement) with kind "same", "changed", "only left" or
    "only right" (a statement is None on the side that lacks it); `same_program` when every row is
    "same"; str() is the table, `summary()` one line."""

    def __init__(self, rows, left_name, right_name):
        self.rows, self.left_name, self.right_name = rows, left_name, right_name

    @property
    def same_program(self):
        return all(kind == "same" for kind, _, _ in self.rows)

    def differences(self):
        return [r for r in self.rows if r[0] != "same"]

    def summary(self):
        same = sum(1 for r in self.rows if r[0] == "same")
        if self.same_program:
            return f"same program: {same} ops in the same order"
        counts = {}
        for kind, _, _ in self.differences():
            counts[kind] = counts.get(kind, 0) + 1
        parts = ", ".join(f"{n} {kind}" for kind, n in counts.items())
        return f"{same} ops line up; {parts} ({self.left_name} vs {self.right_name})"

    def __str__(self):
        width = max([len(self.left_name)] + [len(left or "") for _, left, _ in self.rows]) + 2
        lines = [f"  {self.left_name:<{width}}{self.right_name}"]
        mark = {"same": " ", "changed": "~", "only left": "<", "only right": ">"}
        for kind, left, right in self.rows:
            lines.append(f"{mark[kind]} {left or '':<{width}}{right or ''}")
        return "\n".join(lines)


def _ops(trace):
    """[(op, statement)] of a trace's computing statements."""
    out = []
    for b in trace.bound_symbols:
        name = b["name"]
        if name in STRUCTURAL or name.startswith("#"):
            continue
        out.append((op_name(name), b["statement"].split("  #")[0].strip()))
    return out


def compare_programs(left, right, left_name="left", right_name="right"):
    """Aligns two traces' ops (see the module's text): a ProgramComparison."""
    a, b = _ops(left), _ops(right)
    rows = []
    matcher = difflib.SequenceMatcher(a=[op for op, _ in a], b=[op for op, _ in b], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows += [("same", a[i][1], b[j][1]) for i, j in zip(range(i1, i2), range(j1, j2))]
            continue
        pairs = min(i2 - i1, j2 - j1) if tag == "replace" else 0
        rows += [("changed", a[i1 + k][1], b[j1 + k][1]) for k in range(pairs)]
        rows += [("only left", a[i][1], None) for i in range(i1 + pairs, i2)]
        rows += [("only right", None, b[j][1]) for j in range(j1 + pairs, j2)]
    return ProgramComparison(rows, left_name, right_name)
