"""Stop means stop, every wait is said: issue 47's measures, on float16 transformer blocks.

Models: the zoo's BERT block (``bert-layer``, a small transformers block) and
a one-block ViT the size of ViT-Base (hidden 768, 224x224 input, random
weights), both under ``ToMixedPrecision,default``: on a CPU float16 is
emulated, so every run of the ViT takes tens of seconds. Four measures:

  kill      ``numguard bisect`` on the ViT, sent SIGTERM, then (another run)
            SIGKILL, at five moments (``MOMENTS``: importing TVM, compiling,
            the first VM and runs, the float64 oracle, a bisection probe,
            each found by its progress line); after each, the
            processes still running that carry the run's marker in their
            environment (the command and every worker it forked), as ``ps``
            shows them. Targets: none left; SIGTERM exits 143 with its line
            within 3 s; no half-written file (``.numguard-*``).
  silence   a whole bisect of each model: every progress line with its time
            (the command's own ``[  1.2s]`` stamp) and the longest gap between
            two lines (up to the command's end). Target: under 10 s.
  estimate  in the same runs, the bisection's plan (``~N s`` in its first
            line) against the time it took. Target: within 2x.
  guard     ``tvm.compile`` of the ViT under ``ToMixedPrecision`` inside
            ``numguard.guard`` with ``--limit`` seconds (``auto``: the default
            limit, 20x the compile, at least 120 s): the time it took and the
            GuardWarning. Target: the limit + 10 s.

    .venv/bin/python benchmarks/stop_and_silence.py [--only kill,silence,guard] [--limit 60]
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NUMGUARD = os.path.join(os.path.dirname(sys.executable), "numguard")
PIPELINE = "ToMixedPrecision,default"
STAMP = re.compile(r"^numguard: \[\s*([\d.]+)s\] (.*)$")

VIT_BLOCK = """
import sys, torch, transformers as tf
torch.manual_seed(0)
config = tf.ViTConfig(image_size=224, patch_size=16, num_channels=3, hidden_size=768, num_hidden_layers=1,
                      num_attention_heads=12, intermediate_size=3072)
class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.model = tf.ViTModel(config, add_pooling_layer=False)
    def forward(self, x):
        return self.model(pixel_values=x).last_hidden_state
torch.export.save(torch.export.export(Block().eval(), (torch.rand(1, 3, 224, 224),)), sys.argv[1])
"""

GUARDED = """
import sys, time, warnings, torch, tvm
from tvm import relax
from tvm.relax.frontend.torch import from_exported_program
import tvm_numguard as numguard
limit = sys.argv[2] if sys.argv[2] == "auto" else float(sys.argv[2])
mod = from_exported_program(torch.export.load(sys.argv[1]))
pipeline = tvm.transform.Sequential([relax.transform.ToMixedPrecision(),
                                     relax.get_default_pipeline(tvm.target.Target("llvm"))])
started = time.perf_counter()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    with numguard.guard(0.0, 1.0, time_limit=limit) as g:
        tvm.compile(mod, "llvm", relax_pipeline=pipeline)
took = time.perf_counter() - started
for w in caught:
    print(f"{w.category.__name__}: {w.message}", flush=True)
print(f"TOOK {took:.1f}", flush=True)
print(f"LIMIT {g.progress.seconds}", flush=True)  # the last check's Deadline: its limit, auto's once set
"""


def models(folder: str) -> dict:
    """{name: .pt2 path} of the two blocks, exported into ``folder``."""
    from tvm_numguard.testing.zoo.blocks import export

    vit = os.path.join(folder, "vit-base-block.pt2")
    subprocess.run([sys.executable, "-c", VIT_BLOCK, vit], check=True, capture_output=True)
    return {"bert-layer": export("bert-layer", folder), "vit-base-block": vit}


class Run:
    """``numguard bisect`` on a model in ``folder``, its processes marked; stderr read as it comes."""

    def __init__(self, model: str, folder: str):
        self.marker = f"numguard-bench-{uuid.uuid4()}"
        self.folder = folder
        self.lines: list = []  # (seconds since start, line)
        self.started = time.perf_counter()
        self.child = subprocess.Popen(
            [NUMGUARD, "bisect", model, "--low", "0", "--high", "1", "--pipeline", PIPELINE,
             "--json", os.path.join(folder, "report.json")],
            cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONPATH": ROOT, "NUMGUARD_BENCH_MARK": self.marker})
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.child.stderr:
            self.lines.append((time.perf_counter() - self.started, line.rstrip("\n")))

    def end(self, timeout: float = 3600) -> float:
        """Wait for the command's end; the seconds since it started."""
        self.child.wait(timeout)
        self.reader.join(10)
        return time.perf_counter() - self.started

    def left_running(self) -> list:
        """``ps`` rows of the live processes that carry this run's marker."""
        pids = []
        for entry in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{entry}/environ", "rb") as env, open(f"/proc/{entry}/stat") as stat:
                    if self.marker.encode() in env.read() and stat.read().rsplit(")", 1)[1].split()[0] != "Z":
                        pids.append(entry)
            except OSError:
                continue
        if not pids:
            return []
        ps = subprocess.run(["ps", "-o", "pid,ppid,stat,etime,args", "-p", ",".join(pids)], capture_output=True,
                            text=True).stdout
        return [row[:160] for row in ps.splitlines()[1:]]


# the moments of a bisect to stop it at: (what it is doing, a progress line that starts it or
# None for the start itself, seconds after that line)
MOMENTS = (
    ("importing TVM", None, 1.5),
    ("TVM compiling the pipeline as written", "building the optimized model", 1.0),
    ("the search's first runs: TVM making the optimized build's VM", "searching the range", 3.0),
    ("the float64 oracle", "building the float64 oracle", 2.0),
    ("a bisection probe", "bisection probe 1 ", 2.0),
)


def wait_for(run: Run, line: str, seconds: float = 3600) -> bool:
    """Wait until ``run`` printed a line holding ``line`` (False: it ended before)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        if any(line in text for _, text in run.lines):
            return True
        if run.child.poll() is not None:
            return False
        time.sleep(0.05)
    return False


def kill_at(model: str, signum: int, moment: tuple) -> tuple:
    """(ok, lines to print): one run sent ``signum`` at ``moment`` (one of MOMENTS)."""
    doing, line, after = moment
    with tempfile.TemporaryDirectory(prefix="numguard-stop-") as folder:
        run = Run(model, folder)
        if line is not None and not wait_for(run, line):
            run.child.kill()
            return False, [f"  {doing}: the run ended before it"]
        time.sleep(after)
        if run.child.poll() is not None:
            return False, [f"  {doing}: the run ended before it"]
        shown = [text for _, text in run.lines if STAMP.match(text)]
        before = run.left_running()
        sent = time.perf_counter()
        run.child.send_signal(signum)
        run.child.wait(120)
        took = time.perf_counter() - sent
        run.reader.join(10)
        time.sleep(3.0)  # what is left three seconds later
        left = run.left_running()
        half = [f for f in os.listdir(folder) if f.startswith(".numguard-")]
    last = run.lines[-1][1] if run.lines else ""
    code = run.child.returncode
    if signum == signal.SIGTERM:
        ok = code == 143 and took <= 3.0 and last.startswith("numguard: terminated (SIGTERM)")
    else:
        ok = code == -signal.SIGKILL
    ok = ok and not left and not half
    out = [f"  {signal.Signals(signum).name} during {doing}, {sent - run.started:.1f} s in "
           f"(last line before: {shown[-1][:100] if shown else '-'})",
           f"    running before it: {len(before)} process(es) (numguard and its workers)",
           f"    exit {code} after {took:.2f} s; last line: {last[:140]}",
           f"    half-written files: {len(half)}; ps of the run's processes 3 s later: "
           + ("(none)" if not left else "")] + [f"      {row}" for row in left]
    return ok, out


def measure_kill(model: str) -> bool:
    print(f"== kill: numguard bisect {os.path.basename(model)} --pipeline {PIPELINE}")
    met = True
    for signum in (signal.SIGTERM, signal.SIGKILL):
        for moment in MOMENTS:
            ok, lines = kill_at(model, signum, moment)
            met &= ok
            print("\n".join(lines) + ("" if ok else "   NOT met"), flush=True)
    print(f"no process left, SIGTERM 143 with its line within 3 s: {'met' if met else 'NOT met'}")
    return met


def measure_silence(name: str, model: str) -> bool:
    """A whole bisect: its progress lines, the longest silence, the plan against the time taken."""
    with tempfile.TemporaryDirectory(prefix="numguard-silence-") as folder:
        run = Run(model, folder)
        total = run.end()
    stamped = [(float(m.group(1)), m.group(2)) for _, line in run.lines if (m := STAMP.match(line))]
    print(f"== silence: numguard bisect {name} --pipeline {PIPELINE} (exit {run.child.returncode}, {total:.1f} s)")
    for seconds, text in stamped:
        print(f"  [{seconds:7.1f}s] {text[:170]}")
    times = [0.0] + [s for s, _ in stamped] + [total]
    gaps = [(b - a, a) for a, b in zip(times, times[1:])]
    longest, at = max(gaps)
    print(f"longest silence: {longest:.1f} s (after {at:.1f} s): {'met' if longest < 10 else 'NOT met'} (< 10 s)")
    return longest < 10 and estimate(stamped, total)


def estimate(stamped: list, total: float) -> bool:
    """The bisection's plan (``~N s`` / ``~N min`` ending its first line) against the time it took."""
    start = next(((s, t) for s, t in stamped if "optional events: about" in t), None)
    if start is None:
        print("estimate: no bisection")
        return True
    match = re.search(r": ~(\d+) (s|min)(;|$)", start[1])
    planned = float(match.group(1)) * (60 if match.group(2) == "min" else 1)
    ends = [s for s, t in stamped if t.startswith(("confirm:", "no single event", "the float64 oracle finds"))]
    took = (ends[-1] if ends else total) - start[0]
    ratio = max(planned, took) / max(min(planned, took), 1e-9)
    print(f"estimate: the bisection planned ~{planned:.0f} s, took {took:.0f} s: {ratio:.2f}x "
          f"({'met' if ratio <= 2 else 'NOT met'}: within 2x)")
    return ratio <= 2


def measure_guard(model: str, limit: str) -> bool:
    print(f"== guard: tvm.compile of {os.path.basename(model)} under ToMixedPrecision, time_limit={limit}")
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", GUARDED, model, limit], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": ROOT})
    took = time.perf_counter() - started
    said = [ln for ln in done.stdout.splitlines() if ln]
    for line in said:
        print(f"  {line[:400]}")
    progress = [ln for ln in done.stderr.splitlines() if ln.startswith("numguard guard: [")]
    for line in progress:
        print(f"  {line[:170]}")
    guarded = next((float(ln.split()[1]) for ln in said if ln.startswith("TOOK")), None)
    bound = next((float(ln.split()[1]) for ln in said if ln.startswith("LIMIT") and ln.split()[1] != "None"), None)
    ok = guarded is not None and bound is not None and guarded <= bound + 10
    print(f"guarded compile {guarded} s (process {took:.0f} s) against a limit of {bound} s: "
          f"{'met' if ok else 'NOT met'} (limit + 10 s)")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="kill,silence,guard")
    parser.add_argument("--limit", default="60", help="the guard's time_limit in seconds, or auto")
    args = parser.parse_args()
    only = set(args.only.split(","))
    folder = tempfile.mkdtemp(prefix="numguard-stop-models-")
    blocks = models(folder)
    met = True
    if "kill" in only:
        met &= measure_kill(blocks["vit-base-block"])
    if "silence" in only:
        for name, model in blocks.items():
            met &= measure_silence(name, model)
    if "guard" in only:
        met &= measure_guard(blocks["vit-base-block"], args.limit)
    print(f"all targets: {'met' if met else 'NOT met'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
