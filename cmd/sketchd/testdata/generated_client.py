"""Drive a live sketchd through a Python client generated from api/openapi.yaml.

Run by TestGeneratedPythonClient (cmd/sketchd/pyclient_test.go) as
    python3 generated_client.py BASE_URL
with the package openapi-python-client generated (sketchd_client) on
PYTHONPATH. Every call goes through the generated code with its default
settings: the bodies are the generated models, the answers are parsed by
the generated parsers. It prints one line per check and exits non-zero on
the first that fails.
"""

import datetime
import sys

from sketchd_client import Client
from sketchd_client.api.ingest import add_ids
from sketchd_client.api.queries import cdf, intersection, quantiles, rank, ranks, union
from sketchd_client.api.series import add_to_series, create_series, series_count
from sketchd_client.api.sketches import change_sketch_expiry, create_sketch, describe_sketch
from sketchd_client.models import (
    CMS,
    HLL,
    Accepted,
    AddHashes,
    AddIds,
    AddItems,
    AddValues,
    CountedID,
    CreateRequest,
    CreateRequestItems,
    CreateRequestType,
    ExpiryChange,
    Bloom,
    KLL,
    Intersection,
    Rank,
    RankBody,
    IntersectionBody,
    Problem,
    Registers,
    Sampled,
    SeriesAdded,
    SeriesCount,
    SeriesRequest,
    SeriesRequestLevels,
    ThetaIntersection,
    UnionBody,
    UnionHLL,
)


def check(cond, what, got):
    if not cond:
        print(f"FAIL {what}: got {got!r}", flush=True)
        sys.exit(1)
    print(f"ok   {what}", flush=True)


def main(base):
    c = Client(base_url=base, raise_on_unexpected_status=True)

    # A create with no body at all makes an HLL with the defaults, as the
    # spec says: the generated call must send nothing rather than fail on
    # the unset body.
    r = create_sketch.sync_detailed("py:hll", client=c)
    check(r.status_code == 201 and isinstance(r.parsed, HLL), "create with no body", (r.status_code, r.content))
    made = {"py:hll": r.parsed}
    again = create_sketch.sync("py:hll", client=c)
    check(isinstance(again, HLL) and again.log2m == 14, "create again with no body, through sync()", again)

    # Create every kind with the generated model's defaults: each body
    # carries its kind's type and only its kind's parameters.
    for name, body, want in [
        ("py:hll2", CreateRequest(type_=CreateRequestType.HLL), HLL),
        ("py:cms", CreateRequest(type_=CreateRequestType.CMS), CMS),
        ("py:theta", CreateRequest(type_=CreateRequestType.THETA), Sampled),
        ("py:freq", CreateRequest(type_=CreateRequestType.FREQ), Sampled),
        ("py:ds_hll", CreateRequest(type_=CreateRequestType.DS_HLL), Registers),
        ("py:cpc", CreateRequest(type_=CreateRequestType.CPC), Registers),
        ("py:zeta_hll", CreateRequest(type_=CreateRequestType.ZETA_HLL), Registers),
        ("py:airlift_hll", CreateRequest(type_=CreateRequestType.AIRLIFT_HLL), Registers),
        ("py:bloom", CreateRequest(type_=CreateRequestType.BLOOM), Bloom),
        ("py:kll", CreateRequest(type_=CreateRequestType.KLL), KLL),
    ]:
        r = create_sketch.sync_detailed(name, client=c, body=body)
        check(r.status_code == 201 and isinstance(r.parsed, want), f"create {name} with defaults", (r.status_code, r.content))
        made[name] = r.parsed
    h = made["py:hll"]
    check((h.log2m, h.regwidth, h.expthresh, h.sparse) == (14, 5, -1, True), "HLL defaults", h)
    m = made["py:cms"]
    check((m.width, m.depth, m.conservative, m.topk) == (2719, 5, False, 0), "Count-Min defaults", m)
    check(made["py:theta"].lg_k == 12 and made["py:theta"].type_.value == "theta", "theta defaults", made["py:theta"])
    check(made["py:freq"].lg_k == 12 and made["py:freq"].type_.value == "freq", "freq defaults", made["py:freq"])
    d = made["py:ds_hll"]
    check((d.type_.value, d.lg_k, d.tgt_type.value) == ("ds_hll", 12, "HLL_4"), "DataSketches HLL defaults", d)
    check((made["py:cpc"].type_.value, made["py:cpc"].lg_k) == ("cpc", 11), "CPC defaults", made["py:cpc"])
    z = made["py:zeta_hll"]
    check((z.type_.value, z.precision, z.sparse_precision, z.value_type.value) == ("zeta_hll", 15, 20, "unknown"), "ZetaSketch HLL++ defaults", z)
    a = made["py:airlift_hll"]
    check((a.type_.value, a.index_bits, a.representation) == ("airlift_hll", 12, "SPARSE"), "airlift HyperLogLog defaults", a)
    b = made["py:bloom"]
    check((b.type_.value, b.bits, b.hashes, b.expected_items, b.fpp) == ("bloom", 9662080, 7, 1000000, 0.01), "Bloom filter defaults", b)
    k = made["py:kll"]
    check((k.type_.value, k.k, k.items.value, k.n) == ("kll", 200, "double", 0), "KLL defaults", k)

    # Add through each named variant of AddRequest.
    r = add_ids.sync_detailed("py:hll", client=c, body=AddIds(ids=[1001, 1002, "alice@example.com"]))
    check(isinstance(r.parsed, Accepted) and r.parsed.accepted == 3, "add ids", r.content)
    r = add_ids.sync_detailed("py:hll", client=c, body=AddHashes(hashes=[123456789]))
    check(isinstance(r.parsed, Accepted) and r.parsed.accepted == 1, "add hashes", r.content)
    r = add_ids.sync_detailed("py:hll2", client=c, body=AddIds(ids=[1002, 1003]))
    check(isinstance(r.parsed, Accepted) and r.parsed.accepted == 2, "add ids to a second sketch", r.content)
    r = add_ids.sync_detailed("py:cms", client=c, body=AddItems(items=[CountedID(id="alice", count=3), CountedID(id=42, count=1)]))
    check(isinstance(r.parsed, Accepted) and r.parsed.accepted == 2, "add counted items", r.content)
    r = add_ids.sync_detailed("py:theta", client=c, body=AddIds(ids=list(range(1, 101))))
    check(isinstance(r.parsed, Accepted) and r.parsed.accepted == 100, "add ids to theta", r.content)

    # Describe.
    r = describe_sketch.sync_detailed("py:hll", client=c)
    d = r.parsed
    check(isinstance(d, HLL) and d.cardinality == 4 and d.representation.value == "EXPLICIT", "describe", r.content)
    r = describe_sketch.sync_detailed("py:cms", client=c)
    check(isinstance(r.parsed, CMS) and r.parsed.total == 4, "describe a Count-Min", r.content)

    # Expiry: at create, shown in describe, changed and cleared by PATCH.
    r = create_sketch.sync_detailed("py:day", client=c, body=CreateRequest(log2m=11, expire_after="P7D"))
    d = r.parsed
    check(r.status_code == 201 and isinstance(d, HLL) and d.expire_after == "P7D" and d.expires_at == d.updated_at + datetime.timedelta(days=7),
          "create with expire_after", r.content)
    at = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=2)).replace(microsecond=0)
    r = change_sketch_expiry.sync_detailed("py:day", client=c, body=ExpiryChange(expire_at=at))
    check(r.status_code == 200 and isinstance(r.parsed, HLL) and r.parsed.expires_at == at, "PATCH expire_at", r.content)
    r = change_sketch_expiry.sync_detailed("py:day", client=c, body=ExpiryChange(expire_after=None))
    check(r.status_code == 200 and isinstance(r.parsed, HLL) and not r.parsed.expires_at, "PATCH null clears the expiry", r.content)
    r = change_sketch_expiry.sync_detailed("py:day", client=c, body=ExpiryChange(expire_after="P0D"))
    check(r.status_code == 400 and isinstance(r.parsed, Problem) and "expire_after" in r.parsed.detail, "a zero expire_after is a Problem naming it", r.content)

    # Union and intersection.
    r = union.sync_detailed(client=c, body=UnionBody(sketches=["py:hll", "py:hll2"]))
    check(isinstance(r.parsed, UnionHLL) and r.parsed.cardinality == 5, "union", r.content)
    r = intersection.sync_detailed(client=c, body=IntersectionBody(sketches=["py:hll", "py:hll2"]))
    x = r.parsed
    check(isinstance(x, Intersection) and x.lower <= 1 <= x.upper and len(x.terms) == 3, "intersection", r.content)
    r = rank.sync_detailed(client=c, body=RankBody.from_dict({"target": "py:hll", "candidates": ["py:hll2"], "by": "intersection", "top": 1}))
    x = r.parsed
    check(isinstance(x, Rank) and x.scanned == 1 and x.results[0].name == "py:hll2" and x.results[0].lower <= 1 <= x.results[0].upper, "rank", r.content)

    # A series: create, add, count.
    levels = SeriesRequestLevels.from_dict({"hour": "P14D", "day": "P400D"})
    r = create_series.sync_detailed("py:active", client=c, body=SeriesRequest(levels=levels))
    check(r.status_code == 201 and r.parsed.type_.value == "hll", "create a series", r.content)
    now = datetime.datetime.now(datetime.timezone.utc)
    r = add_to_series.sync_detailed("py:active", client=c, body=AddIds(ids=[1, 2, 3]), ts=now)
    check(isinstance(r.parsed, SeriesAdded) and r.parsed.accepted == 3 and [l.value for l in r.parsed.levels] == ["hour", "day"], "series add", r.content)
    r = add_to_series.sync_detailed("py:active", client=c, body=AddIds(ids=[3, 4]), ts=now - datetime.timedelta(days=1))
    check(isinstance(r.parsed, SeriesAdded) and r.parsed.accepted == 2 and r.parsed.warnings == [], "series add a day late", r.content)
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    r = series_count.sync_detailed("py:active", client=c, from_=day - datetime.timedelta(days=7), to=day + datetime.timedelta(days=1))
    check(isinstance(r.parsed, SeriesCount) and r.parsed.cardinality == 4, "series count", r.content)

    # A KLL sketch of longs: the answers carry int64s as exact integers,
    # which the generated parsers hand over as Python ints.
    big = [-(2**63), 2**53 + 1, 2**63 - 1]
    r = create_sketch.sync_detailed("py:longs", client=c, body=CreateRequest(type_=CreateRequestType.KLL, items=CreateRequestItems.LONG))
    check(r.status_code == 201 and r.parsed.items.value == "long", "create a KLL sketch of longs", r.content)
    r = add_ids.sync_detailed("py:longs", client=c, body=AddValues(values=big))
    check(isinstance(r.parsed, Accepted) and r.parsed.accepted == 3, "add -2^63, 2^53+1, 2^63-1", r.content)
    r = quantiles.sync_detailed("py:longs", client=c, q="0,0.5,1")
    got = [x.value for x in r.parsed.quantiles]
    check(got == big and all(type(v) is int for v in got), "quantiles of longs are exact ints", r.content)
    r = ranks.sync_detailed("py:longs", client=c, value="9223372036854775807,9007199254740993,9007199254740992")
    got = [(x.value, x.rank) for x in r.parsed.ranks]
    check(got == [(2**63 - 1, 1.0), (2**53 + 1, 2 / 3), (2**53, 1 / 3)], "ranks of longs, compared exactly", r.content)
    r = cdf.sync_detailed("py:longs", client=c, split="0,9223372036854775807")
    check((r.parsed.split_points, r.parsed.values) == ([0, 2**63 - 1], [1 / 3, 1.0, 1.0]), "a CDF at 0 and 2^63-1", r.content)
    r = describe_sketch.sync_detailed("py:longs", client=c)
    check((r.parsed.min_, r.parsed.max_) == (-(2**63), 2**63 - 1), "min and max of longs, exact", r.content)

    # Problems decode as Problem, with the status and type the spec names.
    r = describe_sketch.sync_detailed("py:missing", client=c)
    p = r.parsed
    check(r.status_code == 404 and isinstance(p, Problem) and p.type_ == "urn:sketchd:problem:not-found" and p.status == 404,
          "a missing sketch decodes as a Problem", r.content)
    r = create_sketch.sync_detailed("py:bad", client=c, body=CreateRequest(log2m=30))
    p = r.parsed
    check(r.status_code == 400 and isinstance(p, Problem) and "log2m" in p.detail, "a bad parameter decodes as a Problem naming it", r.content)
    r = intersection.sync_detailed(client=c, body=IntersectionBody(sketches=["py:hll", "py:theta"]))
    check(r.status_code == 409 and isinstance(r.parsed, Problem), "an HLL with a theta sketch is a conflict", r.content)
    r = create_sketch.sync_detailed("py:hll", client=c, body=CreateRequest(type_=CreateRequestType.CMS))
    check(r.status_code == 409 and isinstance(r.parsed, Problem), "creating again as another kind is a conflict", r.content)
    print("generated client: every check passed")


if __name__ == "__main__":
    main(sys.argv[1])
