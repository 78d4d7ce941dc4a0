"""Stop means stop: SIGTERM ends the CLI as Ctrl-C does (143, one line, workers
stopped), and no worker outlives the process that forked it, however that
process ends (SIGKILL included)."""

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid

import pytest

from tvm_numguard.build.workers import can_fork

pytestmark = pytest.mark.skipif(not can_fork(), reason="worker processes are forked (Linux)")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MLP = os.path.join(ROOT, "examples", "mlp", "mlp.onnx")

# a parent with a ForkPool whose worker is busy for a minute, a replacement forked by
# pebble's pool-manager thread for a worker that died; the busy worker prints the pids
POOL_PARENT = textwrap.dedent("""
    import os, sys, time
    from tvm_numguard.build.workers import ForkPool

    def pid(context):
        return os.getpid()

    def die(context):
        os._exit(5)

    def busy(context, first):
        print(first, os.getpid(), flush=True)
        time.sleep(60)

    if __name__ == "__main__":
        pool = ForkPool(lambda: None, 1, 1 << 40)
        first = pool.schedule(pid).result()
        try:
            pool.schedule(die).result()
        except Exception:
            pass  # the worker died; pebble forks a replacement from its manager thread
        pool.schedule(busy, first)
        time.sleep(60)
""")


def alive(pid: int) -> bool:
    """Running: a process that exists and is not a zombie (a container's init may never reap one)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def marked(marker: str) -> list:
    """Pids of the live processes whose environment holds ``marker`` (a run's and its workers')."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as env:
                if marker.encode() in env.read() and alive(int(entry)):
                    found.append(int(entry))
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


def catches(pid: int, signum: int) -> bool:
    """Whether process ``pid`` has a handler for ``signum`` (its SigCgt mask in /proc)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            mask = next(line.split()[1] for line in status if line.startswith("SigCgt:"))
    except (OSError, StopIteration):
        return False
    return bool(int(mask, 16) & (1 << (signum - 1)))


def wait_until(condition, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def test_workers_die_with_a_parent_killed_by_sigkill():
    parent = subprocess.Popen([sys.executable, "-c", POOL_PARENT], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": ROOT})
    try:
        first, second = (int(p) for p in parent.stdout.readline().split())
        assert not alive(first) and alive(second)  # the first died; the second is the replacement, busy
        parent.kill()
        parent.wait(10)
        assert wait_until(lambda: not alive(second), 5.0), "the worker outlived its parent"
    finally:
        parent.kill()


def test_a_worker_forked_after_its_parent_died_ends_at_once():
    """The race the parent-death signal leaves: the parent died between the fork
    and the request. The worker's check of its parent ends it."""
    child = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import os
        from tvm_numguard.build.workers.pool import die_with_parent
        die_with_parent(os.getppid() + 1)  # a parent that is not this process's
        print("survived")
    """)], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT}, timeout=30)
    assert child.returncode == -signal.SIGKILL and "survived" not in child.stdout


# a main thread that swallows every KeyboardInterrupt (Terminated is one), as a TVM pass
# does with the one raised in its instrument hook, with a forked worker busy beside it
SWALLOWER = textwrap.dedent("""
    import multiprocessing, signal, sys, time
    from tvm_numguard.cli.signals import InterruptDeadline

    def busy():
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # as numguard's workers do
        time.sleep(120)

    if __name__ == "__main__":
        worker = multiprocessing.get_context("fork").Process(target=busy, daemon=True)
        worker.start()
        pid = worker.pid
        with InterruptDeadline(lambda signum: f"ended by {signal.Signals(signum).name}"):
            deadline = time.time() + 60
            while time.time() < deadline:
                try:  # the signal comes once the pid is read: inside the try
                    if pid:
                        print(pid, flush=True)
                        pid = None
                    time.sleep(0.05)
                except KeyboardInterrupt:
                    pass
        print("ran to the end", flush=True)
""")


def test_a_swallowed_sigterm_still_ends_the_process_with_143_and_its_last_words():
    child = subprocess.Popen([sys.executable, "-c", SWALLOWER], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env={**os.environ, "PYTHONPATH": ROOT})
    worker = int(child.stdout.readline())
    sent = time.perf_counter()
    child.send_signal(signal.SIGTERM)
    out, err = child.communicate(timeout=30)
    assert child.returncode == 143 and time.perf_counter() - sent < 3.0
    assert err.strip().splitlines()[-1] == "numguard: ended by SIGTERM"
    assert "ran to the end" not in out
    assert wait_until(lambda: not alive(worker), 2.0)


def test_sigterm_while_the_command_starts_says_so_and_exits_143():
    numguard = os.path.join(os.path.dirname(sys.executable), "numguard")
    child = subprocess.Popen([numguard, "bisect", MLP, "--low", "0", "--high", "1"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": ROOT})
    # as soon as the CLI catches SIGTERM (while it imports TVM); a fixed sleep killed a busy machine's
    # interpreter before that, with no handler yet (exit -15)
    assert wait_until(lambda: catches(child.pid, signal.SIGTERM), 30.0)
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=30)
    assert child.returncode == 143, err[-500:]
    assert err.strip().splitlines()[-1].startswith("numguard: terminated (SIGTERM)")


def start_bisect(tmp_path, marker: str) -> subprocess.Popen:
    """A bisection whose confirmation hangs in its worker (``crash_passes.pack_hang``:
    the build waits forever, in Python, for what the skipped pass would have set up),
    its processes marked by ``marker``."""
    numguard = os.path.join(os.path.dirname(sys.executable), "numguard")
    passes = os.path.join(ROOT, "tests", "crash_passes.py")
    return subprocess.Popen([numguard, "bisect", MLP, "--low", "0", "--high", "1", "--pipeline",
                             f"{passes}:round_weights,{passes}:pack_hang,zero", "--search", "random",
                             "--budget", "4", "--jobs", "2", "--json", str(tmp_path / "report.json")],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": ROOT, "NUMGUARD_TEST_MARK": marker})


def wait_for_line(child: subprocess.Popen, text: str) -> list:
    seen = []
    for line in child.stderr:
        seen.append(line)
        if text in line:
            return seen
    raise AssertionError("the run ended before: " + "".join(seen[-5:]))


HANGING = "(last run: RoundWeightsFP16#0)"  # the last probe's line: the confirmation, which hangs, comes next


@pytest.mark.slow  # a real bisection, killed mid-way (~6 s)
def test_a_bisect_killed_by_sigkill_leaves_no_worker(tmp_path):
    marker = f"numguard-test-{uuid.uuid4()}"
    child = start_bisect(tmp_path, marker)
    try:
        wait_for_line(child, HANGING)
        time.sleep(1.0)
        assert [p for p in marked(marker) if p != child.pid], "no worker was running mid-bisect"
        child.kill()
        child.wait(10)
        assert wait_until(lambda: not marked(marker), 5.0), f"left running: {marked(marker)}"
    finally:
        child.kill()


@pytest.mark.slow  # a real bisection, terminated mid-way (~6 s)
def test_sigterm_ends_a_bisect_within_three_seconds_with_143_and_leaves_nothing(tmp_path):
    marker = f"numguard-test-{uuid.uuid4()}"
    child = start_bisect(tmp_path, marker)
    try:
        wait_for_line(child, HANGING)
        time.sleep(1.0)
        sent = time.perf_counter()
        child.send_signal(signal.SIGTERM)
        _, err = child.communicate(timeout=60)
        took = time.perf_counter() - sent
        assert child.returncode == 143 and took <= 3.0, (took, err[-500:])
        last = err.strip().splitlines()[-1]  # the phase it stopped in, then where the witness is
        assert last.startswith("numguard: terminated (SIGTERM) while ") and "bisecting" in last, last
        assert "; the witness of the violation found is kept in " in last, last
        assert wait_until(lambda: not marked(marker), 3.0), f"left running: {marked(marker)}"
        assert not (tmp_path / "report.json").exists()  # whole or absent, and the run did not finish
        assert not [f for f in os.listdir(tmp_path) if f.startswith(".numguard-")]  # no half-written file
    finally:
        child.kill()


def test_a_callers_own_sigterm_handler_that_raises_nothing_is_left_to_do_its_work():
    """A library caller's graceful-shutdown handler (a flag) sees its SIGTERM during a
    build, and the build does not turn it into an exception; the CLI's handler,
    which raises Terminated, is raised again after a build that swallowed it."""
    from tvm_numguard.base.errors import Terminated
    from tvm_numguard.build.compile import InterruptWatch

    seen = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    try:
        with InterruptWatch() as watch:
            signal.raise_signal(signal.SIGTERM)
        try:
            watch.reraise()
        except KeyboardInterrupt:  # would end the whole pytest session
            pytest.fail("a handler that raised nothing was raised again after the build")
        assert seen == [signal.SIGTERM] and not watch.interrupted

        def raise_terminated(signum, frame):
            raise Terminated

        signal.signal(signal.SIGTERM, raise_terminated)
        with InterruptWatch() as watch:
            try:
                signal.raise_signal(signal.SIGTERM)
            except Terminated:
                pass  # swallowed, as a TVM pass does with what its hook raised
        with pytest.raises(Terminated):
            watch.reraise()
    finally:
        signal.signal(signal.SIGTERM, previous)
