#!/usr/bin/env bash
# Flow state at scale (issue #24), offline: many short flows, and a churn of 600,000. Prints wall
# time, CPU and peak resident memory against the targets. The same churn live:
# benches/live_compare.sh.
#
#   benches/scale.sh            # 10,000 and 100,000 flows of 3 packets; 600,000 churn flows
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${BENCH_DIR:-/tmp/roce-sniff-bench}
mkdir -p "$DIR"
[ -x /usr/bin/time ] || { apt-get install -y -qq time >/dev/null 2>&1 || sudo apt-get install -y -qq time >/dev/null; }
cargo build --release --quiet --bin roce-sniff && cargo build --release --quiet -p roce-testgen --bin gen-capture
BIN=./target/release/roce-sniff GEN=./target/release/gen-capture
for n in 10000 100000; do
    [ -f "$DIR/flows3-$n.pcap" ] || $GEN --churn "$n" --no-acks "$DIR/flows3-$n.pcap" >/dev/null
done
CHURN=$DIR/churn-300k.pcap
[ -f "$CHURN" ] || $GEN --churn 300000 "$CHURN" >/dev/null
# A long capture: 40,000 flows over 27 minutes (a QP every 20 ms), for `-r --events`, whose
# findings are evaluated every second of capture time.
LONG=$DIR/long-27min.pcap
[ -f "$LONG" ] || $GEN --churn 20000 --gap-ns 20000000 "$LONG" >/dev/null

# measure NAME CMD...: prints "NAME wall cpu MiB" and keeps them in W/C/M (M in MiB: peak
# resident set, as /usr/bin/time reports it in KiB; the targets are checked in MB too).
declare -A W C M
measure() {
    local name=$1; shift
    /usr/bin/time -f "%e %U %S %M" -o "$DIR/scale.time" "$@" >/dev/null 2>&1 || true
    read -r wall user sys kb < "$DIR/scale.time"
    W[$name]=$wall; C[$name]=$(awk "BEGIN{print $user + $sys}"); M[$name]=$(awk "BEGIN{print $kb / 1024}")
    printf "  %-52s %7.2f s wall %7.2f s CPU %8.1f MiB\n" "$name" "${W[$name]}" "${C[$name]}" "${M[$name]}"
}
# measure_median NAME CMD...: as measure, five times over, keeping the median wall time and CPU
# and the most memory: the 10,000-flow run takes a tenth of a second, near /usr/bin/time's
# 10 ms ticks, and one lucky or unlucky run moved the ratio of the two by half.
measure_median() {
    local name=$1; shift
    local walls=() cpus=() mib=0
    for _ in 1 2 3 4 5; do
        measure "$name" "$@" >/dev/null
        walls+=("${W[$name]}"); cpus+=("${C[$name]}")
        mib=$(awk -v a="$mib" -v b="${M[$name]}" 'BEGIN {print (b > a) ? b : a}')
    done
    W[$name]=$(printf "%s\n" "${walls[@]}" | sort -g | sed -n 3p)
    C[$name]=$(printf "%s\n" "${cpus[@]}" | sort -g | sed -n 3p)
    M[$name]=$mib
    printf "  %-52s %7.2f s wall %7.2f s CPU %8.1f MiB  (median of 5)\n" "$name" "${W[$name]}" "${C[$name]}" "${M[$name]}"
}

echo "offline (-r, --json to a file):"
measure_median "10,000 flows of 3 packets" $BIN -r "$DIR/flows3-10000.pcap" --json="$DIR/s.json"
measure_median "100,000 flows of 3 packets" $BIN -r "$DIR/flows3-100000.pcap" --json="$DIR/s.json"
measure "600,000 churn flows, --flow-timeout 5ms" $BIN -r "$CHURN" --flow-timeout 5ms --max-flows 1000000 --json="$DIR/s.json"
# Findings are evaluated once a second of capture time on the open flows and those ended since.
measure "  + --events (600,000 flow_end lines)" $BIN -r "$CHURN" --flow-timeout 5ms --max-flows 1000000 --json="$DIR/s.json" --events="$DIR/s.ndjson"
measure "27 minutes, 40,000 flows" $BIN -r "$LONG" --json="$DIR/s.json"
# Each evaluation sees the open flows and those ended since the last one (every flow so far,
# each second, took 75 s here).
measure "  + --events (findings evaluated 1,600 times)" $BIN -r "$LONG" --json="$DIR/s.json" --events="$DIR/s.ndjson"
awk -v a="${W[10,000 flows of 3 packets]}" -v b="${W[100,000 flows of 3 packets]}" -v m="${M[100,000 flows of 3 packets]}" \
    -v cm="${M[600,000 churn flows, --flow-timeout 5ms]}" 'BEGIN {
    printf "  100,000 flows: %.1fx the time of 10,000 (target <= 12x), %.0f MiB = %.0f MB (target < 150 MB)\n", b / a, m, m * 1.048576
    printf "  600,000 churn flows, every one in the report: %.0f MiB = %.0f MB (target < 400 MB)\n", cm, cm * 1.048576
}'

# The live churn (the same capture replayed into a veth pair at 300,000 frames/s), with each
# output's CPU and the monitor's memory: benches/live_compare.sh.
