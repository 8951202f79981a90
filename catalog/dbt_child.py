"""`memc-dbt`: the dbt that builds run, ended with the process that started it.

dagster-dbt starts dbt as a child process. When a build is killed (``kill -9``, the OOM killer),
nothing ends that child: dbt ran on for about ten seconds after its build was gone, still
holding DuckDB's write lock, and the next build failed on it. This wrapper asks the kernel for
SIGTERM when its parent dies (Linux ``PR_SET_PDEATHSIG``, kept across exec), then replaces
itself with the dbt beside this interpreter, so dbt itself receives the signal. Elsewhere it
only runs dbt. catalog/dbt_project.dbt_executable() names it to dagster-dbt.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from pathlib import Path

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def main() -> None:
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
        if os.getppid() != parent:  # the parent died before the request took hold
            sys.exit(f"memc-dbt: the process that started dbt (pid {parent}) is gone")
    dbt = Path(sys.executable).with_name("dbt")
    os.execv(dbt, [str(dbt), *sys.argv[1:]])


if __name__ == "__main__":
    main()
