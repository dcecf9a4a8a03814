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
