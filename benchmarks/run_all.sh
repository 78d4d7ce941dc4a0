#!/bin/bash
# Every benchmark of benchmarks/, with light settings, on the checkout CHECKOUT
# (a worktree of another commit, for a before/after comparison run in the same
# session); one log per benchmark in OUTDIR, each ending with its exit code and
# seconds. Uses this checkout's .venv.
#
#   git worktree add /tmp/before <commit>
#   benchmarks/run_all.sh /tmp/before /tmp/bench/before
#   benchmarks/run_all.sh "$PWD" /tmp/bench/after
set -u
co=$(cd "$1" && pwd); out=$2; mkdir -p "$out"
py=$(cd "$(dirname "$0")/.." && pwd)/.venv/bin/python
export PYTHONPATH=$co
cd "$co"
run() {
  name=$1; shift; s=$(date +%s)
  timeout 1500 "$py" "benchmarks/$name.py" "$@" > "$out/$name.log" 2>&1
  echo "rc=$? seconds=$(( $(date +%s) - s ))" >> "$out/$name.log"
  echo "$name done $(( $(date +%s) - s ))s"
}
run bisect_cost --repeat 1
run check_cost --models squeezenet --generated 20
run guard_overhead --repeat 3
run match_quality --models squeezenet
run trace_cost
run search_vs_random --seeds 0,1
run random_models --count 50 --fired-count 10
run regress_throughput
run planted_table --random 10
run corpus_sweep --sample 12
run stop_and_silence
