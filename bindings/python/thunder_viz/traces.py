"""Importing Thunder printouts (files or strings) into engine traces and captures."""
import os
import re

from . import _thunder_viz as _C
from .errors import TraceParseError

Trace = _C.Trace
KINDS = ("prologue", "forward", "backward", "epilogue")
_FILE_KIND = {"prologue": "prologue", "fwd": "forward", "forward": "forward", "computation": "forward",
              "bwd": "backward", "backward": "backward", "epilogue": "epilogue"}
_NAME = re.compile(r"^(?P<case>.+?)__(?P<kind>[a-z]+)__(?P<index>\d+)(?P<python>\.python)?\.txt$")


def parse(text, file="<string>"):
    """One printout -> Trace; TraceParseError(file, line, column) when it does not parse."""
    trace, err = _C.parse_trace(text)
    if err is not None:
        raise TraceParseError(file, *err)
    return trace


def _kind_of_trace(trace):
    name = trace.name
    if name == "prologue":
        return "prologue"
    if name.startswith("backward"):
        return "backward"
    if name == "epilogue":
        return "epilogue"
    return "forward"


class ImportedTraces:
    """What import_traces made: per case, per kind, the traces in stage order; `.capture` is an
    engine Capture (model "imported", one pipeline per case) that save() writes for the CLI/GUI."""

    def __init__(self):
        self.cases = {}         # case -> {kind: [Trace]} (full printouts; .python.txt when alone)
        self.python_cases = {}  # case -> {kind: [Trace]} of the .python.txt printouts
        self.traces = []        # every trace, in the order given
        self.sources = []       # the file (or "<string N>") of each trace

    def stages(self, case=None):
        case = case if case is not None else next(iter(self.cases))
        return self.cases[case]

    def last_traces(self, case=None):
        return self.stages(case).get("forward", [])

    def last_prologue_traces(self, case=None):
        return self.stages(case).get("prologue", [])

    def last_backward_traces(self, case=None):
        return self.stages(case).get("backward", [])

    @property
    def capture(self):
        cap = _C.Capture("imported")
        for case, kinds in self.cases.items():
            stages = {k: [(_pass_name(t, i), t, 0.0) for i, t in enumerate(v)] for k, v in kinds.items()}
            cap.add_pipeline([case], stages)
        return cap

    def save(self, path):
        self.capture.save(os.fspath(path))

    def __repr__(self):
        return f"<ImportedTraces {len(self.traces)} traces, cases {list(self.cases)}>"


def _pass_name(trace, index):
    p = trace.provenance
    if p is None:
        return "acquisition" if index == 0 else f"stage {index}"
    return p["pass"]


def import_traces(texts_or_paths, case="imported"):
    """Parses Thunder printouts: file paths (kind from `<case>__<kind>__<index>[.python].txt`) or
    printout strings (kind from the function name). Raises TraceParseError with file and line:col."""
    if isinstance(texts_or_paths, (str, os.PathLike)):
        p = os.fspath(texts_or_paths)
        if "\n" not in p and os.path.isdir(p):
            texts_or_paths = sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith(".txt"))
        else:
            texts_or_paths = [texts_or_paths]
    items = []
    for n, item in enumerate(texts_or_paths):
        item_s = os.fspath(item) if isinstance(item, os.PathLike) else item
        is_path = isinstance(item, os.PathLike) or ("\n" not in item_s and os.path.isfile(item_s))
        if is_path:
            with open(item_s, encoding="utf-8") as f:
                text = f.read()
            m = _NAME.match(os.path.basename(item_s))
            trace = parse(text, item_s)
            if m:
                items.append((m["case"], _FILE_KIND.get(m["kind"], _kind_of_trace(trace)), int(m["index"]),
                              bool(m["python"]), trace, item_s))
            else:
                items.append((case, _kind_of_trace(trace), n, False, trace, item_s))
        else:
            if "\n" not in item_s and item_s.strip().endswith(".txt"):
                # One line naming a .txt file is a path, not a printout (which has several lines).
                raise FileNotFoundError(f"import_traces: {item_s}: no such file; check the path")
            src = f"<string {n}>"
            trace = parse(item_s, src)
            items.append((case, _kind_of_trace(trace), n, False, trace, src))
    out = ImportedTraces()
    for c, kind, index, python, trace, src in items:
        out.traces.append(trace)
        out.sources.append(src)
    full = {}
    py = {}
    for c, kind, index, python, trace, src in sorted(items, key=lambda x: (x[0], KINDS.index(x[1]), x[2])):
        (py if python else full).setdefault(c, {}).setdefault(kind, []).append(trace)
    out.python_cases = py
    for c in list(full) + [c for c in py if c not in full]:
        kinds = dict(full.get(c, {}))
        for k, v in py.get(c, {}).items():
            kinds.setdefault(k, v)
        out.cases[c] = {k: kinds[k] for k in KINDS if k in kinds}
    return out
