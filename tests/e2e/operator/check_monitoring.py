#!/usr/bin/env python3
"""Checks that every metric the monitoring manifests use is one the operator serves.

usage: check_monitoring.py EXPOSITION_FILE DASHBOARD_JSON PROMETHEUS_RULE_YAML
Extracts the PromQL of every dashboard target and every alert rule, reduces each expression to
the metric names it selects (dropping label matchers, grouping clauses, range selectors, string
literals, numbers, keywords and function calls), and requires each name to be a sample name of
the exposition (a histogram's family counts as served through its _bucket, _sum and _count).
Prints the names found and one line per problem; exits 1 if there is any.
"""
import json
import re
import sys

import yaml

KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool",
            "offset", "inf", "nan",
            # aggregation operators, which may carry "by (...)" before their parenthesis
            "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk",
            "quantile"}
IDENT = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


def metric_names(expr):
    """The metric names a PromQL expression selects."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)                       # string literals
    e = re.sub(r"\{[^}]*\}", "", e)                                     # label matchers
    e = re.sub(r"\[[^\]]*\]", "", e)                                    # range selectors
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", r"\1", e)  # label lists
    names = set()
    for m in IDENT.finditer(e):
        word = m.group(0)
        rest = e[m.end():].lstrip()
        if word.lower() in KEYWORDS or rest.startswith("("):
            continue  # keyword or function call
        if re.fullmatch(r"\d.*", word):
            continue
        names.add(word)
    return names


def served(exposition):
    names = set()
    for line in exposition.splitlines():
        if line and not line.startswith("#"):
            names.add(IDENT.match(line).group(0))
    return names


def dashboard_exprs(dashboard):
    out = []
    for panel in dashboard.get("panels", []):
        for target in panel.get("targets", []):
            if "expr" in target:
                out.append((f"dashboard panel '{panel.get('title')}'", target["expr"]))
    return out


def rule_exprs(rule):
    out = []
    for group in rule["spec"]["groups"]:
        for r in group["rules"]:
            out.append((f"rule {r.get('alert') or r.get('record')}", r["expr"]))
    return out


def main():
    exposition = open(sys.argv[1], encoding="utf-8").read()
    dashboard = json.load(open(sys.argv[2], encoding="utf-8"))
    rule = yaml.safe_load(open(sys.argv[3], encoding="utf-8"))
    have = served(exposition)
    problems, used = [], set()
    exprs = dashboard_exprs(dashboard) + rule_exprs(rule)
    if not exprs:
        problems.append("no expressions found")
    for where, expr in exprs:
        names = metric_names(expr)
        if not names:
            problems.append(f"{where}: no metric in {expr!r}")
        for name in sorted(names):
            used.add(name)
            if name not in have:
                problems.append(f"{where}: {name} is not served by /metrics")
    for p in problems:
        print("FAIL:", p)
    print(f"{len(exprs)} expressions use {len(used)} metrics: {' '.join(sorted(used))}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
