"""Summarizes run.sh's results.tsv (the no-kill runs): per peer, the median
and the range (min-max) of wall time, CPU seconds, peak RSS and objects/s
over the rounds, as a Markdown table.

usage: python3 summary.py RESULTS.tsv
"""
import csv
import statistics
import sys

rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
peers = []
for r in rows:
    if r["peer"] not in peers:
        peers.append(r["peer"])


def cell(vals, fmt):
    vals = sorted(vals)
    return f"{fmt(statistics.median(vals))} ({fmt(vals[0])}-{fmt(vals[-1])})"


print("| peer | runs | objects/s | CPU s (user+sys) | peak RSS MiB | wall s | all exact |")
print("|---|---|---|---|---|---|---|")
for p in peers:
    rs = [r for r in rows if r["peer"] == p]
    ok = all('"missing":0' in r["verify"] and '"wrong":0' in r["verify"] and '"rewritten":0' in r["verify"]
             and r["exit"] == "0" for r in rs)
    print(f"| {p} | {len(rs)} | {cell([float(r['objects_per_s']) for r in rs], lambda v: f'{v:.0f}')} "
          f"| {cell([float(r['cpu_s']) for r in rs], lambda v: f'{v:.2f}')} "
          f"| {cell([int(r['peak_rss_kib']) / 1024 for r in rs], lambda v: f'{v:.0f}')} "
          f"| {cell([float(r['wall_s']) for r in rs], lambda v: f'{v:.2f}')} | {'yes' if ok else 'NO'} |")
