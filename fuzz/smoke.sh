#!/usr/bin/env bash
# CI smoke test of the fuzz targets, on stable without a sanitizer.
#
#   fuzz/smoke.sh [SECONDS_PER_TARGET]      (default 20)
#
# Installs cargo-fuzz if it is missing (`cargo install cargo-fuzz --locked`), runs the fuzz
# crate's unit tests (which also replay the committed seeds and regressions), then runs every
# target for SECONDS_PER_TARGET with `-s none` starting from its committed seeds `corpus/TARGET`
# and its regressions `regressions/TARGET` (new inputs go to a temporary directory, so the
# checkout is not changed). libFuzzer runs with -seed=1 so every CI run tries the same inputs (campaign.sh
# explores with random seeds). Exits non-zero at the first failure, naming the crash artifact.
set -euo pipefail

secs=${1:-20}
case $secs in
'' | *[!0-9]* | 0)
    echo "smoke.sh: SECONDS_PER_TARGET must be a positive integer, got '$secs'" >&2
    exit 2
    ;;
esac

here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
start=$(date +%s)

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "smoke.sh: installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi
installed=$(date +%s)

# The fuzz crate is outside the root workspace, so the root's `cargo test` does not run these.
cargo test --release --lib --target-dir "$here/target/tests"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mapfile -t targets < <(cargo fuzz list)
cargo fuzz build -s none --target-dir "$here/target"
for t in "${targets[@]}"; do
    mkdir -p "$tmp/$t" "$tmp/artifacts/$t"
    dirs=("$tmp/$t")
    [[ -d corpus/$t ]] && dirs+=("corpus/$t")
    [[ -d regressions/$t ]] && dirs+=("regressions/$t")
    echo "smoke.sh: $t for ${secs} s"
    if ! cargo fuzz run -s none --target-dir "$here/target" "$t" "${dirs[@]}" -- \
        -max_total_time="$secs" -seed=1 -timeout=20 -rss_limit_mb=2048 \
        -artifact_prefix="$tmp/artifacts/$t/" >"$tmp/$t.log" 2>&1; then
        tail -n 40 "$tmp/$t.log" >&2
        mkdir -p "artifacts/$t"
        cp "$tmp/artifacts/$t/"* "artifacts/$t/" 2>/dev/null || true
        echo "smoke.sh: FAILED: $t (artifacts copied to fuzz/artifacts/$t/)" >&2
        exit 1
    fi
    grep -E '^Done [0-9]+ runs' "$tmp/$t.log" | sed "s/^/smoke.sh: $t: /"
done
end=$(date +%s)
echo "smoke.sh: OK, ${#targets[@]} targets x ${secs} s; $((end - start)) s in all, of which $((installed - start)) s installing cargo-fuzz"
