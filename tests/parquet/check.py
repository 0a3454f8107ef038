"""Reads a roce-sniff Parquet dataset back with one engine (duckdb or spark) and checks it
against the JSON reports of its captures: packet counts, per-flow counters, timeline sums per
flow, PFC counts, findings. Prints what differs and exits 1; prints "ok" and exits 0.

usage: check.py ENGINE DIR CAPTURE=REPORT.json[,EVENTS.ndjson] ...

A capture written as a rolling dataset (--rotate) names its flows by their own ids and writes
its findings as they first held: give its --events output, whose flow_end and finding events
are then what the flows and findings tables must hold (and the flows the report lists).
"""
import json
import sys
from collections import Counter


def duckdb_engine(d):
    import duckdb

    con = duckdb.connect()

    def query(sql):
        for t in ["packets", "flows", "timeline", "pfc", "findings"]:
            sql = sql.replace(
                "{%s}" % t,
                f"read_parquet('{d}/{t}/*/*.parquet', hive_partitioning=true)",
            )
        return [tuple(r) for r in con.sql(sql).fetchall()]

    return query


def spark_engine(d):
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[1]")
        .appName("roce-sniff-check")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    for t in ["packets", "flows", "timeline", "pfc", "findings"]:
        spark.read.parquet(f"{d}/{t}").createOrReplaceTempView(t)

    def query(sql):
        for t in ["packets", "flows", "timeline", "pfc", "findings"]:
            sql = sql.replace("{%s}" % t, t)
        return [tuple(r) for r in spark.sql(sql).collect()]

    return query


def counters(f):
    return (
        f["packets"],
        f["bytes"],
        f["psn"]["gaps"],
        f["psn"]["retransmitted"],
        f["ce"],
        f["cnps"],
        sum(f["naks"].values()),
    )


def finding_key(f):
    """A finding's code, count and the flows it tells of (a group's, 1, or none)."""
    flows = f["group"]["flows"] if f.get("group") else (1 if f["flow"] is not None else None)
    return f["code"], f["count"], flows


def expected(report, events):
    c = report["capture"]
    if events is None:
        flows = {f["id"]: counters(f) for f in report["flows"]}
        findings = Counter(finding_key(f) for f in report["findings"])
    else:
        flows = {e["flow"]["id"]: counters(e["flow"]) for e in events if e["event"] == "flow_end"}
        findings = Counter(finding_key(e["finding"]) for e in events if e["event"] == "finding")
    pfc = Counter()
    for p in report["pfc"]["priorities"]:
        pfc[(p["source"], p["priority"])] += p["xoff"]
    return c["packets"], c["roce_packets"], c["pfc_frames"], flows, pfc, findings


def check(query, capture, report, events):
    packets, roce, pfc_frames, flows, pfc, findings = expected(report, events)
    where = f"capture = '{capture}'"
    wrong = []

    def same(what, got, want):
        if got != want:
            wrong.append(f"{capture}: {what}: got {got}, want {want}")

    if events is not None:
        ended = sorted(
            (e["flow"]["src"], e["flow"]["dst"], e["flow"]["dqpn"]) + counters(e["flow"])
            for e in events
            if e["event"] == "flow_end"
        )
        listed = sorted((f["src"], f["dst"], f["dqpn"]) + counters(f) for f in report["flows"])
        same("flows ended (events) against the report's", ended, listed)

    same("packets", query(f"select count(*) from {{packets}} where {where}")[0][0], packets)
    same(
        "roce packets",
        query(
            f"select count(*) from {{packets}} where {where} and kind in ('rocev2', 'rocev1', 'ib')"
        )[0][0],
        roce,
    )
    same(
        "pfc frames",
        query(f"select count(*) from {{packets}} where {where} and kind = 'pfc'")[0][0],
        pfc_frames,
    )
    got = {
        r[0]: tuple(int(x) for x in r[1:])
        for r in query(
            f"select flow_id, packets, bytes, psn_gaps, psn_retransmitted, ce, cnps, naks "
            f"from {{flows}} where {where}"
        )
    }
    same("flows", got, flows)
    got = {
        r[0]: tuple(int(x) for x in r[1:])
        for r in query(
            f"select flow_id, sum(packets), sum(bytes), sum(gaps), sum(retransmitted), sum(ce), "
            f"sum(cnps), sum(naks) from {{timeline}} where {where} group by flow_id"
        )
    }
    same("timeline sums", got, {k: v for k, v in flows.items() if v[0] > 0})
    got = Counter(
        {
            (r[0], int(r[1])): int(r[2])
            for r in query(
                f"select src_mac, priority, sum(xoff) from {{pfc}} where {where} group by 1, 2"
            )
        }
    )
    same("pfc xoff", +got, +pfc)
    got = Counter(
        (r[0], int(r[1]), None if r[2] is None else int(r[2]))
        for r in query(f"select code, count, flows from {{findings}} where {where}")
    )
    same("findings", got, findings)
    same(
        "packets per flow",
        {
            r[0]: int(r[1])
            for r in query(
                f"select flow_id, count(*) from {{packets}} where {where} and flow_id is not null "
                f"group by flow_id"
            )
        },
        {k: v[0] for k, v in flows.items() if v[0] > 0},
    )
    return wrong


def main():
    engine, d = sys.argv[1], sys.argv[2]
    query = {"duckdb": duckdb_engine, "spark": spark_engine}[engine](d)
    wrong = []
    for arg in sys.argv[3:]:
        capture, paths = arg.split("=", 1)
        path, _, events_path = paths.partition(",")
        with open(path) as f:
            report = json.load(f)
        events = None
        if events_path:
            with open(events_path) as f:
                events = [json.loads(line) for line in f]
        wrong += check(query, capture, report, events)
    if wrong:
        print("\n".join(wrong))
        sys.exit(1)
    print("ok")


main()
