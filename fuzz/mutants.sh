#!/usr/bin/env bash
# Mutation campaign (issue 16): cargo-mutants over acker-core, the runtime's executors and the
# simulator's oracles. Not part of CI (a full campaign takes hours on the 2-core machine).
#
#   fuzz/mutants.sh [--target core|executors|oracles] [--shard k/n] [--list]
#   fuzz/mutants.sh --target core [--part all|single|shared]    (single: every file but shared.rs)
#   fuzz/mutants.sh --target core --names FILE   (exactly the mutants named in FILE, one a line as
#                   in missed.txt, against the whole suite and loom: "is it caught now?")
#   fuzz/campaign.sh --shard k/n ...            (the same: campaign.sh hands --shard/--target on)
#
# Targets (each mutates only its own files, and runs the tests that judge them):
#   core       acker-core/src/*.rs (not planted.rs, which only the planted-bugs feature compiles).
#              Three passes; a mutant is missed only if all three miss it:
#              quick  the fast tests, timeout MUTANTS_QUICK_TIMEOUT (default 30 s): for every
#                     file but shared.rs the unit, gap, model and scenario tests at opt-level 0
#                     (profile mutants-o0; ~1 s); for shared.rs the model comparison with
#                     ACKER_MODEL_CASES=500 and the linearizability check with
#                     ACKER_LINEARIZABILITY_SECS=1 (profile mutants; ~4 s);
#              whole  the quick pass's survivors against `cargo test -p acker-core` (every unit,
#                     model, gap, scenario, linearizability and stress test;
#                     ACKER_LINEARIZABILITY_SECS=2). A mutant a quick test fails is failed by the
#                     whole suite too (it holds the quick tests), so caught stays caught;
#              loom   the shared.rs and sync.rs survivors against the loom suite (RUSTFLAGS="--cfg loom",
#                     LOOM_MAX_PREEMPTIONS=3, `--test loom`).
#   executors  runtime/src/executor/*.rs; `cargo test -p acker-runtime --no-default-features`
#              (no connectors: no servers needed; every unit and integration test of the
#              runtime, 8 s a mutant on top of the incremental build, so the whole suite is
#              kept: nothing is left out of what counts as caught).
#   oracles    sim/src/oracle.rs; `cargo test -p acker-sim`.
#
# Builds use the profile `mutants` (workspace Cargo.toml: the release profile's code, opt-level
# 3, without debug info, incremental): about twice as fast to rebuild as `--release`.
# Each run first builds the dependencies in cargo-mutants' scratch copy (~2 min) and runs the
# unmutated baseline. --shard k/n (0-based k, round-robin) runs every n-th mutant, so shards
# are alike in mix; MUTANTS_JOBS jobs (default 1: the machine is shared), test timeout
# MUTANTS_TIMEOUT (default 180 s), build timeout MUTANTS_BUILD_TIMEOUT (default 600 s). Results:
# fuzz/work/mutants/TARGET-K-of-N/ (one cargo-mutants output per pass: PASS/mutants.out with
# outcomes.json, caught.txt, missed.txt, timeout.txt, unviable.txt), missed.txt (missed by
# every pass) and one summary line: caught, missed, timeout, unviable, score = caught /
# (caught + missed). Needs
# cargo-mutants (`cargo install cargo-mutants --locked`). Exit status: 0 when it ran (missed
# mutants are results, not errors), 2 on bad use or if cargo-mutants failed to run.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
target=core
shard=0/1
list=0
part=all
names=
die() { echo "mutants.sh: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
    case $1 in
    --target | --shard | --part | --names)
        [[ $# -ge 2 ]] || die "$1 needs a value (see the header of fuzz/mutants.sh)"
        case $1 in
        --target) target=$2 ;; --shard) shard=$2 ;; --part) part=$2 ;; --names) names=$2 ;;
        esac
        shift 2 ;;
    --list) list=1; shift ;;
    -h | --help) sed -n '2,/^set -uo/{/^set -uo/d; s/^# \{0,1\}//; p}' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (see fuzz/mutants.sh --help)" ;;
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
jobs=${MUTANTS_JOBS:-1}
# Profile `mutants` (workspace Cargo.toml): release code (opt-level 3) without debug info, with
# incremental builds: an acker-core mutant builds in ~9 s instead of ~18 s with `--release`.
base=(--shard "$shard" --sharding round-robin -j "$jobs" --build-timeout "${MUTANTS_BUILD_TIMEOUT:-600}")
common=("${base[@]}" --profile mutants)
case $target in
core) args=(-p acker-core -f 'acker-core/src/*.rs' -e acker-core/src/planted.rs)
    [[ $part != single ]] || args+=(-e acker-core/src/shared.rs)
    [[ $part != shared ]] || args=(-p acker-core -f acker-core/src/shared.rs) ;;
executors) args=(-p acker-runtime -f 'runtime/src/executor/*.rs' --cargo-arg=--no-default-features) ;;
oracles) args=(-p acker-sim -f sim/src/oracle.rs) ;;
*) echo "mutants.sh: --target must be core, executors or oracles, got '$target'" >&2; exit 2 ;;
esac
if [[ -n $names ]]; then
    [[ $target == core ]] || die "--names works with --target core only, got --target $target"
    [[ -f $names && -r $names ]] || die "--names: '$names' is not a readable file"
    grep -q '[^[:space:]]' "$names" || die "--names: '$names' names no mutant (it is empty or blank)"
    [[ $part == all && $shard == 0/1 && $list == 0 ]] ||
        die "--names runs exactly the named mutants: it takes no --part, --shard or --list"
fi
if [[ ! $part =~ ^(all|single|shared)$ ]] || [[ $part != all && $target != core ]]; then
    die "--part must be all, single or shared, and single/shared only with --target core, got '$part'"
fi
cd "$root" || exit 2
if [[ $list == 1 ]]; then
    cargo mutants "${args[@]}" "${common[@]}" --list
    exit $?
fi
out=$here/work/mutants/$target-${shard/\//-of-}
[[ $part == all ]] || out=$out-$part
[[ -z $names ]] || out=$here/work/mutants/$target-names-$(basename "$names" .txt)
# A fresh output folder: results of an earlier run of the same shard must not be counted again.
rm -rf "$out"
mkdir -p "$out"
export ACKER_LINEARIZABILITY_SECS=${ACKER_LINEARIZABILITY_SECS:-2}
# The exact-name filter for cargo-mutants (-F) that selects the mutants listed in file $1.
names_re() { sed 's/[][\.*^$(){}+?|]/\\&/g' "$1" | paste -sd'|'; }
# One cargo-mutants pass; dies (exit 2) if cargo-mutants failed to run.
run_pass() {
    local name=$1; shift
    echo "# pass $name: cargo mutants $*" | tee -a "$out/command.txt"
    cargo mutants "$@" -o "$out/$name"
    local rc=$?
    # cargo-mutants: 0 all caught, 2 some missed, 3 some timed out; 1 and 4 are failures to run.
    if [[ $rc -eq 1 || $rc -eq 4 ]]; then
        echo "mutants.sh: cargo-mutants failed (exit $rc), see $out/$name" >&2
        exit 2
    fi
}
what="shard $shard"; [[ $part == all ]] || what="$what, part $part"; [[ -z $names ]] || what="the mutants named in $names"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC') target $target, $what, $jobs job(s)" | tee "$out/command.txt"
if [[ $target == core ]]; then
    # First passes ("quick"): a mutant a quick test fails is failed by the whole suite too (it
    # holds the quick tests), so caught stays caught and only the survivors need the rest.
    # Every file but shared.rs: unit, gap, model and scenario tests, built at opt-level 0
    # (profile mutants-o0: the same code, overflow checks and debug assertions off as in
    # release; ~2 s a build, ~1 s of tests).
    first=()
    if [[ -n $names ]]; then
        # --names: no quick pass; exactly these mutants go to the whole suite (and loom).
        :
    elif [[ $part != shared ]]; then
        run_pass quick "${args[@]}" -e acker-core/src/shared.rs "${base[@]}" --profile mutants-o0 \
            --timeout "${MUTANTS_QUICK_TIMEOUT:-30}" --cargo-test-arg=--lib \
            --cargo-test-arg=--test=gaps --cargo-test-arg=--test=model --cargo-test-arg=--test=scenarios
        first+=(quick)
    fi
    if [[ -z $names && $part != single ]]; then
        # shared.rs: the model comparison (500 scripts instead of 5,000) and the
        # linearizability check for 1 s, at opt-level 3 (the model comparison's 5,000 scripts
        # take ~6 s there, ~90 s at opt-level 0).
        ACKER_MODEL_CASES=500 ACKER_LINEARIZABILITY_SECS=1 run_pass quick-shared -p acker-core -f acker-core/src/shared.rs \
            "${common[@]}" --timeout "${MUTANTS_QUICK_TIMEOUT:-30}" --cargo-test-arg=--test=shared_model \
            --cargo-test-arg=--test=shared_linearizable
        first+=(quick-shared)
    fi
    if [[ -n $names ]]; then
        # The names without surrounding blanks, one a line.
        sed 's/^[[:space:]]*//; s/[[:space:]]*$//' "$names" | grep . >"$out/missed.txt"
        # Every name must be a mutant of today's sources (line numbers go stale).
        cargo mutants "${args[@]}" --list >"$out/list.txt" 2>/dev/null ||
            die "cargo mutants --list failed (run it by hand to see why)"
        if unmatched=$(grep -vxF -f "$out/list.txt" "$out/missed.txt"); then
            echo "mutants.sh: --names: no mutant of today's sources has these names (stale line" \
                "numbers? take names from \`fuzz/mutants.sh --target core --list\`):" >&2
            echo "$unmatched" | sed 's/^/  /' >&2
            exit 2
        fi
    else
        for p in "${first[@]}"; do cat "$out/$p/mutants.out/missed.txt"; done >"$out/missed.txt"
    fi
    if [[ -s $out/missed.txt ]]; then
        # Pass "whole": the survivors against every unit, model, gap, scenario,
        # linearizability and stress test (`cargo test -p acker-core`, as CI runs them).
        run_pass whole "${args[@]}" -F "^($(names_re "$out/missed.txt"))\$" -j "$jobs" \
            --build-timeout "${MUTANTS_BUILD_TIMEOUT:-600}" --profile mutants \
            --timeout "${MUTANTS_TIMEOUT:-180}"
        [[ -z $names ]] || first=(whole)
        cp "$out/whole/mutants.out/missed.txt" "$out/missed.txt"
    fi
    if grep -qE '^acker-core/src/(shared|sync)\.rs:' "$out/missed.txt"; then
        # Pass "loom": the loom suite over the shared.rs and sync.rs mutants the whole suite missed.
        grep -E '^acker-core/src/(shared|sync)\.rs:' "$out/missed.txt" >"$out/missed-shared.txt"
        RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 run_pass loom -p acker-core \
            -f acker-core/src/shared.rs -f acker-core/src/sync.rs -F "^($(names_re "$out/missed-shared.txt"))\$" -j 1 \
            --timeout "${MUTANTS_TIMEOUT:-180}" --build-timeout "${MUTANTS_BUILD_TIMEOUT:-600}" \
            --cargo-arg=--release --cargo-test-arg=--test=loom
        # Missed in the end: missed by the whole suite and neither caught by loom nor timed out
        # under it (a timeout is counted apart).
        cat "$out/loom/mutants.out/caught.txt" "$out/loom/mutants.out/timeout.txt" >"$out/loom-detected.txt"
        grep -vxF -f "$out/loom-detected.txt" "$out/missed.txt" >"$out/missed-final.txt" || true
        mv "$out/missed-final.txt" "$out/missed.txt"
    fi
else
    run_pass pass1 "${args[@]}" "${common[@]}" --timeout "${MUTANTS_TIMEOUT:-180}"
    first=(pass1)
    cp "$out/pass1/mutants.out/missed.txt" "$out/missed.txt"
fi
# Non-empty lines of a file (0 if it is empty or absent: grep -c prints 0 and fails then).
n() { local c; c=$(grep -c . "$1" 2>/dev/null); echo "${c:-0}"; }
missed=$(n "$out/missed.txt")
# Every mutant of the shard is in exactly one first pass's lists; the later passes only re-judge
# missed ones, so a mutant they catch or time out leaves "missed" for "caught" or "timeout".
timeout=0 first_total=0 unviable=0
for p in quick quick-shared whole loom pass1; do
    timeout=$(( timeout + $(n "$out/$p/mutants.out/timeout.txt") ))
done
for p in "${first[@]}"; do
    o=$out/$p/mutants.out
    first_total=$(( first_total + $(n "$o/caught.txt") + $(n "$o/missed.txt") + $(n "$o/timeout.txt") ))
    unviable=$(( unviable + $(n "$o/unviable.txt") ))
done
caught=$(( first_total - missed - timeout ))
score=$(awk -v c="$caught" -v m="$missed" 'BEGIN { if (c + m) printf "%.1f %%", 100 * c / (c + m); else print "n/a" }')
echo "$target, $what: caught $caught, missed $missed, timeout $timeout, unviable $unviable, score $score (caught / (caught + missed); missed list: $out/missed.txt)" |
    tee "$out/summary.txt"
