"""One rank per process under an initialised torch.distributed group (torchrun, SLURM, or plain
environment variables): the engine's collectives, the averaged eager reference and the merged capture.

The engine does not run its collectives through torch's ProcessGroup object: it joins a group of its
own (the engine's gloo, or NCCL on LOCAL_RANK's GPU) over the same TCP store, MASTER_ADDR:MASTER_PORT,
with keys under a prefix of their own (the C++ side: dist/launch.h). That happens once per process, at
the first jitted call, or earlier with join() (to choose the timeout). What Python exchanges
besides (the eager gradients to average, each rank's capture) goes through torch.distributed.
"""
import atexit
import datetime
import os

import torch

from . import _thunder_viz as _C

DEFAULT_TIMEOUT_SECONDS = 60


def active():
    """Whether torch.distributed has a group of more than one process in this process."""
    d = torch.distributed
    return d.is_available() and d.is_initialized() and d.get_world_size() > 1


def joined():
    """Whether this process's jitted modules run their collectives over the process group."""
    return _C.world_kind() == "processes"


def join(timeout_seconds=DEFAULT_TIMEOUT_SECONDS):
    """Joins the engine's group beside torch.distributed's (every rank must call it, or make its first
    jitted call, at the same point). A rank that does not come within the timeout is named in the
    error. Does nothing outside a process group of more than one process or when already joined."""
    if not active() or _C.world_kind() != "single":
        return
    d = torch.distributed
    missing = [name for name in ("MASTER_ADDR", "MASTER_PORT") if not os.environ.get(name)]
    if missing:
        raise RuntimeError(f"thunder_viz under torch.distributed: {' and '.join(missing)} not set; the engine joins "
                           "its ranks through the TCP store at MASTER_ADDR:MASTER_PORT (initialise the group with "
                           "init_method='env://', as torchrun does)")
    backend = "nccl" if d.get_backend() == "nccl" and _C.nccl_available() else "gloo"
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    _C.join_process_group(d.get_rank(), d.get_world_size(), int(os.environ.get("LOCAL_RANK", d.get_rank())),
                          os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), backend,
                          f"thunder-viz/python/attempt_{attempt}", int(timeout_seconds))
    atexit.register(_C.leave_process_group)


def check_launch():
    """RuntimeError when the environment says this process is one of several ranks (torchrun's
    WORLD_SIZE) but torch.distributed has no group: each process would train alone, its gradients
    not averaged."""
    world = os.environ.get("WORLD_SIZE", "1")
    if world.isdigit() and int(world) > 1 and not active():
        raise RuntimeError(
            f"thunder_viz: WORLD_SIZE={world} says this process is one of {world} ranks (torchrun), but "
            "torch.distributed is not initialised: call torch.distributed.init_process_group() (backend 'gloo' "
            "on CPUs, 'nccl' on GPUs) before the first call of a ddp or fsdp module; without it each process "
            "would train alone and its gradients would not be averaged")


def start_from_rank0(named, what):
    """Before a ddp or fsdp module's first recording: checks that every rank holds tensors of the
    same names, shapes and dtypes (ValueError naming the first that differs, and the rank), then
    gives every rank rank 0's values, as torch's DistributedDataParallel does when it wraps a module.
    A collective: every rank calls it at its first call."""
    d = torch.distributed
    mine = [(n, list(t.shape), str(t.dtype).replace("torch.", "")) for n, t in named]
    every = _from_every_rank(mine)
    rank = d.get_rank()
    for other, theirs in enumerate(every):
        if theirs == mine:
            continue
        if [n for n, _, _ in theirs] != [n for n, _, _ in mine]:
            only = sorted(set(n for n, _, _ in mine) ^ set(n for n, _, _ in theirs)) or ["(the same, in another order)"]
            detail = f"their names differ: {', '.join(only[:5])}"
        else:
            a, b = next((a, b) for a, b in zip(mine, theirs) if a != b)
            detail = f"'{a[0]}' is {a[2]}{a[1]} on rank {rank} and {b[2]}{b[1]} on rank {other}"
        raise ValueError(f"thunder_viz: the ranks hold different parameters or buffers of {what}: {detail}; every "
                         "rank must build the same model (the same constructor arguments) before its first call")
    with torch.no_grad():
        for _, t in named:
            d.broadcast(t.detach(), 0)


def check_same_collectives(calls, what):
    """Before a ddp or fsdp entry's first run: ValueError when the ranks built programs whose
    collectives differ (a forward that branches on this rank's batch size), which would stop the
    ranks' transport mid-collective. A collective: every rank calls it after its build."""
    every = _from_every_rank(list(calls))
    rank = torch.distributed.get_rank()
    for other, theirs in enumerate(every):
        if theirs == list(calls):
            continue
        at = next((i for i, (a, b) in enumerate(zip(calls, theirs)) if a != b), min(len(calls), len(theirs)))
        mine_at = calls[at] if at < len(calls) else "nothing"
        theirs_at = theirs[at] if at < len(theirs) else "nothing"
        raise ValueError(
            f"thunder_viz: the ranks recorded different programs for {what}: collective {at + 1} is {mine_at} on rank "
            f"{rank} and {theirs_at} on rank {other} ({len(calls)} and {len(theirs)} collectives); the forward took "
            "another path on one rank (a branch on the batch size or on data, a parameter used on one rank only): "
            "every rank must run the same computation on inputs of the same structure")


def _from_every_rank(value):
    """Every rank's `value` (a picklable object), in rank order: a collective."""
    every = [None] * torch.distributed.get_world_size()
    torch.distributed.all_gather_object(every, value)
    return every


def _device():
    """Where torch.distributed's collectives take tensors (NCCL: this rank's GPU)."""
    if torch.distributed.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def mean_over_ranks(tensors):
    """The mean over the ranks of each tensor (every rank calls it with tensors of the same shapes)."""
    if not tensors:
        return []
    world = torch.distributed.get_world_size()
    flat = torch.cat([t.detach().reshape(-1).to(_device(), torch.float64) for t in tensors])
    torch.distributed.all_reduce(flat)
    flat = flat / world
    out, at = [], 0
    for t in tensors:
        out.append(flat[at:at + t.numel()].reshape(t.shape).to(t.device, t.dtype))
        at += t.numel()
    return out


def merged_capture(local, timeout_seconds=DEFAULT_TIMEOUT_SECONDS):
    """Every rank's capture gathered to rank 0 and merged (rank 0 gets the merged one, the others their
    own). A collective: every rank calls it; a rank that does not come within the timeout is named."""
    d = torch.distributed
    if d.get_backend() == "gloo":
        # Names the ranks that never came instead of waiting on all_gather_object for torch's 30 minutes.
        d.monitored_barrier(timeout=datetime.timedelta(seconds=timeout_seconds), wait_all_ranks=True)
    texts = _from_every_rank(local.to_json())
    if d.get_rank() != 0:
        return local
    return _C.merge_rank_captures(texts)
