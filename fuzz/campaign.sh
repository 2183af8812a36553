#!/usr/bin/env bash
# Fuzzing campaign over every cargo-fuzz target of acker, one target at a time.
#
#   fuzz/campaign.sh [SECONDS_PER_TARGET] [TARGET...]      (default: 600 s, every target)
#
# For each target: build it, run it for SECONDS_PER_TARGET in one libFuzzer process (one job: the
# machine is small and shared) over the kept corpus `work/corpus/TARGET` plus the committed seeds
# `corpus/TARGET` and regressions `regressions/TARGET`, minimise the kept corpus with `cargo fuzz cmin`, and print one summary line:
# executions, executions per second, corpus size after cmin, coverage (libFuzzer's `cov`
# = covered code edges, `ft` = features), crashes (new files in `artifacts/TARGET/`).
#
# Uses nightly with AddressSanitizer when `cargo +nightly` works (FUZZ_SANITIZER=none forces the
# stable build), otherwise `-s none` on stable. Logs go to `work/logs/`, the summary to
# `work/campaign-summary.txt`. Exit status: 0 when no target crashed, 1 otherwise, 2 on bad use.
#
# Environment: FUZZ_TIMEOUT (seconds one input may take before it counts as a hang, default 20),
# FUZZ_RSS_MB (memory limit, default 2048), FUZZ_SANITIZER=none, FUZZ_COMMIT (the commit to name
# in the summary when the checkout is an exported snapshot without .git).
#
# Mutation campaign: `fuzz/campaign.sh --shard k/n [--target core|executors|oracles]` (or
# `fuzz/campaign.sh mutants ...`) runs cargo-mutants instead, see fuzz/mutants.sh.
set -uo pipefail

case ${1:-} in
mutants) shift; exec "$(dirname "$0")/mutants.sh" "$@" ;;
--shard | --target | --part | --names | --list) exec "$(dirname "$0")/mutants.sh" "$@" ;;
esac

here=$(cd "$(dirname "$0")" && pwd)
cd "$here" || exit 2

secs=${1:-600}
if [[ $# -gt 0 ]]; then shift; fi
case $secs in
'' | *[!0-9]* | 0)
    echo "campaign.sh: SECONDS_PER_TARGET must be a positive integer, got '$secs'" >&2
    exit 2
    ;;
esac

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "campaign.sh: cargo-fuzz is not installed (cargo install cargo-fuzz --locked)" >&2
    exit 2
fi

mapfile -t all_targets < <(cargo fuzz list)
if [[ $# -gt 0 ]]; then
    targets=("$@")
    for t in "${targets[@]}"; do
        if [[ ! " ${all_targets[*]} " == *" $t "* ]]; then
            echo "campaign.sh: unknown target '$t' (targets: ${all_targets[*]})" >&2
            exit 2
        fi
    done
else
    targets=("${all_targets[@]}")
fi

if [[ ${FUZZ_SANITIZER:-} != none ]] && cargo +nightly --version >/dev/null 2>&1; then
    fuzz=(cargo +nightly fuzz)
    opts=(--target-dir "$here/target/asan")
    mode="nightly $(cargo +nightly --version | cut -d' ' -f2-), AddressSanitizer"
else
    fuzz=(cargo fuzz)
    opts=(-s none --target-dir "$here/target")
    mode="stable $(cargo --version | cut -d' ' -f2-), no sanitizer (-s none)"
fi
timeout_s=${FUZZ_TIMEOUT:-20}
rss_mb=${FUZZ_RSS_MB:-2048}

mkdir -p work/logs
summary=work/campaign-summary.txt
{
    echo "# acker fuzz campaign, $(date -u '+%Y-%m-%d %H:%M UTC'), ${secs} s per target, one job, $mode"
    if [[ -n ${FUZZ_COMMIT:-} ]]; then
        commit=$FUZZ_COMMIT
    elif commit=$(git -C "$here" rev-parse --short HEAD 2>/dev/null); then
        git -C "$here" diff --quiet HEAD -- .. || commit="$commit + uncommitted changes"
    else
        commit=unknown
    fi
    echo "# commit $commit, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$summary"

crashed=0
for t in "${targets[@]}"; do
    corpus=work/corpus/$t
    log=work/logs/$t.log
    mkdir -p "$corpus" "corpus/$t" "artifacts/$t"
    before=$(ls "artifacts/$t" | sort)

    if ! "${fuzz[@]}" build "${opts[@]}" "$t" >"work/logs/$t.build.log" 2>&1; then
        echo "$t: BUILD FAILED (see fuzz/work/logs/$t.build.log)" | tee -a "$summary"
        crashed=1
        continue
    fi
    seeds=("corpus/$t")
    [[ -d regressions/$t ]] && seeds+=("regressions/$t")
    "${fuzz[@]}" run "${opts[@]}" "$t" "$corpus" "${seeds[@]}" -- \
        -max_total_time="$secs" -timeout="$timeout_s" -rss_limit_mb="$rss_mb" \
        -print_final_stats=1 >"$log" 2>&1
    rc=$?

    # Kept corpus, minimised (cmin merges it into a fresh directory and swaps it in).
    "${fuzz[@]}" cmin "${opts[@]}" "$t" "$corpus" -- -timeout="$timeout_s" \
        -rss_limit_mb="$rss_mb" >"work/logs/$t.cmin.log" 2>&1 ||
        echo "$t: cmin failed (see fuzz/work/logs/$t.cmin.log)" >&2

    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    last=$(grep -E ' cov: [0-9]+' "$log" | tail -1)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
    files=$(find "$corpus" -type f | wc -l)
    kb=$(du -sk "$corpus" | cut -f1)
    new=$(comm -13 <(echo "$before") <(ls "artifacts/$t" | sort) | grep -E '^(crash|timeout|oom|leak)-' || true)
    ncrash=$(grep -c . <<<"$new" || true)
    line="$t: ${execs:-?} execs, ${rate:-?} exec/s, corpus ${files} files (${kb} KB) after cmin, cov ${cov:-?} ft ${ft:-?}, crashes ${ncrash}"
    if [[ $ncrash -gt 0 || $rc -ne 0 ]]; then
        crashed=1
        line="$line (exit $rc; artifacts: $(echo $new | sed "s|\([^ ]*\)|fuzz/artifacts/$t/\1|g"); log fuzz/work/logs/$t.log)"
    fi
    echo "$line" | tee -a "$summary"
done
exit $crashed
