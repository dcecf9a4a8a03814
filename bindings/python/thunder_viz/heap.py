"""The process's heap policy, set at the first call of a jitted module.

glibc's malloc gives back to the system the memory at the top of its heap once more than a
threshold of it is free, and the next step faults those pages in again. A call of the engine frees
everything it made at its end, so on the CPU a training step of the door's benchmark transformer
gave back and faulted in again about 3 MB a step (750 page faults, 8 % of the step on a virtual
machine) where eager torch's steps, which keep the top of their heap in use, fault none.
keep_freed_memory() sets malloc's thresholds as the tunables glibc.malloc.trim_threshold=64 MiB and
glibc.malloc.mmap_threshold=8 MiB would: up to 64 MiB of freed memory stays in the heap for the
next step, and blocks up to 8 MiB come from the heap. It applies to the whole process, eager torch's
calls included. Not done where the process chose a malloc policy of its own (GLIBC_TUNABLES with a
glibc.malloc setting, MALLOC_TRIM_THRESHOLD_ or MALLOC_MMAP_THRESHOLD_ set), with
THUNDER_VIZ_HEAP=system, or where the C library is not glibc."""
import ctypes
import os
import platform

TRIM_THRESHOLD = 64 << 20
MMAP_THRESHOLD = 8 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # (malloc.h)

_decided = None  # None until the first call; then whether the thresholds were set


def keep_freed_memory():
    """Sets the thresholds once per process (see the module's text); whether they are set."""
    global _decided
    if _decided is None:
        _decided = not _policy_chosen_elsewhere() and _set_thresholds()
    return _decided


def _policy_chosen_elsewhere():
    """Whether the process keeps a malloc policy of its own, or the C library is not glibc."""
    if os.environ.get("THUNDER_VIZ_HEAP") == "system" or "glibc.malloc." in os.environ.get("GLIBC_TUNABLES", ""):
        return True
    if any(name in os.environ for name in ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_",
                                           "MALLOC_MMAP_MAX_")):
        return True
    return platform.libc_ver()[0] != "glibc"


def _set_thresholds():
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
