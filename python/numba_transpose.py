#!/usr/bin/env python3
"""Chapter 3's tiled transpose written in Numba, beside the course's CUDA C++ kernels.

The Numba kernels and the C++ kernels of kernels/transpose.cu (compiled by NVRTC through
cupy.RawModule) run in this one process on the same buffers. Each kernel's output is checked
against NumPy's transpose; then each is timed with CUDA events at the size chapter 3 times, and
one table compares them. With --profile, each kernel is instead launched once, at the size
chapter 3 profiles, for Nsight Compute: python/README.md gives the ncu command, and
python/ncu_table.py reads its CSV.

Both sizes are read from crates/lesson-03-transpose/src/lib.rs, the package versions from
python/requirements.txt.
"""

import argparse
import re
import statistics
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from ncu_table import format_table, title

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
REQUIREMENTS = HERE / "requirements.txt"
LESSON = ROOT / "crates" / "lesson-03-transpose" / "src" / "lib.rs"
KERNEL_FILE = ROOT / "kernels" / "transpose.cu"
INSTALL = "pip install -r python/requirements.txt"

TILE = 32  # as TILE and BLOCK_ROWS in kernels/transpose.cu and the lesson crate
BLOCK_ROWS = 8
WARMUP = 3  # untimed launches before the timed ones, as the course's own timing
REPS = 15


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--profile",
        action="store_true",
        help="launch each kernel once at chapter 3's profiling size (for ncu), instead of timing",
    )
    return parser.parse_args()


def pinned_versions() -> dict[str, str]:
    """The `name==version` lines of python/requirements.txt (`name[extra]==version` gives `name`)."""
    pins = {}
    for line in REQUIREMENTS.read_text(encoding="utf-8").splitlines():
        requirement = line.split("#", 1)[0].strip()
        if not requirement:
            continue
        name, pinned, version = requirement.partition("==")
        if not pinned:
            sys.exit(f"{REQUIREMENTS.relative_to(ROOT)}: `{requirement}` is not pinned as name==version")
        pins[name.split("[", 1)[0].strip()] = version.strip()
    return pins


def installed_versions(pins: dict[str, str]) -> dict[str, str]:
    """The installed version of each pinned package; exits naming any that is missing."""
    installed, missing = {}, []
    for name in pins:
        try:
            installed[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            missing.append(name)
    if missing:
        verb = "is" if len(missing) == 1 else "are"
        sys.exit(f"{', '.join(missing)} {verb} not installed: {INSTALL}")
    return installed


# --help answers, and a missing package is named, before the GPU packages are imported.
ARGUMENTS = parse_arguments()
PINS = pinned_versions()
INSTALLED = installed_versions(PINS)

try:
    import cupy as cp
    import numpy as np
    from numba import cuda, float32
except ImportError as error:
    sys.exit(f"numba_transpose.py: failed while importing the GPU packages:\n{error}\n({INSTALL})")


# ANCHOR: tiled
@cuda.jit(device=True, inline="always")
def transpose_through(tile, source, target):
    """The C++ `transpose_tiled<PAD>`: rows of `source` into `tile`, its columns out as rows."""
    x = cuda.blockIdx.x * TILE + cuda.threadIdx.x
    y = cuda.blockIdx.y * TILE + cuda.threadIdx.y
    for j in range(0, TILE, BLOCK_ROWS):
        tile[cuda.threadIdx.y + j, cuda.threadIdx.x] = source[y + j, x]
    cuda.syncthreads()
    x = cuda.blockIdx.y * TILE + cuda.threadIdx.x
    y = cuda.blockIdx.x * TILE + cuda.threadIdx.y
    for j in range(0, TILE, BLOCK_ROWS):
        target[y + j, x] = tile[cuda.threadIdx.x, cuda.threadIdx.y + j]


@cuda.jit
def transpose_tile32(source, target):
    transpose_through(cuda.shared.array((32, 32), float32), source, target)


@cuda.jit
def transpose_padded(source, target):
    transpose_through(cuda.shared.array((32, 33), float32), source, target)
# ANCHOR_END: tiled


# ANCHOR: swizzled
@cuda.jit
def transpose_swizzled(source, target):
    """Element (row, column) of the tile is stored at column `column ^ row`."""
    tile = cuda.shared.array((32, 32), float32)
    x = cuda.blockIdx.x * TILE + cuda.threadIdx.x
    y = cuda.blockIdx.y * TILE + cuda.threadIdx.y
    for j in range(0, TILE, BLOCK_ROWS):
        row = cuda.threadIdx.y + j
        tile[row, cuda.threadIdx.x ^ row] = source[y + j, x]
    cuda.syncthreads()
    x = cuda.blockIdx.y * TILE + cuda.threadIdx.x
    y = cuda.blockIdx.x * TILE + cuda.threadIdx.y
    for j in range(0, TILE, BLOCK_ROWS):
        column = cuda.threadIdx.y + j
        target[y + j, x] = tile[cuda.threadIdx.x, column ^ cuda.threadIdx.x]
# ANCHOR_END: swizzled


# The tile kernels of kernels/transpose.cu, by their names there, which the Numba kernels share.
NUMBA_KERNELS = {
    "transpose_tile32": transpose_tile32,
    "transpose_padded": transpose_padded,
    "transpose_swizzled": transpose_swizzled,
}


@contextmanager
def step(what: str) -> Iterator[None]:
    """Runs a step; a failure exits with what the step was doing."""
    try:
        yield
    except Exception as error:
        sys.exit(f"numba_transpose.py: failed while {what}:\n{type(error).__name__}: {error}")


@dataclass(frozen=True)
class Kernel:
    name: str
    language: str
    launch: Callable[[], None]  # enqueues one launch on the default stream

    @property
    def label(self) -> str:
        return f"{self.name} ({self.language})"


@dataclass(frozen=True)
class Buffers:
    """An n x n input, an output, and what the output must be."""

    n: int
    source: "cp.ndarray"
    target: "cp.ndarray"
    expected: "np.ndarray"


def lesson_constant(name: str) -> int:
    """A `const NAME: u32 = ...;` of lesson 3's crate: a number, or the name of another constant."""
    text = LESSON.read_text(encoding="utf-8")
    match = re.search(rf"\bconst {name}: u32 = (\w+);", text)
    if match is None:
        raise ValueError(f"no `const {name}: u32 = ...;` in {LESSON.relative_to(ROOT)}")
    value = match.group(1)
    return int(value) if value.isdigit() else lesson_constant(value)


def lesson_size() -> int:
    """Chapter 3's matrix side: the profiled size with --profile, else the timed size."""
    with step(f"reading the matrix size and tile from {LESSON.relative_to(ROOT)}"):
        if (lesson_constant("TILE"), lesson_constant("BLOCK_ROWS")) != (TILE, BLOCK_ROWS):
            raise ValueError(f"the lesson's TILE and BLOCK_ROWS are no longer {TILE} and {BLOCK_ROWS}")
        n = lesson_constant("PROFILED_N" if ARGUMENTS.profile else "TIMED_N")
        if n % TILE:
            raise ValueError(f"the matrix side {n} is not a multiple of {TILE}")
        return n


def nvidia_driver() -> str:
    """The driver's version from /proc/driver/nvidia/version (Linux) as ", NVIDIA driver 580.65.06", or ""."""
    try:
        text = Path("/proc/driver/nvidia/version").read_text(encoding="utf-8")
    except OSError:
        return ""
    match = re.search(r"Kernel Module.*?\s(\d+\.\d+(?:\.\d+)?)\s", text)
    return f", NVIDIA driver {match.group(1)}" if match else ""


def cuda_version(encoded: int) -> str:
    """CUDA's 13000 as "13.0"."""
    return f"{encoded // 1000}.{encoded % 1000 // 10}"


def print_environment() -> None:
    """The GPU, its driver, and the versions of CUDA and of the pinned packages this run used."""
    with step("opening the GPU (CuPy)"):
        device = cp.cuda.Device()
        properties = cp.cuda.runtime.getDeviceProperties(device.id)
        driver = cuda_version(cp.cuda.runtime.driverGetVersion())
        runtime = cuda_version(cp.cuda.runtime.runtimeGetVersion())
        nvrtc = ".".join(map(str, cp.cuda.nvrtc.getVersion()))
    name = properties["name"].decode() if isinstance(properties["name"], bytes) else properties["name"]
    sms = properties["multiProcessorCount"]
    print(title("Numba and CUDA C++ on the GPU"))
    print(f"{name} (sm_{device.compute_capability}, {sms} SMs{nvidia_driver()}, CUDA {driver} driver)")
    print(f"CuPy's CUDA runtime {runtime}, NVRTC {nvrtc}")
    versions = []
    for package, pinned in PINS.items():
        installed = INSTALLED[package]
        note = "" if installed == pinned else f" (requirements.txt pins {pinned})"
        versions.append(f"{package} {installed}{note}")
    print(f"Python {sys.version.split()[0]}, {', '.join(versions)}")


def make_buffers(n: int) -> Buffers:
    """A random input on the GPU, room for the output, and NumPy's transpose of the input."""
    with step(f"making a {n} x {n} input and its transpose (NumPy), and copying it to the GPU (CuPy)"):
        host = np.random.default_rng(3).random((n, n), dtype=np.float32)
        return Buffers(n, cp.asarray(host), cp.empty_like(host), np.ascontiguousarray(host.T))


def cpp_kernels(buffers: Buffers) -> dict[str, Kernel]:
    """The C++ tile kernels, compiled from kernels/transpose.cu by NVRTC."""
    with step(f"compiling {KERNEL_FILE.relative_to(ROOT)} with NVRTC (cupy.RawModule)"):
        module = cp.RawModule(code=KERNEL_FILE.read_text(encoding="utf-8"))
        functions = {name: module.get_function(name) for name in NUMBA_KERNELS}
    grid, block = (buffers.n // TILE, buffers.n // TILE), (TILE, BLOCK_ROWS)
    arguments = (buffers.source, buffers.target, np.uint32(buffers.n))

    def launcher(function: "cp.RawKernel") -> Callable[[], None]:
        return lambda: function(grid, block, arguments)

    return {name: Kernel(name, "C++", launcher(function)) for name, function in functions.items()}


def numba_kernels(buffers: Buffers) -> dict[str, Kernel]:
    """The Numba kernels above, on the same buffers (viewed once, so a launch adds no sync)."""
    with step("handing CuPy's buffers to Numba (cuda.as_cuda_array)"):
        source, target = cuda.as_cuda_array(buffers.source), cuda.as_cuda_array(buffers.target)
    grid, block = (buffers.n // TILE, buffers.n // TILE), (TILE, BLOCK_ROWS)

    def launcher(kernel: Callable) -> Callable[[], None]:
        return lambda: kernel[grid, block](source, target)

    return {name: Kernel(name, "Numba", launcher(kernel)) for name, kernel in NUMBA_KERNELS.items()}


def check(kernel: Kernel, buffers: Buffers) -> None:
    """Launches `kernel` once (Numba compiles it then) and compares its output with NumPy's."""
    with step(f"launching {kernel.label} once and copying its output back"):
        # All bits set is a NaN: an element the kernel leaves unwritten cannot match.
        buffers.target.data.memset_async(0xFF, buffers.target.nbytes)
        kernel.launch()
        output = cp.asnumpy(buffers.target)
    wrong = np.argwhere(output != buffers.expected)
    if len(wrong):
        row, column = wrong[0]
        sys.exit(
            f"numba_transpose.py: {kernel.label} is wrong at {len(wrong)} of {buffers.n**2} elements, "
            f"the first at [{row}, {column}]: {output[row, column]} where numpy.transpose has "
            f"{buffers.expected[row, column]}"
        )


def time_ms(kernel: Kernel) -> tuple[float, float]:
    """Median milliseconds of REPS launches after WARMUP, and their spread, (max - min) / median.

    Both languages launch on the default stream, where CuPy's events are recorded. No launch
    waits for the one before, so while a kernel runs the next one is already queued: each event
    pair brackets one kernel's run, not Python's time to launch it.
    """
    with step(f"timing {kernel.label}"):
        for _ in range(WARMUP):
            kernel.launch()
        events = [(cp.cuda.Event(), cp.cuda.Event()) for _ in range(REPS)]
        for start, end in events:
            start.record()
            kernel.launch()
            end.record()
        events[-1][1].synchronize()
        times = [cp.cuda.get_elapsed_time(start, end) for start, end in events]
    median = statistics.median(times)
    return median, (max(times) - min(times)) / median


def timing_table(kernels: list[Kernel]) -> str:
    """Each kernel's median and spread, and its time over the C++ unpadded tile's."""
    times = {kernel.label: time_ms(kernel) for kernel in kernels}
    reference, _ = times["transpose_tile32 (C++)"]
    rows = []
    for kernel in kernels:
        median, spread = times[kernel.label]
        rows.append([kernel.name, kernel.language, f"{median:.3f}", f"{spread:.0%}", f"{median / reference:.2f}"])
    headers = ["kernel", "language", "median ms", "spread", "time / C++ tile32"]
    return format_table(headers, rows)


def main() -> None:
    print_environment()
    n = lesson_size()
    buffers = make_buffers(n)
    cpp, numba = cpp_kernels(buffers), numba_kernels(buffers)
    kernels = [kernel for name in NUMBA_KERNELS for kernel in (cpp[name], numba[name])]
    for kernel in kernels:
        check(kernel, buffers)
    print(f"Every kernel's output matched numpy.transpose ({n} x {n} 4-byte elements).")
    if ARGUMENTS.profile:
        print(f"Launched each kernel once, in this order: {', '.join(k.label for k in kernels)}.")
        return
    print()
    print(title(f"{n} x {n} 4-byte elements, median of {REPS} launches after {WARMUP} warm-up launches"))
    print(timing_table(kernels))


if __name__ == "__main__":
    main()
