#!/usr/bin/env bash
# Mutation campaign (issue 16): cargo-mutants over acker-core, the runtime's executors and the
# simulator's oracles. Not part of CI (a full campaign takes hours on the 2-core machine).
#
#   fuzz/mutants.sh [--target core|executors|oracles] [--shard k/n] [--list]
#   fuzz/campaign.sh --shard k/n ...            (the same: campaign.sh hands --shard/--target on)
#
# Targets (each mutates only its own files, and runs the tests that judge them):
#   core       acker-core/src/*.rs (not planted.rs, which only the planted-bugs feature compiles);
#              test command `cargo test -p acker-core --release` (every unit, model, gap,
#              scenario, linearizability and stress test; ACKER_LINEARIZABILITY_SECS=2). Then a
#              second pass for the shared.rs mutants the first pass missed: the loom suite
#              (RUSTFLAGS="--cfg loom", LOOM_MAX_PREEMPTIONS=3, `--test loom`). A mutant is missed
#              only if both passes miss it.
#   executors  runtime/src/executor/*.rs; `cargo test -p acker-runtime --release
#              --no-default-features` (no connectors: no servers needed; every unit and
#              integration test of the runtime, 8 s a mutant on top of a ~60 s incremental build,
#              so the whole suite is kept: nothing is left out of what counts as caught).
#   oracles    sim/src/oracle.rs; `cargo test -p acker-sim --release`.
#
# Each run first builds the dependencies in cargo-mutants' scratch copy (~2 min) and runs the
# unmutated baseline. --shard k/n (0-based k, round-robin) runs every n-th mutant, so shards
# are alike in mix; one job (-j1, the machine is shared), test timeout MUTANTS_TIMEOUT (default
# 180 s), build timeout MUTANTS_BUILD_TIMEOUT (default 600 s). Results:
# fuzz/work/mutants/TARGET-K-of-N/ (cargo-mutants' mutants.out: outcomes.json, caught.txt,
# missed.txt, timeout.txt, unviable.txt) and one summary line: caught, missed, timeout,
# unviable, score = caught / (caught + missed). Needs
# cargo-mutants (`cargo install cargo-mutants --locked`). Exit status: 0 when it ran (missed
# mutants are results, not errors), 2 on bad use or if cargo-mutants failed to run.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
target=core
shard=0/1
list=0
while [[ $# -gt 0 ]]; do
    case $1 in
    --target) target=${2:-}; shift 2 ;;
    --shard) shard=${2:-}; shift 2 ;;
    --list) list=1; shift ;;
    *) echo "mutants.sh: unknown argument '$1' (see the header of fuzz/mutants.sh)" >&2; exit 2 ;;
    esac
done
if [[ ! $shard =~ ^([0-9]+)/([1-9][0-9]*)$ ]] || (( BASH_REMATCH[1] >= BASH_REMATCH[2] )); then
    echo "mutants.sh: --shard must be k/n with 0 <= k < n, got '$shard'" >&2
    exit 2
fi
if ! cargo mutants --version >/dev/null 2>&1; then
    echo "mutants.sh: cargo-mutants is not installed (cargo install cargo-mutants --locked)" >&2
    exit 2
fi
common=(--shard "$shard" --sharding round-robin -j 1 --timeout "${MUTANTS_TIMEOUT:-180}"
    --build-timeout "${MUTANTS_BUILD_TIMEOUT:-600}" --cargo-arg=--release)
case $target in
core) args=(-p acker-core -f 'acker-core/src/*.rs' -e acker-core/src/planted.rs) ;;
executors) args=(-p acker-runtime -f 'runtime/src/executor/*.rs' --cargo-arg=--no-default-features) ;;
oracles) args=(-p acker-sim -f sim/src/oracle.rs) ;;
*) echo "mutants.sh: --target must be core, executors or oracles, got '$target'" >&2; exit 2 ;;
esac
cd "$root" || exit 2
if [[ $list == 1 ]]; then
    cargo mutants "${args[@]}" "${common[@]}" --list
    exit $?
fi
out=$here/work/mutants/$target-${shard/\//-of-}
mkdir -p "$out"
export ACKER_LINEARIZABILITY_SECS=${ACKER_LINEARIZABILITY_SECS:-2}
echo "# $(date -u '+%Y-%m-%d %H:%M UTC') cargo mutants ${args[*]} ${common[*]}" | tee "$out/command.txt"
cargo mutants "${args[@]}" "${common[@]}" -o "$out/pass1"
rc=$?
# cargo-mutants: 0 all caught, 2 some missed, 3 some timed out; 1 and 4 are failures to run.
if [[ $rc -eq 1 || $rc -eq 4 ]]; then
    echo "mutants.sh: cargo-mutants failed (exit $rc), see $out/pass1" >&2
    exit 2
fi
m=$out/pass1/mutants.out
cp "$m/missed.txt" "$out/missed.txt"
if [[ $target == core ]] && grep -q '^acker-core/src/shared.rs:' "$m/missed.txt"; then
    # Second pass: the loom suite over the shared.rs mutants the first pass missed.
    re=$(grep '^acker-core/src/shared.rs:' "$m/missed.txt" |
        sed 's/[][\.*^$(){}+?|]/\\&/g' | paste -sd'|')
    echo "# loom pass over $(grep -c '^acker-core/src/shared.rs:' "$m/missed.txt") missed shared.rs mutant(s)" |
        tee -a "$out/command.txt"
    RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo mutants -p acker-core \
        -f acker-core/src/shared.rs -F "^($re)\$" -j 1 --timeout "${MUTANTS_TIMEOUT:-180}" \
        --build-timeout "${MUTANTS_BUILD_TIMEOUT:-600}" --cargo-arg=--release \
        --cargo-test-arg=--test=loom -o "$out/loom"
    # Missed in the end: missed by the first pass and not caught by loom.
    grep -vxF -f "$out/loom/mutants.out/caught.txt" "$m/missed.txt" >"$out/missed.txt" || true
fi
# Non-empty lines of a file (0 if it is empty or absent: grep -c prints 0 and fails then).
n() { local c; c=$(grep -c . "$1" 2>/dev/null); echo "${c:-0}"; }
missed=$(n "$out/missed.txt")
caught=$(( $(n "$m/caught.txt") + $(n "$m/missed.txt") - missed ))
timeout=$(n "$m/timeout.txt")
unviable=$(n "$m/unviable.txt")
score=$(awk -v c="$caught" -v m="$missed" 'BEGIN { if (c + m) printf "%.1f %%", 100 * c / (c + m); else print "n/a" }')
echo "$target shard $shard: caught $caught, missed $missed, timeout $timeout, unviable $unviable, score $score (caught / (caught + missed); missed list: $out/missed.txt)" |
    tee "$out/summary.txt"
