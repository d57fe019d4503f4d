#!/usr/bin/env python3
"""Validates a Prometheus text-format (0.0.4) exposition and the operator's metric names.

usage: check_metrics.py EXPOSITION_FILE [EXPECTED_JSON]
Format rules checked: every sample belongs to a family announced by one HELP and one TYPE line
before its samples; families are contiguous; names and label names are valid; label values are
correctly quoted and escaped; values parse; a histogram has, per label set, _bucket lines with
increasing `le` ending in +Inf, non-decreasing counts, and _sum and _count with _count equal to
the +Inf bucket. EXPECTED_JSON maps family names to {"type": ..., "labels": [...]} (the label
names every series must carry, `le` aside); each listed family must have at least one series.
Prints one line per problem and exits 1 if there is any.
"""
import json
import math
import re
import sys

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
SUFFIXES = {"histogram": ("_bucket", "_sum", "_count"), "summary": ("", "_sum", "_count")}


def parse_labels(text, where):
    """Parses `{a="x",b="y"}` (text without braces); returns a dict or raises ValueError."""
    labels, i = {}, 0
    while i < len(text):
        m = LABEL.match(text, i)
        if not m:
            raise ValueError(f"{where}: bad label name at {text[i:]!r}")
        name, i = m.group(0), m.end()
        if text[i:i + 2] != '="':
            raise ValueError(f"{where}: label {name} lacks =\"")
        i += 2
        value = []
        while True:
            if i >= len(text):
                raise ValueError(f"{where}: unterminated value of {name}")
            ch = text[i]
            if ch == "\\":
                nxt = text[i + 1:i + 2]
                if nxt not in ("\\", '"', "n"):
                    raise ValueError(f"{where}: bad escape \\{nxt} in {name}")
                value.append("\n" if nxt == "n" else nxt)
                i += 2
            elif ch == '"':
                i += 1
                break
            elif ch == "\n":
                raise ValueError(f"{where}: raw newline in {name}")
            else:
                value.append(ch)
                i += 1
        if name in labels:
            raise ValueError(f"{where}: label {name} repeated")
        labels[name] = "".join(value)
        if i < len(text):
            if text[i] != ",":
                raise ValueError(f"{where}: expected , after {name}")
            i += 1
    return labels


def parse_value(text, where):
    if text in ("+Inf", "-Inf", "NaN"):
        return float(text.replace("Inf", "inf").replace("NaN", "nan"))
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{where}: value {text!r} is not a number") from None


def check(text):
    problems = []
    families = {}  # name -> {"type", "help", "series": [(sample_name, labels, value)]}
    current = None
    closed = set()
    for n, line in enumerate(text.split("\n"), 1):
        where = f"line {n}"
        if not line:
            continue
        try:
            if line.startswith("# HELP ") or line.startswith("# TYPE "):
                kind, rest = line[2:6], line[7:]
                name, _, arg = rest.partition(" ")
                if not NAME.fullmatch(name):
                    raise ValueError(f"{where}: bad family name {name!r}")
                if name != current:
                    if current:
                        closed.add(current)
                    if name in closed:
                        raise ValueError(f"{where}: family {name} is not contiguous")
                    current = name
                fam = families.setdefault(name, {"type": None, "help": None, "series": []})
                if fam["series"]:
                    raise ValueError(f"{where}: {kind} of {name} after its samples")
                key = kind.lower()
                if fam[key] is not None:
                    raise ValueError(f"{where}: second {kind} line for {name}")
                if kind == "TYPE" and arg not in ("counter", "gauge", "histogram", "summary", "untyped"):
                    raise ValueError(f"{where}: unknown type {arg!r}")
                fam[key] = arg
                continue
            if line.startswith("#"):
                continue
            m = NAME.match(line)
            if not m:
                raise ValueError(f"{where}: bad sample name in {line!r}")
            sample, rest = m.group(0), line[m.end():]
            labels = {}
            if rest.startswith("{"):
                end = rest.rfind("}")
                if end < 0:
                    raise ValueError(f"{where}: unterminated label set")
                labels = parse_labels(rest[1:end], where)
                rest = rest[end + 1:]
            if not rest.startswith(" "):
                raise ValueError(f"{where}: no space before the value")
            fields = rest.split()
            if len(fields) not in (1, 2):
                raise ValueError(f"{where}: expected value [timestamp], got {rest!r}")
            value = parse_value(fields[0], where)
            fam = families.get(current)
            if fam is None:
                raise ValueError(f"{where}: sample {sample} before any HELP/TYPE")
            suffixes = SUFFIXES.get(fam["type"], ("",))
            if not any(sample == current + s for s in suffixes):
                raise ValueError(f"{where}: sample {sample} does not belong to family {current} ({fam['type']})")
            if fam["help"] is None or fam["type"] is None:
                raise ValueError(f"{where}: family {current} lacks a HELP or TYPE line")
            fam["series"].append((sample, labels, value))
        except ValueError as e:
            problems.append(str(e))
    for name, fam in families.items():
        if fam["type"] == "counter":
            for sample, labels, value in fam["series"]:
                if value < 0 or math.isnan(value):
                    problems.append(f"counter {name}{labels} is {value}")
        if fam["type"] == "histogram":
            problems += check_histogram(name, fam["series"])
    return families, problems


def check_histogram(name, series):
    problems = []
    groups = {}
    for sample, labels, value in series:
        key = tuple(sorted((k, v) for k, v in labels.items() if k != "le"))
        g = groups.setdefault(key, {"buckets": [], "sum": None, "count": None})
        if sample == name + "_bucket":
            if "le" not in labels:
                problems.append(f"{name}_bucket{dict(key)} lacks le")
                continue
            g["buckets"].append((parse_value(labels["le"], name), value))
        elif sample == name + "_sum":
            g["sum"] = value
        else:
            g["count"] = value
    for key, g in groups.items():
        where = f"histogram {name}{dict(key)}"
        les = [le for le, _ in g["buckets"]]
        counts = [c for _, c in g["buckets"]]
        if not les or les[-1] != math.inf:
            problems.append(f"{where}: no le=\"+Inf\" bucket last")
        if les != sorted(les) or len(set(les)) != len(les):
            problems.append(f"{where}: le bounds not strictly increasing")
        if counts != sorted(counts):
            problems.append(f"{where}: bucket counts decrease")
        if g["sum"] is None or g["count"] is None:
            problems.append(f"{where}: lacks _sum or _count")
        elif counts and counts[-1] != g["count"]:
            problems.append(f"{where}: _count {g['count']} != +Inf bucket {counts[-1]}")
    return problems


def main():
    text = open(sys.argv[1], encoding="utf-8").read()
    families, problems = check(text)
    if len(sys.argv) > 2:
        expected = json.load(open(sys.argv[2], encoding="utf-8"))
        for name, want in expected.items():
            fam = families.get(name)
            if fam is None:
                problems.append(f"{name}: missing")
                continue
            if fam["type"] != want["type"]:
                problems.append(f"{name}: type {fam['type']}, want {want['type']}")
            if not fam["series"]:
                problems.append(f"{name}: no series")
            for sample, labels, _ in fam["series"]:
                names = sorted(k for k in labels if k != "le")
                if names != sorted(want["labels"]):
                    problems.append(f"{sample}: labels {names}, want {sorted(want['labels'])}")
                    break
    for p in problems:
        print("FAIL:", p)
    print(f"{len(families)} families, {sum(len(f['series']) for f in families.values())} samples, "
          f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
