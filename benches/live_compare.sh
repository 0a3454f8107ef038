#!/usr/bin/env bash
# Live capture against tcpdump (issue #24, item 6). Two captures are replayed with tcpreplay at a
# fixed rate into a veth pair (one end in a network namespace) and captured on the other end:
#
#   1. long-lived: 200,000 frames of a few long-lived QPs (the benchmark capture's first frames):
#      tcpdump -w /dev/null, roce-sniff's analysis alone (a report at the end), and the analysis
#      with the full-screen live view (tmux as its terminal);
#   2. churn: 1,200,000 frames of 300,000 QPs that each live for microseconds (gen-capture
#      --churn), with --flow-timeout 5ms: tcpdump, the analysis alone, each output alone (events
#      to a file, metrics, the rolling dataset), and every output at once.
#
# Each row: frames captured and dropped (kernel and interface), the CPU of the whole process (perf
# task-clock; /usr/bin/time's 10 ms ticks hide tcpdump's cost), that CPU against tcpdump's on the
# same replay, what an output adds to the analysis alone, and the peak resident memory. Each
# command runs ROUNDS times and keeps its least CPU (the machine's speed drifts) and its most drops;
# the medians follow, and the median of the ratios to tcpdump round by round (the two run within
# seconds of each other, so the drift between rounds cancels out).
#
#   benches/live_compare.sh [LONG_LIVED_CAPTURE]
#   RATE=300000 ROUNDS=2   # frames/s of the replays (where tcpdump drops nothing here); rounds
#   LONG_ONLY=1            # the long-lived replays only (the churn takes minutes a round)
#
# Needs root, network namespaces, tcpreplay and perf (falls back to /usr/bin/time without perf).
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "live comparison: needs root (veth pair, network namespace)"; exit 0; }
command -v tcpreplay >/dev/null || { echo "live comparison: tcpreplay is not installed"; exit 0; }
[ -x /usr/bin/time ] || { apt-get install -y -qq time >/dev/null 2>&1 || sudo apt-get install -y -qq time >/dev/null; }
DIR=${BENCH_DIR:-/tmp/roce-sniff-bench}
mkdir -p "$DIR"
RATE=${RATE:-300000}
ROUNDS=${ROUNDS:-2}
BIN=${ROCE_SNIFF:-./target/release/roce-sniff}
GEN=./target/release/gen-capture
[ -n "${ROCE_SNIFF:-}" ] || cargo build --release --quiet --bin roce-sniff
cargo build --release --quiet -p roce-testgen --bin gen-capture

LONG=${1:-$DIR/slice-200k.pcap}
if [ ! -f "$LONG" ]; then
    # benches/compare.sh cuts this slice from its 2,000,000-frame capture; the generator makes
    # the same first 200,000 frames directly.
    $GEN --frames 200000 "$LONG" >/dev/null
fi
CHURN=$DIR/churn-300k.pcap
[ -f "$CHURN" ] || $GEN --churn 300000 "$CHURN" >/dev/null

NS=rslive$$; HOST=rslh$$; PEER=rslp$$
cleanup() {
    tmux kill-session -t "rsview$$" 2>/dev/null || true
    ip netns del "$NS" 2>/dev/null || true
    ip link del "$HOST" 2>/dev/null || true
}
trap cleanup EXIT
ip netns add "$NS"
ip link add "$HOST" type veth peer name "$PEER"
ip link set "$PEER" netns "$NS"
ip link set "$HOST" mtu 9000 up
ip netns exec "$NS" ip link set "$PEER" mtu 9000 up
sysctl -qw "net.ipv6.conf.$HOST.disable_ipv6=1" || true

# CPU of the whole process: perf's task-clock (exact), else /usr/bin/time's user + system
if command -v perf >/dev/null && perf stat -e task-clock true >/dev/null 2>&1; then
    CLOCK="perf task-clock"
    CPU_OF=(perf stat -x, -e task-clock -o "$DIR/live.cpu")
    cpu_seconds() { awk -F, '/task-clock/ {print $1 / 1000}' "$DIR/live.cpu"; }
else
    CLOCK="/usr/bin/time user+sys"
    CPU_OF=(/usr/bin/time -f "%U %S" -o "$DIR/live.cpu")
    cpu_seconds() { awk '{print $1 + $2}' "$DIR/live.cpu"; }
fi
# Peak resident memory (KiB) around it: /usr/bin/time -> the CPU wrapper -> the command.
MEM_OF=(/usr/bin/time -f %M -o "$DIR/live.mem")

# replay CAPTURE: replays it at RATE and prints the rate tcpreplay reached (frames/s)
replay() {
    ip netns exec "$NS" tcpreplay --pps "$RATE" -i "$PEER" "$1" 2>&1 |
        awk '/Rated:/ {for (i = 1; i <= NF; i++) if ($i ~ /pps/) print $(i-1)}' | head -1
}

# captured_dropped ERR: "captured dropped" of the last run, from roce-sniff's --json report
# (live.json) or, for tcpdump, from its summary on standard error
captured_dropped() {
    if [ -f "$DIR/live.json" ]; then
        python3 -c "
import json; r = json.load(open('$DIR/live.json')); l = r['capture']['live']
print(r['capture']['packets'], l['dropped'] + l['if_dropped'])"
        rm -f "$DIR/live.json"
    else
        awk '/packets captured/ {c = $1} /dropped by kernel/ {d = $1} END {print c, d}' "$1"
    fi
}

# One row per command: CPU (least of the rounds), dropped (most), captured, peak MiB, rate.
declare -A CPU DROP CAPT MIB PPS EVERY_CPU
ROWS=()
keep() { # NAME CPU CAPTURED DROPPED KIB RATE
    local name=$1
    EVERY_CPU[$name]+="$2 "
    if [ -z "${CPU[$name]:-}" ]; then
        ROWS+=("$name"); CPU[$name]=$2; CAPT[$name]=$3; DROP[$name]=$4; MIB[$name]=$(($5 / 1024)); PPS[$name]=$6
        return
    fi
    if awk "BEGIN{exit !($2 < ${CPU[$name]})}"; then CPU[$name]=$2; CAPT[$name]=$3; MIB[$name]=$(($5 / 1024)); PPS[$name]=$6; fi
    [ "$4" -gt "${DROP[$name]}" ] && DROP[$name]=$4
    return 0
}

# run NAME CAPTURE CMD...: CMD captures on $HOST while CAPTURE is replayed; stopped with SIGINT.
run() {
    local name=$1 capture=$2; shift 2
    "${MEM_OF[@]}" "${CPU_OF[@]}" "$@" > "$DIR/live.out" 2> "$DIR/live.err" &
    local pid=$! rate
    sleep 1
    rate=$(replay "$capture")
    sleep 2
    # SIGINT to the command itself, the grandchild: as Ctrl-C, it ends its capture and reports.
    pkill -INT -P "$(pgrep -P "$pid" | head -1)" 2>/dev/null || true
    wait "$pid" || true
    # shellcheck disable=SC2046 # captured and dropped are two arguments
    keep "$name" "$(cpu_seconds)" $(captured_dropped "$DIR/live.err") "$(cat "$DIR/live.mem")" "$rate"
}

# run_view NAME CAPTURE ARGS...: roce-sniff -i ARGS with its live view in tmux, stopped with q
run_view() {
    local name=$1 capture=$2; shift 2
    command -v tmux >/dev/null || return 0
    tmux new-session -d -s "rsview$$" -x 120 -y 40 \
        "${MEM_OF[*]} ${CPU_OF[*]} $BIN -i $HOST $* 2> $DIR/live.err"
    sleep 1.5
    local rate
    rate=$(replay "$capture")
    sleep 1.5
    tmux send-keys -t "rsview$$" q
    for _ in $(seq 50); do tmux has-session -t "rsview$$" 2>/dev/null || break; sleep 0.2; done
    tmux kill-session -t "rsview$$" 2>/dev/null || true
    # shellcheck disable=SC2046
    keep "$name" "$(cpu_seconds)" $(captured_dropped "$DIR/live.err") "$(cat "$DIR/live.mem")" "$rate"
}

# median NAME: the median CPU of NAME's rounds (the least can be one lucky round)
median() {
    echo "${EVERY_CPU[$1]}" | tr ' ' '\n' | grep . | sort -g | awk '{v[NR] = $1}
        END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

# paired NAME BASE: the median of NAME's CPU over BASE's, round by round (each round runs both
# within seconds of each other, so the machine's drift between rounds cancels out)
paired() {
    paste <(echo "${EVERY_CPU[$1]}" | tr ' ' '\n' | grep .) <(echo "${EVERY_CPU[$2]}" | tr ' ' '\n' | grep .) |
        awk '{print $1 / $2}' | sort -g | awk '{v[NR] = $1}
        END {printf "%.2f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

# table BASE ANALYSIS: the rows so far, each against the BASE row's CPU (tcpdump) and, for the
# outputs, what they add to the ANALYSIS row's
table() {
    local base=${CPU[$1]} analysis=${CPU[$2]:-0}
    printf "  %-46s %9s %8s %8s %10s %10s %8s %11s\n" "" captured dropped "CPU s" "x tcpdump" "+ output" "peak MiB" "replay pps"
    for name in "${ROWS[@]}"; do
        awk -v n="$name" -v c="${CPU[$name]}" -v b="$base" -v a="$analysis" -v an="$2" \
            -v cap="${CAPT[$name]}" -v d="${DROP[$name]}" -v m="${MIB[$name]}" -v r="${PPS[$name]}" 'BEGIN {
            extra = (n ~ /^  \+/) ? sprintf("%+.2f s", c - a) : ""
            printf "  %-46s %9d %8d %8.3f %9.1fx %10s %8d %11s\n", n, cap, d, c, c / b, extra, m, r
        }'
    done
}

TCPDUMP="tcpdump -w /dev/null" ANALYSIS="roce-sniff -i (analysis, report)"
LONG_FRAMES=$(tcpdump -r "$LONG" 2>/dev/null | wc -l)
for _ in $(seq "$ROUNDS"); do
    run "$TCPDUMP" "$LONG" tcpdump -i "$HOST" -B 65536 -w /dev/null
    run "$ANALYSIS" "$LONG" $BIN -i "$HOST" --no-tui --json="$DIR/live.json"
    run_view "roce-sniff -i (analysis, live view in tmux)" "$LONG" --json="$DIR/live.json"
done
echo "live, long-lived QPs: $LONG ($LONG_FRAMES frames) replayed at $RATE frames/s into a veth pair; CPU: $CLOCK, least of $ROUNDS"
table "$TCPDUMP" "$ANALYSIS"
LONG_RATIO=$(awk "BEGIN{printf \"%.2f\", ${CPU[$ANALYSIS]} / ${CPU[$TCPDUMP]}}")
echo "  target: nothing dropped; the analysis alone at most 2x tcpdump's CPU (${LONG_RATIO}x)"
MEDIAN_RATIO=$(awk "BEGIN{printf \"%.2f\", $(median "$ANALYSIS") / $(median "$TCPDUMP")}")
echo "  medians of the rounds: tcpdump $(median "$TCPDUMP") s, the analysis $(median "$ANALYSIS") s (${MEDIAN_RATIO}x)"
echo "  round by round, the median of the analysis over tcpdump: $(paired "$ANALYSIS" "$TCPDUMP")x"
[ -z "${LONG_ONLY:-}" ] || exit 0

ROWS=(); CPU=(); DROP=(); CAPT=(); MIB=(); PPS=(); EVERY_CPU=()
LIVE=("$BIN" -i "$HOST" --no-tui --flow-timeout 5ms --json="$DIR/live.json")
for _ in $(seq "$ROUNDS"); do
    rm -rf "$DIR/live-dataset" "$DIR/live.ndjson"
    run "$TCPDUMP" "$CHURN" tcpdump -i "$HOST" -B 65536 -w /dev/null
    run "roce-sniff -i --flow-timeout 5ms (analysis)" "$CHURN" "${LIVE[@]}"
    run "  + --events=FILE" "$CHURN" "${LIVE[@]}" --events="$DIR/live.ndjson"
    run "  + --metrics" "$CHURN" "${LIVE[@]}" --metrics=127.0.0.1:19464
    # The dataset at the live default, --rotate 1m: the whole replay in one set of parts, the
    # most a part's writer holds (a 1s rotation once hid its growth).
    run "  + --parquet DIR (--rotate 1m, the default)" "$CHURN" "${LIVE[@]}" --parquet "$DIR/live-dataset"
    rm -rf "$DIR/live-dataset" "$DIR/live.ndjson"
    run "  + every output" "$CHURN" "${LIVE[@]}" --events="$DIR/live.ndjson" \
        --metrics=127.0.0.1:19464 --parquet "$DIR/live-dataset"
done
rm -rf "$DIR/live-dataset" "$DIR/live.ndjson"
echo "live, churn: $CHURN (1,200,000 frames, 600,000 flows) replayed at $RATE frames/s; CPU: $CLOCK, least of $ROUNDS"
table "$TCPDUMP" "roce-sniff -i --flow-timeout 5ms (analysis)"
EVERY="  + every output"
ALL_RATIO=$(awk "BEGIN{printf \"%.1f\", ${CPU[$EVERY]} / ${CPU[$TCPDUMP]}}")
echo "  targets: nothing dropped; memory < 150 MB (143 MiB); every output at most 4x tcpdump's CPU (${ALL_RATIO}x)"
echo "  round by round, the median of every output over tcpdump: $(paired "$EVERY" "$TCPDUMP")x"
