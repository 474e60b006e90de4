#!/usr/bin/env python3
"""Answers theta-sketch questions with Apache DataSketches' Python library,
for sketchd's interoperability tests.

Reads a JSON list of operations on stdin and writes a JSON list of results,
one per operation. Sketches travel as hex of the compact serialization.
Operations:
  {"op": "build", "lg_k": 12, "ints": [...], "strs": [...]}
  {"op": "read", "sketch": hex}
  {"op": "union", "lg_k": 12, "sketches": [hex, ...]}
  {"op": "intersect", "sketches": [hex, ...]}
  {"op": "anotb", "sketches": [a_hex, b_hex]}
  {"op": "jaccard", "sketches": [a_hex, b_hex]}
Every result describes a sketch (bytes, compressed: the bytes of
serialize(compress=True), estimate, theta64, retained, empty, bounds at
1..3 standard deviations), except jaccard's [lower, est, upper]. "read"
takes any serialization deserialize accepts (compressed included).
"""
import json
import sys

import datasketches as ds


def describe(sk):
    return {
        "bytes": sk.serialize().hex(),
        "compressed": sk.serialize(True).hex(),
        "estimate": sk.get_estimate(),
        "theta64": sk.theta64,
        "retained": sk.num_retained,
        "empty": sk.is_empty(),
        "lower": [sk.get_lower_bound(i) for i in (1, 2, 3)],
        "upper": [sk.get_upper_bound(i) for i in (1, 2, 3)],
    }


def load(h):
    return ds.compact_theta_sketch.deserialize(bytes.fromhex(h))


def run(op):
    kind = op["op"]
    if kind == "build":
        sk = ds.update_theta_sketch(op["lg_k"])
        for v in op.get("ints") or []:
            sk.update(v)
        for v in op.get("strs") or []:
            sk.update(v)
        return describe(sk.compact(True))
    if kind == "read":
        return describe(load(op["sketch"]))
    if kind == "union":
        u = ds.theta_union(op["lg_k"])
        for h in op["sketches"]:
            u.update(load(h))
        return describe(u.get_result(True))
    if kind == "intersect":
        i = ds.theta_intersection()
        for h in op["sketches"]:
            i.update(load(h))
        return describe(i.get_result(True))
    if kind == "anotb":
        a, b = (load(h) for h in op["sketches"])
        return describe(ds.theta_a_not_b().compute(a, b, True))
    if kind == "jaccard":
        a, b = (load(h) for h in op["sketches"])
        return list(ds.theta_jaccard_similarity.jaccard(a, b))
    raise ValueError("unknown op " + kind)


def main():
    ops = json.load(sys.stdin)
    json.dump([run(op) for op in ops], sys.stdout)


if __name__ == "__main__":
    main()
