"""Ctrl-C at any moment: seconds from SIGINT to exit, and the exit code.

Runs ``numguard bisect`` on a model (default: SqueezeNet with seeded weights
under ToMixedPrecision) and sends SIGINT at each of ``--at`` seconds after
the start, one run per moment, as a terminal's Ctrl-C does (the child starts
with SIGINT at its default: a shell script's background job would ignore it).
Target: exit 130 within 3 s of the signal, at every moment.

    .venv/bin/python benchmarks/interrupt_latency.py --at 3,5,7,20
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NUMGUARD = os.path.join(os.path.dirname(sys.executable), "numguard")
TARGET_S = 3.0


def one(model: str, at: float, extra: list, workdir: str) -> tuple:
    command = [NUMGUARD, "bisect", model, "--low", "0", "--high", "1", *extra]
    child = subprocess.Popen(command, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(at)
    if child.poll() is not None:
        return None, child.returncode, "ended before the signal"
    sent = time.perf_counter()
    child.send_signal(signal.SIGINT)
    _, err = child.communicate()
    took = time.perf_counter() - sent
    time.sleep(0.5)
    left = subprocess.run(["pgrep", "-f", f"{NUMGUARD} bisect {model}"], capture_output=True, text=True).stdout.split()
    if left:  # forked workers that outlived the run
        err += f"\n{len(left)} worker process(es) left running"
        took = None
    progress = [ln for ln in err.splitlines() if ln.startswith("numguard: [")]
    return took, child.returncode, (progress[-1] if progress else "") + " | " + err.strip().splitlines()[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--at", default="3,5,7,20", help="seconds after the start to send SIGINT at")
    parser.add_argument("--model", default=None, help="an ONNX model (default: SqueezeNet, seeded weights)")
    parser.add_argument("--pipeline", default="ToMixedPrecision,default")
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="numguard-interrupt-")
    model = args.model
    if model is None:
        from tvm_numguard.testing import light_model

        model = light_model("squeezenet", directory=workdir)
    rows, met = [], True
    for at in [float(t) for t in args.at.split(",")]:
        took, code, last = one(model, at, ["--pipeline", args.pipeline], workdir)
        ok = took is not None and code == 130 and took <= TARGET_S
        met &= ok
        rows.append(f"at {at:5.1f} s  exit {code}  after {'-' if took is None else f'{took:5.2f}'} s  "
                    f"{'OK' if ok else 'NOT met'}  ({last[:150]})")
    print("\n".join(rows))
    print(f"every SIGINT ends numguard with 130 within {TARGET_S:g} s: {'met' if met else 'NOT met'}")
    leftovers = [f for f in os.listdir(workdir) if f.startswith(".numguard-")]
    print(f"half-written files left: {len(leftovers)}")
    return 0 if met and not leftovers else 1


if __name__ == "__main__":
    sys.exit(main())
