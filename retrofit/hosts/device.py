"""Where a measurement ran, and clocks and peak memory that are right there.

    label = device_label("cuda")            # "cpu", or the CUDA model name ("NVIDIA H200")
    clock = device_clock("cuda")            # time.perf_counter after torch.cuda.synchronize()
    clock = device_clock("cpu", time.process_time)  # the CPU clock given: time.process_time
    mib = cuda_peak_growth_mib(fn, "cuda")  # peak allocated growth during fn (CUDA only)

CUDA runs kernels asynchronously: a clock read while kernels are queued measures the queueing,
not the work, so every timed region on CUDA is read with `device_clock` (which synchronizes
before each reading; `retrofit.measure.timing.interleaved_times(clock=...)` takes it), and peak
memory there is torch's allocator peak (`torch.cuda.max_memory_allocated`), not the process RSS.
"""

import time
from collections.abc import Callable
from typing import Any

import torch


def is_cuda(device: str | torch.device) -> bool:
    """Whether `device` ("cpu", "cuda", "cuda:1", a torch.device) is a CUDA device."""
    return torch.device(device).type == "cuda"


def device_label(device: str | torch.device) -> str:
    """What every results row says it ran on (its `device` column, `retrofit.labels.DEVICE_DOC`):
    "cpu", or the CUDA model name (`torch.cuda.get_device_name`) for a CUDA device."""
    return torch.cuda.get_device_name(torch.device(device)) if is_cuda(device) else "cpu"


def synchronize(device: str | torch.device) -> None:
    """Wait for every kernel queued on `device` (a no-op on CPU)."""
    if is_cuda(device):
        torch.cuda.synchronize(torch.device(device))


def device_clock(device: str | torch.device, cpu_clock: Callable[[], float] = time.perf_counter) -> Callable[[], float]:
    """The clock that times work on `device`: `cpu_clock` on the CPU (wall `time.perf_counter`, or a
    CPU-time clock such as `time.process_time` where a shared machine makes wall time noise); on
    CUDA, `time.perf_counter` read after `synchronize(device)`, whatever `cpu_clock` is (a CPU-time
    clock does not count the GPU's work). Read before and after a region, it times the work the
    region queued on `device`."""
    if not is_cuda(device):
        return cpu_clock

    def synchronized() -> float:
        synchronize(device)
        return time.perf_counter()

    return synchronized


def cuda_peak_growth_mib(fn: Callable[[], Any], device: str | torch.device) -> float:
    """Peak growth (MiB) of torch's CUDA allocated memory on `device` during one call of `fn`, its
    result included (`torch.cuda.reset_peak_memory_stats`, `max_memory_allocated`)."""
    device = torch.device(device)
    synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device)
    out = fn()
    synchronize(device)
    peak = torch.cuda.max_memory_allocated(device)
    del out
    return (peak - before) / 2**20
