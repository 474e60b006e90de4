#!/usr/bin/env python3
"""Answers DataSketches HLL questions with Apache DataSketches' Python
library, for sketchd's interoperability tests.

Reads a JSON list of operations on stdin and writes a JSON list of results,
one per operation. Sketches travel as hex.
  {"op": "build", "lg_k": 12, "type": "HLL_4", "lo": 0, "hi": 100, "strs": [...]}
  {"op": "read", "sketch": hex}
  {"op": "union", "lg_k": 12, "type": "HLL_8", "sketches": [hex, ...]}
Every result: compact and updatable images, estimate, bounds at 1..3
standard deviations, lg_k.
"""
import json
import sys

import datasketches as ds

TYPES = {"HLL_4": ds.tgt_hll_type.HLL_4, "HLL_6": ds.tgt_hll_type.HLL_6, "HLL_8": ds.tgt_hll_type.HLL_8}


def describe(sk):
    return {
        "compact": sk.serialize_compact().hex(),
        "updatable": sk.serialize_updatable().hex(),
        "estimate": sk.get_estimate(),
        "lower": [sk.get_lower_bound(i) for i in (1, 2, 3)],
        "upper": [sk.get_upper_bound(i) for i in (1, 2, 3)],
        "lg_k": sk.lg_config_k,
    }


def run(op):
    kind = op["op"]
    if kind == "build":
        sk = ds.hll_sketch(op["lg_k"], TYPES[op["type"]])
        for v in range(op["lo"], op["hi"]):
            sk.update(v)
        for v in op.get("strs") or []:
            sk.update(v)
        return describe(sk)
    if kind == "read":
        return describe(ds.hll_sketch.deserialize(bytes.fromhex(op["sketch"])))
    if kind == "union":
        u = ds.hll_union(op["lg_k"])
        for h in op["sketches"]:
            u.update(ds.hll_sketch.deserialize(bytes.fromhex(h)))
        return describe(u.get_result(TYPES[op["type"]]))
    raise ValueError("unknown op " + kind)


def main():
    ops = json.load(sys.stdin)
    json.dump([run(op) for op in ops], sys.stdout)


if __name__ == "__main__":
    main()
