#!/usr/bin/env python3
"""Answers KLL-sketch questions with Apache DataSketches' Python library,
for sketchd's interoperability tests.

Reads a JSON list of operations on stdin and writes a JSON list of results,
one per operation. Sketches travel as hex of the compact serialization;
"type" is "double" (kll_doubles_sketch) or "long" (kll_items_sketch of
Python ints with PyLongsSerDe: 8-byte little-endian longs, the layout of
Java's KllLongsSketch). Operations:
  {"op": "build", "type": t, "k": 200, "values": [...]}
  {"op": "read", "type": t, "sketch": hex}
  {"op": "merge", "type": t, "k": 200, "sketches": [hex, ...]}
Each may carry "ranks", "values_at" and "splits": the result then also has
the quantiles at those ranks, the ranks of those values and the CDF and
PMF at those split points, each inclusive and exclusive.
"""
import json
import sys

import datasketches as ds


def new(t, k):
    if t == "double":
        return ds.kll_doubles_sketch(k)
    return ds.kll_items_sketch(k)


def load(t, h):
    b = bytes.fromhex(h)
    if t == "double":
        return ds.kll_doubles_sketch.deserialize(b)
    return ds.kll_items_sketch.deserialize(b, ds.PyLongsSerDe())


def dump(t, sk):
    if t == "double":
        return sk.serialize().hex()
    return sk.serialize(ds.PyLongsSerDe()).hex()


def describe(t, sk, op):
    out = {
        "bytes": dump(t, sk),
        "n": sk.n,
        "k": sk.k,
        "retained": sk.num_retained,
        "estimation": sk.is_estimation_mode(),
        "eps": sk.normalized_rank_error(False),
        "eps_pmf": sk.normalized_rank_error(True),
    }
    if sk.is_empty():
        return out
    out["min"] = sk.get_min_value()
    out["max"] = sk.get_max_value()
    for incl in (True, False):
        key = "incl" if incl else "excl"
        out["quantiles_" + key] = [sk.get_quantile(r, incl) for r in op.get("ranks") or []]
        out["ranks_" + key] = [sk.get_rank(v, incl) for v in op.get("values_at") or []]
        splits = op.get("splits") or []
        if splits:
            out["cdf_" + key] = sk.get_cdf(splits, incl)
            out["pmf_" + key] = sk.get_pmf(splits, incl)
    return out


def run(op):
    t = op["type"]
    if op["op"] == "build":
        sk = new(t, op["k"])
        for v in op["values"]:
            sk.update(v)
        return describe(t, sk, op)
    if op["op"] == "read":
        return describe(t, load(t, op["sketch"]), op)
    if op["op"] == "merge":
        sk = new(t, op["k"])
        for h in op["sketches"]:
            sk.merge(load(t, h))
        return describe(t, sk, op)
    raise ValueError("unknown op " + op["op"])


def main():
    ops = json.load(sys.stdin)
    json.dump([run(op) for op in ops], sys.stdout)


if __name__ == "__main__":
    main()
