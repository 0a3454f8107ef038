#!/usr/bin/env bash
# Flow state at scale (issue #24): many short flows offline, and a live churn with each output's
# own cost. Prints wall time, CPU and peak resident memory against the targets.
#
#   benches/scale.sh            # offline: 10,000 and 100,000 flows of 3 packets; 600,000 churn flows
#                               # live (root, tcpreplay): the churn replayed into a veth pair
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
echo "offline (-r, --json to a file):"
measure "10,000 flows of 3 packets" $BIN -r "$DIR/flows3-10000.pcap" --json="$DIR/s.json"
measure "100,000 flows of 3 packets" $BIN -r "$DIR/flows3-100000.pcap" --json="$DIR/s.json"
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

[ "$(id -u)" = 0 ] && command -v tcpreplay >/dev/null || { echo "live: needs root and tcpreplay"; exit 0; }
NS=rsscale$$; HOST=rssh$$; PEER=rssp$$
cleanup() { ip netns del "$NS" 2>/dev/null || true; ip link del "$HOST" 2>/dev/null || true; }
trap cleanup EXIT
ip netns add "$NS"; ip link add "$HOST" type veth peer name "$PEER"; ip link set "$PEER" netns "$NS"
ip link set "$HOST" mtu 9000 up; ip netns exec "$NS" ip link set "$PEER" mtu 9000 up
sysctl -qw "net.ipv6.conf.$HOST.disable_ipv6=1" || true
# live NAME CMD...: CMD captures on $HOST while the churn is replayed at top speed; prints its
# CPU, peak memory and what it dropped (tcpdump: from its own summary).
live() {
    local name=$1; shift
    /usr/bin/time -f "%U %S %M" -o "$DIR/live.time" "$@" > "$DIR/live.out" 2> "$DIR/live.err" &
    local pid=$!
    sleep 1
    local rate
    rate=$(ip netns exec "$NS" tcpreplay --pps "$RATE" -i "$PEER" "$CHURN" 2>&1 | awk '/Rated:/ {for (i=1;i<=NF;i++) if ($i ~ /pps/) print $(i-1)}' | head -1)
    sleep 2
    pkill -INT -P "$pid" 2>/dev/null || true
    wait "$pid" || true
    read -r user sys kb < "$DIR/live.time"
    local dropped
    if [ -f "$DIR/live.json" ] && [ "$1" != tcpdump ]; then
        dropped=$(python3 -c "import json; l = json.load(open('$DIR/live.json'))['capture']['live']; print(l['dropped'] + l['if_dropped'])")
    else
        dropped=$(awk '/dropped by kernel/ {print $1}' "$DIR/live.err")
    fi
    rm -f "$DIR/live.json"
    printf "  %-52s %7.2f s CPU %8.1f MiB %9s dropped  (replay %s pps)\n" "$name" "$(awk "BEGIN{print $user + $sys}")" "$(awk "BEGIN{print $kb / 1024}")" "$dropped" "$rate"
}
# The rate of the issue's targets: what tcpdump -w /dev/null keeps whole here (a topspeed replay
# ran at 300,000-575,000 frames/s from one run to the next, and so did the drops).
RATE=${RATE:-300000}
echo "live: $CHURN (1,200,000 frames, 600,000 flows) replayed with tcpreplay --pps $RATE into a veth pair:"
live "tcpdump -w /dev/null" tcpdump -i "$HOST" -B 65536 -w /dev/null
live "roce-sniff --flow-timeout 5ms (analysis, report)" $BIN -i "$HOST" --no-tui --flow-timeout 5ms --json="$DIR/live.json"
live "  + --events" $BIN -i "$HOST" --no-tui --flow-timeout 5ms --json="$DIR/live.json" --events="$DIR/live.ndjson"
live "  + --events --metrics" $BIN -i "$HOST" --no-tui --flow-timeout 5ms --json="$DIR/live.json" --events="$DIR/live.ndjson" --metrics=127.0.0.1:19464
rm -rf "$DIR/live-dataset"
live "  + --events --metrics --parquet --rotate 1s (every output)" $BIN -i "$HOST" --no-tui --flow-timeout 5ms --json="$DIR/live.json" --events="$DIR/live.ndjson" --metrics=127.0.0.1:19464 --parquet "$DIR/live-dataset" --rotate 1s
echo "  targets: nothing dropped; memory < 150 MB (143 MiB); CPU with every output <= 4x tcpdump's"
