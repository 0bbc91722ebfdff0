"""The numeric environment behind a model's last bits, and how to pin it.

With the same package versions, two machines can still give a model's probabilities in
different last bits: OpenBLAS picks a kernel per CPU (the order of a GEMM's additions),
glibc's libm picks FMA or plain code paths for ``exp`` and ``log``, numpy dispatches loops per
CPU. ``numerics()`` records what was in effect; ``portable_environment()`` gives the variables
that pin all three to the code every x86-64 CPU runs (OpenBLAS's generic kernel, glibc's plain
libm, numpy's baseline loops), so a study ingested under them gives the same bytes on any
x86-64 Linux machine with the same packages and C library (one container image). They must be
set before the process starts (glibc reads its tunables when it loads), which is why
``relcol ingest --portable`` runs the ingest in a child process.
"""

from __future__ import annotations

import importlib
import os
import platform
import sys
from importlib import metadata

from threadpoolctl import threadpool_info

from relcol.errors import ParameterError

#: Set (to "1") in a process started with the portable environment.
PORTABLE = "RELCOL_PORTABLE"

#: The glibc tunable that keeps libm on its plain code paths.
_HWCAPS = "glibc.cpu.hwcaps=-AVX2,-FMA,-AVX512F,-AVX512VL,-AVX512DQ"

#: The packages whose versions a run records.
PACKAGES = ("relcol", "numpy", "polars", "duckdb", "pyarrow", "scikit-learn", "lightgbm", "scipy")


def versions() -> dict[str, str]:
    """The installed version of each of ``PACKAGES`` ("not installed" where it is absent)."""
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def numerics() -> dict[str, str]:
    """What decides a model's last bits besides the package versions: the BLAS kernels loaded,
    the C library, the architecture, and whether the portable environment was in effect.
    Recorded beside the versions in the runs record, so two warehouses whose predictions
    differ in their last bits say why."""
    blas = sorted(
        {
            f"{lib['internal_api']} {lib['version']} {lib.get('architecture') or ''}".strip()
            for lib in threadpool_info()
            if lib["user_api"] == "blas"
        }
    )
    libc = " ".join(part for part in platform.libc_ver() if part)
    # what is in effect, not the marker: the variables may also have been set by hand
    pinned = os.environ.get("OPENBLAS_CORETYPE") == "Prescott" and _HWCAPS in os.environ.get(
        "GLIBC_TUNABLES", ""
    )
    portable = "yes" if pinned and os.environ.get("NPY_DISABLE_CPU_FEATURES") else "no"
    return {
        "blas": "; ".join(blas),
        "libc": libc,
        "machine": platform.machine(),
        "portable": portable,
    }


def portable_environment() -> dict[str, str]:
    """The environment variables that pin the numeric code paths (x86-64 Linux only).

    Raises
    ------
    ParameterError
        On another platform, where these variables would not pin anything.
    """
    if not sys.platform.startswith("linux") or platform.machine() != "x86_64":
        raise ParameterError(
            "--portable pins OpenBLAS's and glibc's x86-64 code paths; it is not available on "
            f"{sys.platform} {platform.machine()}."
        )
    tunables = ":".join(part for part in (os.environ.get("GLIBC_TUNABLES"), _HWCAPS) if part)
    env = {
        PORTABLE: "1",
        "OPENBLAS_CORETYPE": "Prescott",  # the generic x86-64 kernel (SSE3)
        "GLIBC_TUNABLES": tunables,  # the user's own tunables kept, the hwcaps mask last
    }
    if dispatched := cpu_dispatch():
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(dispatched)
    return env


def cpu_dispatch() -> list[str]:
    """The CPU targets numpy dispatches to above its baseline (AVX2, AVX-512 …): a private
    name, so guarded; numpy 2 keeps it in ``numpy._core``, 1.26 in ``numpy.core``."""
    for module in ("numpy._core._multiarray_umath", "numpy.core._multiarray_umath"):
        try:
            return list(importlib.import_module(module).__cpu_dispatch__)
        except (ImportError, AttributeError):
            continue
    return []
