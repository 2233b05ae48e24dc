"""Resident memory of this process (Linux `/proc/self`): current RSS and the peak growth of one call
(on a CUDA device: torch's allocator peak instead, `retrofit.hosts.device.cuda_peak_growth_mib`).

RSS tracks live tensor memory only if the process serves large allocations with mmap and hands
freed memory back at once: `make_rss_track_live_memory` sets that up (glibc, process-wide; it
slows allocation-heavy code, so call it after any timing).
"""

import ctypes
import gc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from retrofit.hosts.device import cuda_peak_growth_mib, is_cuda

PROC_STATUS, CLEAR_REFS = Path("/proc/self/status"), Path("/proc/self/clear_refs")


def make_rss_track_live_memory() -> None:
    """glibc (process-wide): serve allocations >= 64 KiB with mmap and return freed memory at once."""
    libc = ctypes.CDLL("libc.so.6")
    m_trim_threshold, m_mmap_threshold = -1, -3
    libc.mallopt(m_mmap_threshold, 1 << 16)
    libc.mallopt(m_trim_threshold, 1 << 16)


def check_linux() -> None:
    """RuntimeError unless `/proc/self/clear_refs` (peak-RSS reset) exists."""
    if not CLEAR_REFS.exists():
        raise RuntimeError("peak-memory growth needs Linux (/proc/self/clear_refs, VmHWM).")


def rss_mib() -> float:
    """Resident memory now (MiB), after a garbage collection and a heap trim."""
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    return status_kib("VmRSS") / 1024


def peak_growth_mib(fn: Callable[[], Any], device: str = "cpu") -> float:
    """Peak memory growth (MiB) during one call of fn, its result included: of the process RSS on
    the CPU, of torch's allocated memory on a CUDA `device` (where the tensors live)."""
    if is_cuda(device):
        return cuda_peak_growth_mib(fn, device)
    before = rss_mib()  # hands back memory freed before the call
    CLEAR_REFS.write_text("5")  # reset VmHWM to the current RSS
    out = fn()
    peak = status_kib("VmHWM")
    del out
    return peak / 1024 - before


def status_kib(field: str) -> int:
    line = next(line for line in PROC_STATUS.read_text().splitlines() if line.startswith(field + ":"))
    return int(line.split()[1])
