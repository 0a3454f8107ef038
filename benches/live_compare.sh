#!/usr/bin/env bash
# Live capture side by side: 200,000 RoCE frames replayed with `tcpreplay --topspeed` into a veth
# pair (one end in a network namespace), captured on the other end by `tcpdump -w /dev/null` and
# by `roce-sniff -i` (status lines, then with the full-screen live view in tmux), each run alone. Prints what each captured and dropped, its CPU time per
# frame, and the rate the replay reached. Needs root, network namespaces and tcpreplay.
#
#   benches/live_compare.sh [CAPTURE]     # default: the first 200,000 frames of the benchmark capture
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "live comparison: needs root (veth pair, network namespace)"; exit 0; }
command -v tcpreplay >/dev/null || { echo "live comparison: tcpreplay is not installed"; exit 0; }
DIR=${BENCH_DIR:-/tmp/roce-sniff-bench}
SLICE=${1:-$DIR/slice-200k.pcap}
[ -f "$SLICE" ] || { echo "live comparison: $SLICE missing (benches/compare.sh makes it)"; exit 0; }
BIN=${ROCE_SNIFF:-./target/release/roce-sniff}
[ -n "${ROCE_SNIFF:-}" ] || cargo build --release --quiet --bin roce-sniff

NS=rsbench$$; HOST=rsbh$$; PEER=rsbp$$
cleanup() { ip netns del "$NS" 2>/dev/null || true; ip link del "$HOST" 2>/dev/null || true; }
trap cleanup EXIT
ip netns add "$NS"
ip link add "$HOST" type veth peer name "$PEER"
ip link set "$PEER" netns "$NS"
ip link set "$HOST" mtu 9000 up
ip netns exec "$NS" ip link set "$PEER" mtu 9000 up
sysctl -qw "net.ipv6.conf.$HOST.disable_ipv6=1" || true

FRAMES=$(tcpdump -r "$SLICE" 2>/dev/null | wc -l)

# replay: prints the rate tcpreplay reports (packets/s)
replay() {
    ip netns exec "$NS" tcpreplay --topspeed -i "$PEER" "$SLICE" 2>&1 | awk '/Rated:/ {for (i=1;i<=NF;i++) if ($i ~ /pps/) print $(i-1)}' | head -1
}

# CPU time of a command: perf's task-clock when perf is there (exact: /usr/bin/time's figures
# come from 10 ms ticks and made tcpdump's ring allocation vanish), else /usr/bin/time.
# timed OUT CMD... ; cpu_seconds OUT prints the seconds.
if command -v perf >/dev/null && perf stat -e task-clock true >/dev/null 2>&1; then
    timed() { local out=$1; shift; perf stat -x, -e task-clock -o "$out" "$@"; }
    cpu_seconds() { awk -F, '/task-clock/ {print $1 / 1000}' "$1"; }
    CLOCK="perf task-clock"
else
    timed() { local out=$1; shift; /usr/bin/time -f "%U %S" -o "$out" "$@"; }
    cpu_seconds() { awk '{print $1 + $2}' "$1"; }
    CLOCK="/usr/bin/time user+sys"
fi

# tcpdump -w /dev/null with the same default buffer as roce-sniff (-B 65536 KiB)
timed "$DIR/td.time" tcpdump -i "$HOST" -B 65536 -w /dev/null 2> "$DIR/td.err" &
sleep 1
TD_RATE=$(replay)
sleep 1
kill -INT "$(pgrep -n -x tcpdump)" 2>/dev/null || true
wait || true
TD_CAPT=$(awk '/packets captured/ {print $1}' "$DIR/td.err")
TD_DROP=$(awk '/dropped by kernel/ {print $1}' "$DIR/td.err")
TD_CPU=$(cpu_seconds "$DIR/td.time")

timed "$DIR/rs.time" "$BIN" -i "$HOST" ${ROCE_ARGS:-} --json="$DIR/live.json" 2> "$DIR/rs.err" &
sleep 1
RS_RATE=$(replay)
sleep 1
kill -INT "$(pgrep -n -f "$BIN -i $HOST")" 2>/dev/null || true
wait || true
RS_CPU=$(cpu_seconds "$DIR/rs.time")
read -r RS_RECV RS_DROP RS_FRAMES < <(python3 -c "
import json; r = json.load(open('$DIR/live.json'))
l = r['capture']['live']; print(l['received'], l['dropped'] + l['if_dropped'], r['capture']['packets'])")

# The same with the full-screen live view on (tmux as its terminal; --json=FILE leaves it
# standard output): what drawing once a second costs on top of the capture and analysis.
VIEW_CPU=""; VIEW_DROP=""; VIEW_FRAMES=""; VIEW_RATE=""
if command -v tmux >/dev/null; then
    tmux new-session -d -s "rsview$$" -x 120 -y 40 \
        "perf stat -x, -e task-clock -o $DIR/view.time $BIN -i $HOST ${ROCE_ARGS:-} --json=$DIR/view.json 2> $DIR/view.err"
    sleep 1.5
    VIEW_RATE=$(replay)
    sleep 1.5
    tmux send-keys -t "rsview$$" q
    for _ in $(seq 50); do tmux has-session -t "rsview$$" 2>/dev/null || break; sleep 0.2; done
    tmux kill-session -t "rsview$$" 2>/dev/null || true
    VIEW_CPU=$(cpu_seconds "$DIR/view.time")
    read -r _ VIEW_DROP VIEW_FRAMES < <(python3 -c "
import json; r = json.load(open('$DIR/view.json'))
l = r['capture']['live']; print(l['received'], l['dropped'] + l['if_dropped'], r['capture']['packets'])")
fi

echo "live: $FRAMES frames replayed with tcpreplay --topspeed into a veth pair (CPU: $CLOCK)"
awk -v n="$FRAMES" -v tc="$TD_CAPT" -v td="$TD_DROP" -v tr="$TD_RATE" -v tcpu="$TD_CPU" \
    -v rf="$RS_FRAMES" -v rd="$RS_DROP" -v rr="$RS_RATE" -v rcpu="$RS_CPU" \
    -v vf="$VIEW_FRAMES" -v vd="$VIEW_DROP" -v vr="$VIEW_RATE" -v vcpu="$VIEW_CPU" 'BEGIN {
    printf "  %-28s %10s %10s %14s %16s\n", "", "captured", "dropped", "replay pps", "CPU us/frame"
    printf "  %-28s %10d %10d %14s %16.2f\n", "tcpdump -w /dev/null", tc, td, tr, tcpu * 1e6 / n
    printf "  %-28s %10d %10d %14s %16.2f\n", "roce-sniff -i (report)", rf, rd, rr, rcpu * 1e6 / n
    if (vcpu != "") printf "  %-28s %10d %10d %14s %16.2f\n", "roce-sniff -i (live view)", vf, vd, vr, vcpu * 1e6 / n
    printf "  targets: roce-sniff drops <= tcpdump drops; CPU per frame <= 2x tcpdump (%.2fx)\n", rcpu / tcpu
}'
