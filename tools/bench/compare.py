#!/usr/bin/env python3
"""Checks that our engine, Kuzu and FalkorDB gave the same answer to every corpus query and
prints the comparison table (p50 of each, ratio of ours to the better peer).

Answers are normalised before they are compared: rows as a multiset unless the query's final
RETURN has ORDER BY; numbers compared as numbers (int 3 equals float 3.0) to a relative
tolerance of 1e-9; datetimes as epoch milliseconds (FalkorDB stores them as integers, see
peers.py); lists (collect) as multisets. Column names are not compared (engines name unaliased
expressions differently). A peer's time enters the table only when its answer matched ours;
the "better peer" is the faster of the matching ones.

Standard library only. Usage:
  compare.py OURS.jsonl PEERS.jsonl [--meta PEERS_META.json] [--ours-log OURS.txt]
             [--markdown OUT.md] [--update-doc docs/benchmarks.md]
Every difference and failure is listed under the table. Exits 1 when ours failed a query or
when no peer that ran a query agrees with our answer (then ours is suspect); a single peer that
disagrees while the other agrees is listed but does not fail the run.
"""
import argparse
import json
import math
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import peers  # noqa: E402  (the corpus reader)

REL_TOL = 1e-9
START, END = "<!-- peers-table:start -->", "<!-- peers-table:end -->"


def ordered(text):
    """Whether the final RETURN sorts its rows."""
    last = text.upper().rfind("RETURN")
    return re.search(r"\bORDER\s+BY\b", text[last:], re.IGNORECASE) is not None


def norm(v):
    """A comparable form: numbers as floats, datetimes as numbers, lists sorted."""
    if isinstance(v, dict) and set(v) == {"$dt"}:
        return float(v["$dt"])
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, list):
        return sorted((norm(x) for x in v), key=sort_key)
    if isinstance(v, dict):
        return {k: norm(x) for k, x in sorted(v.items())}
    return v


def sort_key(v):
    if v is None:
        return (0, "")
    if isinstance(v, bool):
        return (1, str(v))
    if isinstance(v, float):
        return (2, "%.9e" % v if math.isfinite(v) else str(v))
    if isinstance(v, str):
        return (3, v)
    if isinstance(v, list):
        return (4, json.dumps([sort_key(x) for x in v]))
    return (5, json.dumps(v, sort_keys=True, default=str))


def same(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, float) and isinstance(b, float):
        return a == b or abs(a - b) <= REL_TOL * max(1.0, abs(a), abs(b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


def canonical(rows, is_ordered):
    rows = [[norm(v) for v in row] for row in rows]
    if not is_ordered:
        rows.sort(key=lambda r: [sort_key(v) for v in r])
    return rows


def diff(ours, theirs, is_ordered):
    """None when equal, else a short description of the first difference."""
    a, b = canonical(ours, is_ordered), canonical(theirs, is_ordered)
    if len(a) != len(b):
        return f"{len(a)} rows vs {len(b)}: ours {a[:3]} ... theirs {b[:3]} ..."
    for i, (x, y) in enumerate(zip(a, b)):
        if len(x) != len(y) or not same(x, y):
            return f"row {i}: ours {x} vs theirs {y}"
    return None


def fmt_us(us):
    if us is None:
        return "–"
    if us >= 1000:
        return f"{us / 1000:,.2f} ms"
    return f"{us:,.1f} µs"


def read_jsonl(path):
    out = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                out[(r["engine"], r["name"])] = r
    return out


def self_test():
    """The normalisation rules, checked (run by benches/tests/corpus.rs)."""
    assert ordered("MATCH (n) WITH n ORDER BY n.a LIMIT 3 RETURN n.a") is False
    assert ordered("MATCH (n) RETURN n.a AS a ORDER BY a")
    assert diff([[1, "x"], [2, "y"]], [[2.0, "y"], [1, "x"]], False) is None
    assert diff([[1, "x"], [2, "y"]], [[2.0, "y"], [1, "x"]], True) is not None
    assert diff([[0.1 + 0.2]], [[0.3]], True) is None
    assert diff([[0.3001]], [[0.3]], True) is not None
    assert diff([[{"$dt": 1735689640356.0}]], [[1735689640356]], False) is None
    assert diff([[["b", "a", "a"]]], [[["a", "b", "a"]]], False) is None
    assert diff([[["a", "b"]]], [[["a", "b", "b"]]], False) is not None
    assert diff([[None]], [[0]], False) is not None
    assert diff([[1]], [[1], [1]], False) is not None
    assert diff([[True]], [[1]], False) is not None
    print("compare.py self-test: ok")


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    ap = argparse.ArgumentParser()
    ap.add_argument("ours")
    ap.add_argument("peers")
    ap.add_argument("--meta")
    ap.add_argument("--ours-log", action="append", default=[],
                    help="our run's stderr (its load averages are quoted); repeatable")
    ap.add_argument("--ours-again", help="a second run of ours after the peers': the table takes "
                    "the slower of our two p50s, and its answers must equal the first run's")
    ap.add_argument("--markdown")
    ap.add_argument("--update-doc")
    ap.add_argument("--title", default="")
    a = ap.parse_args()

    queries = peers.load_corpus()
    results = read_jsonl(a.ours)
    again = read_jsonl(a.ours_again) if a.ours_again else {}
    results.update(read_jsonl(a.peers))
    engines = ["kuzu", "falkordb"]
    lines = ["| query | ours p50 | Kuzu p50 | FalkorDB p50 | better peer / ours |",
             "|---|---|---|---|---|"]
    problems, ratios, fatal = [], [], []
    for q in queries:
        name, is_ord = q["name"], ordered(q["text"])
        mine = results.get(("ours", name))
        cells = {}
        if mine is None or mine.get("error"):
            problems.append(f"{name}: ours failed: {mine and mine.get('error')}")
            fatal.append(name)
        for e in engines:
            r = results.get((e, name))
            if r is None:
                cells[e] = ("not run", None)
            elif r.get("error"):
                cells[e] = ("error", None)
                problems.append(f"{name}: {e} failed: {r['error']}")
            elif mine is None or mine.get("error"):
                cells[e] = (fmt_us(r["p50_us"]) + " (unchecked)", None)
            else:
                d = diff(mine["rows"], r["rows"], is_ord)
                if d:
                    cells[e] = ("answer differs", None)
                    problems.append(f"{name}: {e} differs from ours: {d}")
                else:
                    cells[e] = (fmt_us(r["p50_us"]), r["p50_us"])
        matched = [us for _, us in cells.values() if us is not None]
        if not matched and any(c == "answer differs" for c, _ in cells.values()):
            fatal.append(name)
        ours_us = None if mine is None or mine.get("error") else mine["p50_us"]
        second = again.get(("ours", name))
        if a.ours_again and ours_us is not None:
            if second is None or second.get("error"):
                problems.append(f"{name}: our second run failed: {second and second.get('error')}")
                fatal.append(name)
            else:
                d = diff(mine["rows"], second["rows"], is_ord)
                if d:
                    problems.append(f"{name}: our two runs differ: {d}")
                    fatal.append(name)
                ours_us = max(ours_us, second["p50_us"])
        if matched and ours_us:
            ratio = min(matched) / ours_us
            ratios.append((name, ratio))
            ratio_cell = f"{ratio:.3f}x" if ratio < 0.1 else f"{ratio:.2f}x" if ratio < 10 else f"{ratio:,.0f}x"
            if ratio >= 5:
                ratio_cell = f"**{ratio_cell}**"
        else:
            ratio_cell = "–"
        lines.append(f"| {name} | {fmt_us(ours_us) if ours_us else 'error'} | {cells['kuzu'][0]} | "
                     f"{cells['falkordb'][0]} | {ratio_cell} |")
    met = sum(1 for _, r in ratios if r >= 5)
    summary = [f"{len(queries)} queries; {len(ratios)} with an answer that matched at least one peer; "
               f"ours at least 5x faster than the better peer on {met} of them; "
               f"ours slower than the better peer on {sum(1 for _, r in ratios if r < 1)}."]
    if ratios:
        geo = math.exp(sum(math.log(r) for _, r in ratios) / len(ratios))
        summary.append(f"Geometric mean of better peer / ours: {geo:.2f}x.")
    notes = []
    if a.meta and os.path.exists(a.meta):
        with open(a.meta) as f:
            meta = json.load(f)
        k, fk = meta.get("kuzu", {}), meta.get("falkordb", {})
        graph = [m for m in fk.get("modules", []) if len(m) > 3 and m[1] == "graph"]
        ver = graph[0][3] if graph else None
        fver = f"{ver // 10000}.{ver // 100 % 100}.{ver % 100}" if isinstance(ver, int) else "?"
        notes.append(f"Kuzu {k.get('version', '?')} (load average {k.get('load_before_run', '?')} before "
                     f"its run, {k.get('load_after_run', '?')} after); FalkorDB "
                     f"{fver} (load average {fk.get('load_before_run', '?')} before, "
                     f"{fk.get('load_after_run', '?')} after); {meta.get('nproc')} cores.")
    for log in a.ours_log:
        if os.path.exists(log):
            with open(log) as f:
                loads = [l.strip() for l in f if l.startswith("load average")]
            if loads:
                notes.append("Ours: " + "; ".join(loads) + ".")
    if a.ours_again:
        notes.append("Ours ran before and after the peers; each row shows the slower of its two p50s.")
    text = "\n".join(lines + [""] + summary + notes)
    if problems:
        text += "\n\nDifferences and failures (their times are left out of the table):\n\n" + \
            "\n".join(f"- {p}" for p in problems)
    print(text)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write((a.title + "\n\n" if a.title else "") + text + "\n")
    if a.update_doc:
        with open(a.update_doc) as f:
            doc = f.read()
        if START not in doc or END not in doc:
            raise SystemExit(f"{a.update_doc} has no {START} ... {END} section")
        head, rest = doc.split(START, 1)
        _, tail = rest.split(END, 1)
        block = (a.title + "\n\n" if a.title else "") + text
        with open(a.update_doc, "w") as f:
            f.write(head + START + "\n" + block + "\n" + END + tail)
    if fatal:
        print("no peer agrees with ours, or ours failed, on: " + ", ".join(fatal), file=sys.stderr)
    sys.exit(1 if fatal else 0)


if __name__ == "__main__":
    main()
