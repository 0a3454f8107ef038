#!/usr/bin/env bash
# Side-by-side timing of roce-sniff against cat, cksum, tcpdump and tshark on one generated capture.
#
#   benches/compare.sh                  # 2,000,000 frames (~2 GB) in $BENCH_DIR (default /tmp/roce-sniff-bench)
#   FRAMES=10000000 benches/compare.sh  # ~10 GB: the bounded-memory check
#
# Prints wall time and peak resident memory of each command, with the page cache warm, and the
# ratios the performance targets are stated in. tshark runs on a 200,000-frame slice (fields)
# and a 20,000-frame slice (-T json) and is scaled up, as a whole run would take minutes.
set -euo pipefail
cd "$(dirname "$0")/.."

FRAMES=${FRAMES:-2000000}
DIR=${BENCH_DIR:-/tmp/roce-sniff-bench}
mkdir -p "$DIR"
CAP="$DIR/bench-$FRAMES.pcap"

command -v tshark >/dev/null && command -v tcpdump >/dev/null || make deps >/dev/null
[ -x /usr/bin/time ] || { apt-get install -y -qq time >/dev/null 2>&1 || sudo apt-get install -y -qq time >/dev/null; }

cargo build --release --quiet --bin roce-sniff && cargo build --release --quiet -p roce-testgen --bin gen-capture
BIN=./target/release/roce-sniff
[ -f "$CAP" ] || ./target/release/gen-capture --frames "$FRAMES" "$CAP" >/dev/null
SIZE=$(stat -c %s "$CAP")
NFRAMES=$(capinfos -c -M "$CAP" 2>/dev/null | awk '/Number of packets/ {print $NF}' || echo "$FRAMES")
NFRAMES=${NFRAMES:-$FRAMES}

# Commands are timed in rounds, each round running every command once, and each keeps its best
# wall time (and the peak RSS of that run): on a shared machine whose speed drifts from one
# minute to the next, the ratios then compare runs of the same minutes.
declare -A WALL RSS
NAMES=(); CMDS=()
add() { NAMES+=("$1"); shift; CMDS+=("$*"); }
time_all() {
    for _ in 1 2 3; do
        for k in "${!NAMES[@]}"; do
            local name=${NAMES[$k]}
            /usr/bin/time -f "%e %M" -o "$DIR/time.txt" bash -c "${CMDS[$k]}" >/dev/null 2>&1
            read -r t m < "$DIR/time.txt"
            if [ -z "${WALL[$name]:-}" ] || awk "BEGIN{exit !($t < ${WALL[$name]})}"; then
                WALL[$name]=$t; RSS[$name]=$m
            fi
        done
    done
    for name in "${NAMES[@]}"; do
        printf "  %-42s %8.2f s %8.1f MB\n" "$name" "${WALL[$name]}" "$(awk "BEGIN{print ${RSS[$name]}/1024}")"
    done
}

echo "capture: $CAP ($NFRAMES frames, $(awk "BEGIN{printf \"%.2f\", $SIZE/1e9}") GB); machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
cat "$CAP" > /dev/null   # warm the page cache
SLICE=$DIR/slice-200k.pcap; SLICE_J=$DIR/slice-20k.pcap
[ -f "$SLICE" ] || tcpdump -r "$CAP" -c 200000 -w "$SLICE" 2>/dev/null
[ -f "$SLICE_J" ] || tcpdump -r "$CAP" -c 20000 -w "$SLICE_J" 2>/dev/null
TS="tshark -n -d udp.port==4791,infiniband --disable-protocol tftp --disable-protocol dns"
FIELDS="-e frame.number -e infiniband.bth.opcode -e infiniband.bth.destqp -e infiniband.bth.psn -e infiniband.aeth.syndrome -e vlan.priority -e ip.dsfield.dscp -e ip.dsfield.ecn"
add "cat > /dev/null" "cat $CAP"
# cksum reads every byte and computes on it (coreutils' CRC): the reference of the speed goal.
add "cksum" "cksum $CAP"
add "tcpdump -r -w /dev/null" "tcpdump -r $CAP -w /dev/null"
add "roce-sniff (report, all cores)" "$BIN -r $CAP --json=$DIR/report.json"
add "roce-sniff (report, --threads 1)" "$BIN -r $CAP --threads 1 --json=$DIR/report-1.json"
# The analysis in one shard with every decoding thread: what the shards add.
add "roce-sniff (report, --shards 1)" "$BIN -r $CAP --shards 1 --json=$DIR/report-s1.json"
add "roce-sniff (report, --shards 8)" "$BIN -r $CAP --shards 8 --json=$DIR/report-s8.json"
add "roce-sniff --packets --json" "$BIN -r $CAP --packets --json > $DIR/frames.ndjson"
# The Parquet export next to the analysis (the same JSON report).
add "roce-sniff --parquet" "rm -rf $DIR/parquet; $BIN -r $CAP --json=$DIR/report-pq.json --parquet $DIR/parquet"
# Two capture points: the capture correlated with itself (every packet matched, no delay).
add "roce-sniff --correlate (the capture twice)" "$BIN --correlate -r $CAP -r $CAP --json=$DIR/correlation.json"
add "tshark -T fields (200k slice)" "$TS -r $SLICE -T fields $FIELDS"
add "tshark -T json (20k slice)" "$TS -r $SLICE_J -T json"
time_all
IDENT=yes
for other in report-1 report-s1 report-s8; do cmp -s "$DIR/report.json" "$DIR/$other.json" || IDENT=NO; done

awk -v n="$NFRAMES" -v cat="${WALL[cat > /dev/null]}" -v rs="${WALL[roce-sniff (report, all cores)]}" \
    -v ck="${WALL[cksum]}" -v td="${WALL[tcpdump -r -w /dev/null]}" -v s1="${WALL[roce-sniff (report, --shards 1)]}" \
    -v rs1="${WALL[roce-sniff (report, --threads 1)]}" -v nd="${WALL[roce-sniff --packets --json]}" \
    -v tf="${WALL[tshark -T fields (200k slice)]}" -v tj="${WALL[tshark -T json (20k slice)]}" \
    -v rss="${RSS[roce-sniff (report, all cores)]}" -v ident="$IDENT" \
    -v cr="${WALL[roce-sniff --correlate (the capture twice)]}" -v crss="${RSS[roce-sniff --correlate (the capture twice)]}" \
    -v pq="${WALL[roce-sniff --parquet]}" -v pqss="${RSS[roce-sniff --parquet]}" 'BEGIN {
    tf_full = tf * n / 200000; tj_full = tj * n / 20000
    printf "\nfull analysis: %.2f s = %.2fx cat, %.2fx cksum (target <= 1.25x), %.2fx tcpdump; %.0f frames/s; %.2fx faster than --threads 1, %.2fx faster than --shards 1\n", rs, rs / cat, rs / ck, rs / td, n / rs, rs1 / rs, s1 / rs
    printf "tshark field extraction scaled to the whole file: %.1f s: roce-sniff is %.0fx faster (target ~90x)\n", tf_full, tf_full / rs
    printf "NDJSON: %.0f frames/s vs tshark -T json %.0f frames/s: %.0fx (target >= 100x)\n", n / nd, 20000 / tj, (n / nd) / (20000 / tj)
    printf "peak memory of the analysis: %.1f MB (target < 100 MB); report identical with --threads 1, --shards 1 and 8: %s\n", rss / 1024, ident
    printf "Parquet export: %.2f s = %.2fx the analysis (target <= 3x), %.1f MB (target < 200 MB)\n", pq, pq / rs, pqss / 1024
    printf "correlation of two points (the capture twice): %.2f s = %.2fx one analysis, %.1f MB\n", cr, cr / rs, crss / 1024
}'

# Live capture against tcpdump (root only: a veth pair in a network namespace, tcpreplay).
benches/live_compare.sh "$SLICE"

# Flow state at scale: many short-lived flows, offline and live.
benches/scale.sh
