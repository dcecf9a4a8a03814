"""Exceptions of thunder_viz (the engine's own come from the extension: OpError, ExecError, ...)."""


class TraceParseError(ValueError):
    """A Thunder printout that does not parse: `file`, `line`, `column` (1-based) and `message`."""

    def __init__(self, file, line, column, message):
        self.file, self.line, self.column, self.message = file, line, column, message
        super().__init__(f"{file}:{line}:{column}: {message}")


class UnsupportedOp(NotImplementedError):
    """A torch call thunder_viz.jit cannot record: `function`, `location` ("file:line") and the
    supported `alternatives` where known."""

    def __init__(self, function, location, code="", alternatives=(), detail=""):
        self.function, self.location, self.alternatives = function, location, list(alternatives)
        msg = f"{function} is not supported by thunder_viz.jit (called at {location}"
        msg += f": {code.strip()})" if code else ")"
        if detail:
            msg += f": {detail}"
        if self.alternatives:
            msg += ". Supported alternatives: " + ", ".join(self.alternatives)
        super().__init__(msg)


class RecordedCallError(RuntimeError):
    """A torch call that failed while thunder_viz.jit recorded the forward (the call itself is
    wrong, as it would be in eager mode): `function`, `location` ("file:line"), `arguments` (the
    tensor arguments as "float32[2, 5]") and torch's own `reason`."""

    def __init__(self, function, location, code, arguments, reason, hint=""):
        self.function, self.location, self.arguments, self.reason = function, location, list(arguments), reason
        msg = f"{function} failed at {location}"
        msg += f" ({code.strip()})" if code else ""
        msg += f": {reason}"
        if self.arguments:
            msg += f"; its tensor arguments: {', '.join(self.arguments)}"
        if hint:
            msg += f". {hint}"
        super().__init__(msg)


class EagerMismatch(RuntimeError):
    """The engine's outputs of a newly recorded call differ from those eager torch computed while it
    was recorded: a wrong number, refused rather than returned. `checks` are the failing outputs'
    TensorChecks (max_abs, max_rel, tolerance)."""

    def __init__(self, module, checks, rounding=None):
        self.checks = list(checks)
        # eager torch's own rounding of each failing output (the module's dtypes against float64), when measured
        self.rounding = list(rounding) if rounding is not None else None
        worst = ", ".join(f"{c.name} (max abs {c.max_abs:.3g}, max rel {c.max_rel:.3g}, tolerance {c.tolerance:.3g}"
                          + (f", eager's own rounding {r:.3g}" if self.rounding is not None else "") + ")"
                          for c, r in zip(self.checks, self.rounding or [None] * len(self.checks)))
        super().__init__(
            f"thunder_viz: the engine's result of {module}'s first call with these inputs differs from eager torch's "
            f"(computed while recording): {worst}. No number is returned. The recorded program is "
            f"thunder_viz.last_traces(tm)[0]; an op whose execution differs from eager (an engine rule, or "
            f"LibTorch's operator called directly) is the cause: please report it with that trace")
