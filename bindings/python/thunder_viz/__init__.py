"""thunder_viz: the Python door of Thunder Viz.

    import thunder_viz as tv
    tm = tv.jit(model)              # records torch calls into the engine
    out = tm(x); out.sum().backward()
    tv.last_traces(tm)              # the stage history, as Thunder's last_traces
    insp = tv.attach(tm); insp.save("run.tvz.json"); insp.show()
    tv.import_traces(paths)         # real Thunder printouts
"""
from . import _thunder_viz as _C
from ._thunder_viz import (Capture, CaptureError, PipelineFailure, DistError, EngineError, ExecError,
                           IllegalOrder, OpError, Stage, Trace, execute_trace, transform_names)
from .errors import EagerMismatch, RecordedCallError, TraceParseError, UnsupportedOp
from .inspector import Inspector, attach, compare, find_binary, load
from .jit import (JittedModule, cache_hits, cache_misses, ddp, fsdp, history, jit, last_backward_traces,
                  last_epilogue_traces, last_prologue_traces, last_traces, run_world, world_info)
from .programs import compare_programs
from .recorder import supported_ops
from .traces import ImportedTraces, import_traces, parse

__version__ = "0.1.0"


def run_model(model, params=None, orders=(("jit",),), world_size=1, replay=True):
    """A built-in model (linear, mlp, llama_mlp, gpt) through the engine's run_pipelines: a Capture."""
    return _C.run_model(model, {k: str(v) for k, v in (params or {}).items()}, [list(o) for o in orders],
                        world_size, replay)


__all__ = [
    "Capture", "CaptureError", "PipelineFailure", "DistError", "EngineError", "ExecError", "IllegalOrder",
    "EagerMismatch", "ImportedTraces", "Inspector", "JittedModule", "OpError", "RecordedCallError", "Stage", "Trace", "TraceParseError", "UnsupportedOp",
    "attach", "cache_hits", "cache_misses", "compare", "compare_programs", "ddp", "execute_trace", "find_binary", "fsdp", "history", "import_traces",
    "jit", "last_backward_traces", "last_epilogue_traces", "last_prologue_traces", "last_traces", "load", "parse",
    "run_model", "run_world", "supported_ops", "transform_names", "world_info",
]
