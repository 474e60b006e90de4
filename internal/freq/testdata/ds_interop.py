#!/usr/bin/env python3
"""Answers tuple-sketch questions with Apache DataSketches' Python library,
for sketchd's frequency-sketch interoperability tests: tuple sketches whose
summary is an integer count summed on update and union (AccumulatorPolicy).

Reads a JSON list of operations on stdin, writes a JSON list of results.
Sketches travel as hex of the compact serialization; "width" 4 is the
library's PyIntsSerDe (a 4-byte int), 5 is Java IntegerSummary's layout
(the int, then a mode byte, 0 = sum), read and written by JavaIntSerDe.
Operations:
  {"op": "build", "lg_k": 12, "ints": [...], "strs": [...]}  (repeats count)
  {"op": "read", "sketch": hex, "width": 4 or 5}
  {"op": "union", "lg_k": 12, "sketches": [hex, ...]}
"""
import json
import struct
import sys

import datasketches as ds


class JavaIntSerDe(ds.PyObjectSerDe):
    """Java IntegerSummary: a little-endian int32 and a mode byte (0, sum)."""

    def get_size(self, item):
        return 5

    def to_bytes(self, item):
        return struct.pack('<ib', item, 0)

    def from_bytes(self, data, offset):
        value, mode = struct.unpack_from('<ib', data, offset)
        if mode != 0:
            raise ValueError("summary mode %d is not sum" % mode)
        return (value, 5)


def serde(width):
    return JavaIntSerDe() if width == 5 else ds.PyIntsSerDe()


def describe(sk):
    return {
        "bytes": sk.serialize(ds.PyIntsSerDe()).hex(),
        "java": sk.serialize(JavaIntSerDe()).hex(),
        "estimate": sk.get_estimate(),
        "theta64": sk.theta64,
        "retained": sk.num_retained,
        "empty": sk.is_empty(),
        "lower": [sk.get_lower_bound(i) for i in (1, 2, 3)],
        "upper": [sk.get_upper_bound(i) for i in (1, 2, 3)],
        "entries": sorted([k, v] for k, v in sk),
    }


def load(h, width=4):
    return ds.compact_tuple_sketch.deserialize(bytes.fromhex(h), serde(width))


def run(op):
    kind = op["op"]
    if kind == "build":
        sk = ds.update_tuple_sketch(ds.AccumulatorPolicy(), op["lg_k"])
        for v in op.get("ints") or []:
            sk.update(v, 1)
        for v in op.get("strs") or []:
            sk.update(v, 1)
        return describe(sk.compact(True))
    if kind == "read":
        return describe(load(op["sketch"], op.get("width", 4)))
    if kind == "union":
        u = ds.tuple_union(ds.AccumulatorPolicy(), op["lg_k"])
        for h in op["sketches"]:
            u.update(load(h))
        return describe(u.get_result(True))
    raise ValueError("unknown op " + kind)


def main():
    ops = json.load(sys.stdin)
    json.dump([run(op) for op in ops], sys.stdout)


if __name__ == "__main__":
    main()
