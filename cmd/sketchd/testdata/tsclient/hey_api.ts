// Drives a live sketchd through the SDK @hey-api/openapi-ts generated
// from api/openapi.yaml at its default settings (./hey). Run by
// TestGeneratedTypeScriptClients (cmd/sketchd/tsclient_test.go) after
// tsc has type-checked it with the generated code.
import { createSeries, createSketch, addIds, importBuckets, addToSeries, describeSketch, intersection, retention, seriesCount, union } from "./hey";
import type { Problem } from "./hey";
import { client } from "./hey/client.gen";

// Node's process and Buffer, declared here so that no @types package is needed.
declare const process: { argv: string[]; exit(code: number): never };
declare const Buffer: { from(b: ArrayBuffer): { toString(enc: "base64"): string } };

const base = process.argv[2];
client.setConfig({ baseUrl: base });

function check(cond: boolean, what: string, got: unknown): void {
  if (!cond) {
    console.log(`FAIL ${what}: got ${JSON.stringify(got)}`);
    process.exit(1);
  }
  console.log(`ok   ${what}`);
}

const kinds = ["hll", "cms", "theta", "freq", "ds_hll", "cpc", "zeta_hll", "airlift_hll", "bloom", "kll"] as const;

async function main(): Promise<void> {
  {
    const { data, response } = await createSketch({ path: { name: "hey:empty" } });
    check(response?.status === 201 && data !== undefined && data.type === "hll", "create with no body", data);
  }
  for (const k of kinds) {
    const { data, response } = await createSketch({ path: { name: `hey:${k}` }, body: { type: k } });
    check(response?.status === 201 && data !== undefined && data.type === k, `create ${k} with defaults`, data);
  }
  {
    const { data } = await createSketch({ path: { name: "hey:kll2" }, body: { type: "kll", items: "long" } });
    check(data !== undefined && data.type === "kll" && data.k === 200 && data.items === "long", "a KLL sketch of longs, k defaulted", data);
  }

  const add = async (name: string, ids: (number | string)[]): Promise<void> => {
    const { data } = await addIds({ path: { name }, body: { ids } });
    check(data !== undefined && "accepted" in data && data.accepted === ids.length, `add ${ids.length} ids to ${name}`, data);
  };
  await add("hey:hll", [1001, 1002, "alice@example.com"]);
  await add("hey:empty", [1002, 1003]);

  {
    const { data } = await describeSketch({ path: { name: "hey:hll" } });
    check(data !== undefined && data.type === "hll" && data.cardinality === 3, "count", data);
  }
  {
    const { data } = await union({ body: { sketches: ["hey:hll", "hey:empty"] } });
    check(data !== undefined && "cardinality" in data && data.cardinality === 4, "union", data);
  }
  {
    const { data } = await intersection({ body: { sketches: ["hey:hll", "hey:empty"] } });
    check(data !== undefined && data.lower <= 1 && 1 <= data.upper && data.terms.length === 3, "intersection", data);
  }

  {
    const { data, response } = await createSeries({ path: { name: "hey:active" }, body: { levels: { hour: "P14D", day: "P400D" } } });
    check(response?.status === 201 && data !== undefined && data.type === "hll" && data.tz === "UTC", "create a series with defaults", data);
  }
  const now = new Date();
  const day = 86400e3;
  const seriesAdd = async (ids: number[], ts: Date): Promise<void> => {
    const { data } = await addToSeries({ path: { name: "hey:active" }, query: { ts: ts.toISOString() }, body: { ids } });
    check(data !== undefined && data.accepted === ids.length, `series add at ${ts.toISOString()}`, data);
  };
  await seriesAdd([1, 2, 3], now);
  await seriesAdd([3, 4], new Date(now.getTime() - day));
  const today = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
  {
    const from = new Date(today.getTime() - 7 * day).toISOString();
    const to = new Date(today.getTime() + day).toISOString();
    const { data } = await seriesCount({ path: { name: "hey:active" }, query: { from, to } });
    check(data !== undefined && data.cardinality === 4, "series count", data);
  }
  {
    // An NDJSON import (a body that is not JSON) goes out as written with
    // a body serializer that leaves it alone: yesterday's day bucket of a
    // new series takes the bytes of hey:hll.
    const raw = await fetch(`${base}/v1/sketches/hey:hll/raw`);
    const bytes = Buffer.from(await raw.arrayBuffer()).toString("base64");
    await createSeries({ path: { name: "hey:imported" }, body: { levels: { day: "P400D" } } });
    const start = new Date(today.getTime() - day).toISOString().replace(".000Z", "Z");
    const line = JSON.stringify({ level: "day", start, bytes });
    const { data } = await importBuckets({ path: { name: "hey:imported" }, body: line + "\n", bodySerializer: (b: unknown) => String(b) });
    check(data !== undefined && data.buckets.length === 1, "import an NDJSON bucket", data);
    const from = new Date(today.getTime() - 7 * day).toISOString();
    const to = new Date(today.getTime() + day).toISOString();
    const counted = await seriesCount({ path: { name: "hey:imported" }, query: { from, to } });
    check(counted.data !== undefined && counted.data.cardinality === 3, "the imported bucket counts", counted.data);
  }
  {
    const start = new Date(today.getTime() - day).toISOString();
    const { data } = await retention({ body: { series: "hey:active", period: "P1D", start, cohorts: 2, periods: 1 } });
    const first = data?.cohorts[0];
    const back = first?.cells.find((cell) => cell.offset === 1);
    check(data !== undefined && data.cohorts.length === 2 && first !== undefined && first.size.estimate === 2 && back !== undefined && back.estimate === 1,
      "retention: of yesterday's 2, 1 came back today", data);
  }

  {
    const { error, response } = await describeSketch({ path: { name: "hey:missing" } });
    const p: Problem | undefined = error;
    check(response?.status === 404 && response?.headers.get("Content-Type") === "application/problem+json" && p !== undefined &&
      p.type === "urn:sketchd:problem:not-found" && p.status === 404, "a missing sketch decodes as a Problem", error);
  }
  {
    const { error, response } = await createSketch({ path: { name: "hey:bad" }, body: { log2m: 30 } });
    check(response?.status === 400 && error !== undefined && error.detail.includes("log2m"), "a bad parameter decodes as a Problem naming it", error);
  }
  console.log("hey-api client: every check passed");
}

main().catch((err: unknown) => {
  console.log(`FAIL ${String(err)}`);
  process.exit(1);
});
