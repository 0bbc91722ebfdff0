"""SIGTERM `relcol ingest --jobs 2 [--portable]` at random moments; count exit codes and leftovers.

    python tests/benchmarks/sigterm_trials.py TRIALS [--portable] [--study tests/data/tiny.toml]

Each trial starts an ingest of the study into a new warehouse in its own session, sends
SIGTERM to it after a uniform 1–6 s, and records its exit status (a process ended by the
signal itself reports -15, which a shell shows as 143; relcol's portable parent exits 143) and
every process of its session still running a second later (zombies, ``<defunct>``, are dead
and only wait for their new parent to reap them; they are listed apart). Not a test: it takes
about 8 s a trial.
"""

from __future__ import annotations

import argparse
import collections
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_report import RELCOL

TINY = Path(__file__).resolve().parents[1] / "data" / "tiny.toml"


def session(sid: int) -> tuple[list[str], int]:
    rows = subprocess.run(
        ["ps", "-eo", "pid,sid,stat,args"], capture_output=True, text=True, check=True
    ).stdout.splitlines()[1:]
    mine = [r.split(None, 3) for r in rows if int(r.split()[1]) == sid]
    running = [r[3] for r in mine if not r[2].startswith("Z")]
    return running, len(mine) - len(running)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trials", type=int)
    parser.add_argument("--portable", action="store_true")
    parser.add_argument("--study", default=str(TINY))
    args = parser.parse_args()
    codes: collections.Counter[int] = collections.Counter()
    left = zombies = 0
    root = Path(tempfile.mkdtemp(prefix="relcol-sigterm-"))
    try:
        for trial in range(args.trials):
            command = [RELCOL, "ingest", "--study", args.study, "--jobs", "2", "--quiet"]
            command += ["--warehouse", str(root / f"wh{trial}")]
            command += ["--portable"] if args.portable else []
            child = subprocess.Popen(
                command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
            )
            time.sleep(random.uniform(1.0, 6.0))
            child.send_signal(signal.SIGTERM)
            _, err = child.communicate(timeout=300)
            time.sleep(1.0)
            running, dead = session(child.pid)
            codes[child.returncode] += 1
            left += len(running)
            zombies += dead
            last = err.decode().strip().splitlines()[-1:] or [""]
            print(f"trial {trial}: exit {child.returncode}, running after 1 s: {running}, "
                  f"zombies: {dead}; stderr's last line: {last[0][:120]}", flush=True)  # fmt: skip
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"exit statuses: {dict(codes)}; processes left running: {left}; zombies: {zombies}")


if __name__ == "__main__":
    main()
