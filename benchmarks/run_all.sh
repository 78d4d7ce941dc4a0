#!/bin/bash
# Every benchmark of benchmarks/, with light settings, on the checkout CHECKOUT
# and on the commit before it (or BASE), side by side: the two take turns
# benchmark by benchmark, so that what else loads the machine falls on both
# alike. One log each in OUTDIR/head and OUTDIR/base, each ending with its exit
# code and seconds, and OUTDIR/NAME.side-by-side (base left, head right);
# OUTDIR/summary lists both exit codes and times. Uses this checkout's .venv.
#
#   benchmarks/run_all.sh "$PWD" /tmp/bench            # against HEAD~1
#   benchmarks/run_all.sh "$PWD" /tmp/bench main       # against main
#   ONLY="bisect_cost guard_overhead" benchmarks/run_all.sh "$PWD" /tmp/bench
set -u
co=$(cd "$1" && pwd); out=$(mkdir -p "$2" && cd "$2" && pwd); base=${3:-HEAD~1}
py=$(cd "$(dirname "$0")/.." && pwd)/.venv/bin/python
commit=$(git -C "$co" rev-parse --verify "$base^{commit}") || exit 2
src="$out/base-src"
git -C "$co" worktree remove --force "$src" 2>/dev/null
git -C "$co" worktree add --detach "$src" "$commit" > /dev/null || exit 2
trap 'git -C "$co" worktree remove --force "$src"' EXIT
mkdir -p "$out/head" "$out/base"
echo "base $commit ($base), head $(git -C "$co" rev-parse HEAD) plus its uncommitted changes" > "$out/summary"
one() {  # one(TREE, LOGDIR, NAME, ARGS...)
  tree=$1; logs=$2; name=$3; shift 3; s=$(date +%s)
  (cd "$tree" && PYTHONPATH=$tree timeout 1500 "$py" "benchmarks/$name.py" "$@" > "$logs/$name.log" 2>&1)
  echo "rc=$? seconds=$(( $(date +%s) - s )) load=$(cut -d' ' -f1-3 /proc/loadavg)" >> "$logs/$name.log"
}
run() {
  name=$1; shift
  case " ${ONLY:-$name} " in *" $name "*) ;; *) return ;; esac
  one "$src" "$out/base" "$name" "$@"
  one "$co" "$out/head" "$name" "$@"
  diff -y -W 240 "$out/base/$name.log" "$out/head/$name.log" > "$out/$name.side-by-side"
  printf '%-20s base %-40s head %s\n' "$name" "$(tail -1 "$out/base/$name.log")" "$(tail -1 "$out/head/$name.log")" \
    | tee -a "$out/summary"
}
run bisect_cost --repeat 1
run check_cost --models squeezenet --generated 20
run guard_overhead --repeat 3
run match_quality --models squeezenet
run trace_cost
run search_vs_random --seeds 0,1
run random_models --count 50 --changed-count 10
run regress_throughput
run planted_table --random 10
run corpus_sweep --sample 12
run stop_and_silence
