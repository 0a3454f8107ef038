#!/usr/bin/env bash
# Live capture against tcpdump (issues #24, #56). Two captures are replayed with tcpreplay into a
# veth pair (one end in a network namespace) and captured on the other end, each at a fixed rate
# and at top speed (tcpreplay --topspeed, about a million frames/s on two cores):
#
#   1. long-lived: 200,000 frames of a few long-lived QPs (the benchmark capture's first frames),
#      replayed three times;
#   2. churn: 1,200,000 frames of 300,000 QPs that each live for microseconds (gen-capture
#      --churn), with --flow-timeout 5ms.
#
# On each: tcpdump -w /dev/null, roce-sniff's analysis alone (a report at the end), each output
# alone (events to a file, metrics, the rolling dataset) with what it adds to the analysis, and
# every output at once (on the long-lived replay at the fixed rate, the live view in tmux too).
#
# Each row: frames captured and dropped (kernel and interface), the CPU of the whole process (perf
# task-clock; /usr/bin/time's 10 ms ticks hide tcpdump's cost), that CPU against tcpdump's on the
# same replay, what an output adds to the analysis alone, and the peak resident memory. Each
# command runs ROUNDS times and keeps its least CPU (the machine's speed drifts) and its most drops.
# After every-output rows: each flow ended exactly once in the events and in the dataset's flows
# table, or counted as dropped by the output that could not keep up (records_dropped).
#
#   benches/live_compare.sh [LONG_LIVED_CAPTURE]
#   RATE=300000 ROUNDS=2   # frames/s of the fixed-rate replays (where tcpdump drops nothing
#                          # here); rounds
#   LONG_ONLY=1            # the long-lived replays only
#
# Needs root, network namespaces, tcpreplay and perf (falls back to /usr/bin/time without perf);
# DuckDB's Python package reads the dataset (`make pydeps`).
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

# replay CAPTURE: replays it LOOPS times at SPEED (a rate in frames/s, or "top") and prints the
# rate tcpreplay reached (frames/s)
replay() {
    local speed=(--pps "$SPEED")
    [ "$SPEED" != top ] || speed=(--topspeed)
    ip netns exec "$NS" tcpreplay "${speed[@]}" --loop "${LOOPS:-1}" -i "$PEER" "$1" 2>&1 |
        awk '/Rated:/ {for (i = 1; i <= NF; i++) if ($i ~ /pps/) print $(i-1)}' | head -1
}

# captured_dropped ERR: "captured dropped" of the last run, from roce-sniff's --json report
# (live.json) or, for tcpdump, from its summary on standard error
captured_dropped() {
    if [ -f "$DIR/live.json" ]; then
        python3 -c "
import json; r = json.load(open('$DIR/live.json')); l = r['capture']['live']
print(r['capture']['packets'], l['dropped'] + l['if_dropped'])"
        [ -n "${KEEP_JSON:-}" ] || rm -f "$DIR/live.json"
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

# told_once JSON EVENTS DATASET: each flow ended exactly once in the events and in the dataset's
# flows table, or was counted as dropped by the output that could not keep up
told_once() {
    python3 - "$@" <<'PY'
import collections, glob, json, sys
report, events, dataset = sys.argv[1:4]
# Every flow seen ends once: by --flow-timeout, or when the capture ends.
ended = json.load(open(report))["capture"]["flows"]
ids, dropped = collections.Counter(), collections.Counter()
# A QP key's lifetimes: a silence of the link past --flow-timeout (tcpreplay stalling at top
# speed) ends the QPs in flight, and their later frames begin new flows, with new ids.
lives = collections.defaultdict(list)
for line in open(events):
    e = json.loads(line)
    if e["event"] == "flow_end":
        f = e["flow"]
        ids[f["id"]] += 1
        lives[(f["src"], f["dst"], f["dqpn"], f["vlan"])].append((f["first_ts"], f["last_ts"]))
    elif e["event"] == "records_dropped":
        dropped[(e["output"], e["kind"])] = e["dropped"]
rows = twice = 0
files = glob.glob(f"{dataset}/flows/*/*.parquet")
if files:
    import duckdb
    rows, distinct = duckdb.sql(
        f"SELECT count(*), count(DISTINCT flow_id) FROM read_parquet({files!r})").fetchall()[0]
    twice = rows - distinct
told_twice = sum(n - 1 for n in ids.values() if n > 1)
split = sum(len(v) - 1 for v in lives.values())
overlapping = sum(1 for v in lives.values() for a, b in zip(sorted(v), sorted(v)[1:]) if b[0] <= a[1])
ev_lost, pq_lost = dropped[("events", "flow_end")], dropped[("parquet", "flows")]
ok = (told_twice == 0 and twice == 0 and overlapping == 0 and len(ids) + ev_lost == ended
      and rows + pq_lost == ended)
print(f"    {ended} flows ended: events {len(ids)} written + {ev_lost} dropped, {told_twice} twice; "
      f"dataset flows {rows} written + {pq_lost} dropped, {twice} twice; "
      f"packets rows dropped {dropped[('parquet', 'packets')]}, timeline {dropped[('parquet', 'timeline')]}; "
      f"{split} QP keys written again for a later lifetime, {overlapping} overlapping"
      f" -> {'each flow once' if ok else 'NOT each flow once'}")
PY
}

# suite NAME CAPTURE LOOPS ARGS...: tcpdump, the analysis, each output and every output on
# CAPTURE replayed LOOPS times at SPEED, ROUNDS times; the table, the targets and the flows' check
suite() {
    local title=$1 capture=$2 loops=$3; shift 3
    local live=("$BIN" -i "$HOST" --no-tui "$@" --json="$DIR/live.json")
    local analysis="roce-sniff -i $* (analysis)" every="  + every output" told
    ROWS=(); CPU=(); DROP=(); CAPT=(); MIB=(); PPS=(); EVERY_CPU=()
    LOOPS=$loops
    for _ in $(seq "$ROUNDS"); do
        rm -rf "$DIR/live-dataset" "$DIR/live.ndjson"
        run "$TCPDUMP" "$capture" tcpdump -i "$HOST" -B 65536 -w /dev/null
        run "$analysis" "$capture" "${live[@]}"
        run "  + --events=FILE" "$capture" "${live[@]}" --events="$DIR/live.ndjson"
        run "  + --metrics" "$capture" "${live[@]}" --metrics=127.0.0.1:19464
        # The dataset at the live default, --rotate 1m: the whole replay in one set of parts.
        run "  + --parquet DIR (--rotate 1m, the default)" "$capture" "${live[@]}" --parquet "$DIR/live-dataset"
        rm -rf "$DIR/live-dataset" "$DIR/live.ndjson"
        KEEP_JSON=1 run "$every" "$capture" "${live[@]}" --events="$DIR/live.ndjson" \
            --metrics=127.0.0.1:19464 --parquet "$DIR/live-dataset"
        told=$(told_once "$DIR/live.json" "$DIR/live.ndjson" "$DIR/live-dataset")
        rm -f "$DIR/live.json"
        if [ "$SPEED" != top ] && [ "$capture" = "$LONG" ]; then
            run_view "  + the live view in tmux" "$capture" "$@" --json="$DIR/live.json"
        fi
    done
    rm -rf "$DIR/live-dataset" "$DIR/live.ndjson"
    local speed="$SPEED frames/s"
    [ "$SPEED" != top ] || speed="top speed"
    echo "live, $title replayed $loops time(s) at $speed into a veth pair; CPU: $CLOCK, least of $ROUNDS"
    table "$TCPDUMP" "$analysis"
    echo "  the analysis alone: $(awk "BEGIN{printf \"%.2f\", ${CPU[$analysis]} / ${CPU[$TCPDUMP]}}")x tcpdump's CPU (round by round, the median: $(paired "$analysis" "$TCPDUMP")x); target ${TARGET}x"
    echo "  every output: ${DROP[$every]} frames dropped (target 0), peak $(awk "BEGIN{printf \"%.0f\", ${MIB[$every]} * 1.048576}") MB (target < 150 MB); last round:"
    echo "$told"
}

TCPDUMP="tcpdump -w /dev/null"
LONG_FRAMES=$(tcpdump -r "$LONG" 2>/dev/null | wc -l)
for SPEED in "$RATE" top; do
    TARGET=2 suite "long-lived QPs: $LONG ($LONG_FRAMES frames)" "$LONG" 3
done
[ -z "${LONG_ONLY:-}" ] || exit 0
for SPEED in "$RATE" top; do
    TARGET=4 suite "churn: $CHURN (1,200,000 frames, 600,000 flows)" "$CHURN" 1 --flow-timeout 5ms
done
