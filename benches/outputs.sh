#!/usr/bin/env bash
# Every output of every capture of testdata/ and of two benchmark captures, recorded so that a
# change meant to leave behaviour alone (a refactoring) can be checked byte for byte:
#
#   benches/outputs.sh record DIR        # with ./target/release/roce-sniff (BIN=... for another)
#   benches/outputs.sh compare DIR1 DIR2 # every file equal; prints what differs, exits 1 if any
#
# Per capture: the text report, `--json`, `--events`, `--packets` (text and JSON), the Parquet
# dataset (`--parquet`), the report directory's text files, the annotated copy (`--annotate`), and the metrics as parsed samples
# (name, labels and value; sorted, comments left out). Per correlation: its text and JSON.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-./target/release/roce-sniff}

# The extra arguments a capture is read with (those of testgen/src/diagnose.rs).
args_of() {
    case $1 in
        *diagnose/host_limited.pcap) echo "--link-speed 100" ;;
        *diagnose/qp_reused_by_another_peer.pcap) echo "--flow-timeout 1ms" ;;
        *) echo "" ;;
    esac
}

# The metrics of `-r CAPTURE --metrics` as sorted samples.
metrics_of() {
    local capture=$1 port
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    # shellcheck disable=SC2046
    $BIN -r "$capture" $(args_of "$capture") --metrics=127.0.0.1:"$port" >/dev/null 2>&1 &
    local pid=$!
    for _ in $(seq 100); do
        curl -sf "http://127.0.0.1:$port/metrics" -o "$2.raw" 2>/dev/null && break
        sleep 0.1
    done
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
    grep -v '^#' "$2.raw" | sort > "$2"
    rm -f "$2.raw"
}

record_one() {
    local capture=$1 out=$2
    mkdir -p "$out"
    # shellcheck disable=SC2046
    set -- $(args_of "$capture")
    $BIN -r "$capture" "$@" > "$out/report.txt" 2> "$out/stderr.txt" || true
    $BIN -r "$capture" "$@" --json="$out/report.json" --events="$out/events.ndjson" \
        --parquet "$out/parquet" >/dev/null 2>&1 || true
    $BIN -r "$capture" --packets > "$out/packets.txt" 2>/dev/null || true
    $BIN -r "$capture" --packets --json > "$out/packets.ndjson" 2>/dev/null || true
    $BIN -r "$capture" "$@" --report="$out/dir" >/dev/null 2>&1 || true
    # The annotated copy, whole and of one QP's frames (the comments name the input's frames).
    $BIN -r "$capture" "$@" --annotate="$out/annotated.pcapng" >/dev/null 2>&1 || true
    $BIN -r "$capture" "$@" --qp 0x11 --annotate="$out/annotated-qp.pcapng" >/dev/null 2>&1 || true
    # The report directory's pictures are drawn by plotters; its text files are ours.
    find "$out/dir" -name '*.png' -delete 2>/dev/null || true
    metrics_of "$capture" "$out/metrics.txt"
}

record() {
    local dir=$1
    rm -rf "$dir"
    mkdir -p "$dir"
    cargo build --release --quiet --bin roce-sniff -p roce-testgen --bin gen-capture 2>/dev/null ||
        cargo build --release --quiet --bin roce-sniff
    # Outside DIR: the reports name the capture files, which must be the same in every record.
    local bench=${TMPDIR:-/tmp}/roce-sniff-outputs-captures
    mkdir -p "$bench"
    ./target/release/gen-capture --frames 200000 "$bench/bulk.pcap" >/dev/null
    ./target/release/gen-capture --churn 20000 --lossy-every 10 "$bench/churn.pcap" >/dev/null
    local n=0
    while IFS= read -r capture; do
        record_one "$capture" "$dir/$(echo "${capture#"$bench/"}" | tr '/' '_')"
        n=$((n + 1))
    done < <(find testdata -type f \( -name '*.pcap' -o -name '*.pcapng' -o -name '*.gz' \
        -o -name '*.zst' -o -name '*.erf' \) | sort; echo "$bench/bulk.pcap"; echo "$bench/churn.pcap")
    # The churn again, its flows ending as a monitor's do.
    $BIN -r "$bench/churn.pcap" --flow-timeout 5ms --json="$dir/churn-timeout.json" \
        --events="$dir/churn-timeout.ndjson" >/dev/null 2>&1 || true
    local points=(-r testdata/correlate/leaf.pcap -r testdata/correlate/spine.pcap
        -r testdata/correlate/receiver.pcap)
    $BIN --correlate "${points[@]}" > "$dir/correlation.txt" 2>&1 || true
    $BIN --correlate "${points[@]}" --json > "$dir/correlation.json" 2>&1 || true
    rm -rf "$bench"
    echo "recorded the outputs of $n captures and a correlation in $dir"
}

compare() {
    local a=$1 b=$2
    if diff -r -q "$a" "$b" >/dev/null; then
        echo "identical: $a and $b"
        return 0
    fi
    diff -r -q "$a" "$b" | head -40
    return 1
}

case ${1:-} in
    record) record "${2:?record DIR}" ;;
    compare) compare "${2:?compare DIR1 DIR2}" "${3:?compare DIR1 DIR2}" ;;
    *) sed -n '2,10p' "$0"; exit 2 ;;
esac
