#!/usr/bin/env python3
"""Answers CPC questions with Apache DataSketches' Python library, for
sketchd's interoperability tests.

Reads a JSON list of operations on stdin and writes a JSON list of results.
  {"op": "build", "lg_k": 11, "lo": 0, "hi": 100, "strs": [...]}
  {"op": "read", "sketch": hex}
  {"op": "union", "lg_k": 11, "sketches": [hex, ...]}
Every result: bytes, estimate, bounds at 1..3 standard deviations.
"""
import json
import sys

import datasketches as ds


def describe(sk):
    return {
        "bytes": sk.serialize().hex(),
        "estimate": sk.get_estimate(),
        "lower": [sk.get_lower_bound(i) for i in (1, 2, 3)],
        "upper": [sk.get_upper_bound(i) for i in (1, 2, 3)],
    }


def run(op):
    kind = op["op"]
    if kind == "build":
        sk = ds.cpc_sketch(op["lg_k"])
        # Only ids >= 0: cpc_sketch.update hashes a negative Python int as
        # the float it equals, not as Java's update(long) (and sketchd)
        # hash an int64.
        for v in range(op["lo"], op["hi"]):
            sk.update(v)
        for v in op.get("strs") or []:
            sk.update(v)
        return describe(sk)
    if kind == "read":
        return describe(ds.cpc_sketch.deserialize(bytes.fromhex(op["sketch"])))
    if kind == "union":
        u = ds.cpc_union(op["lg_k"])
        for h in op["sketches"]:
            u.update(ds.cpc_sketch.deserialize(bytes.fromhex(h)))
        return describe(u.get_result())
    raise ValueError("unknown op " + kind)


def main():
    ops = json.load(sys.stdin)
    json.dump([run(op) for op in ops], sys.stdout)


if __name__ == "__main__":
    main()
