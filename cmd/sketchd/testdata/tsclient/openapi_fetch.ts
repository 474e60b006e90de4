// Drives a live sketchd through openapi-fetch with the types
// openapi-typescript generated from api/openapi.yaml at its default flags
// (./ot/schema.d.ts). Run by TestGeneratedTypeScriptClients
// (cmd/sketchd/tsclient_test.go) after tsc has type-checked it: every
// body below must be accepted by the generated types as written, so a
// field with a default that the types made required fails the build.
import createClient from "openapi-fetch";
import type { components, paths } from "./ot/schema";

type Problem = components["schemas"]["Problem"];

// Node's process, declared here so that no @types package is needed.
declare const process: { argv: string[]; exit(code: number): never };

const base = process.argv[2];
const c = createClient<paths>({ baseUrl: base });

function check(cond: boolean, what: string, got: unknown): void {
  if (!cond) {
    console.log(`FAIL ${what}: got ${JSON.stringify(got)}`);
    process.exit(1);
  }
  console.log(`ok   ${what}`);
}

const kinds = ["hll", "cms", "theta", "freq", "ds_hll", "cpc", "zeta_hll", "airlift_hll", "bloom", "kll"] as const;

async function main(): Promise<void> {
  // No body at all: an HLL with the defaults.
  {
    const { data, response } = await c.PUT("/v1/sketches/{name}", { params: { path: { name: "of:empty" } } });
    check(response.status === 201 && data !== undefined && data.type === "hll", "create with no body", data);
  }
  // Every kind with its defaults: the body names the type only.
  for (const k of kinds) {
    const { data, response } = await c.PUT("/v1/sketches/{name}", { params: { path: { name: `of:${k}` } }, body: { type: k } });
    check(response.status === 201 && data !== undefined && data.type === k, `create ${k} with defaults`, data);
  }
  {
    const { data } = await c.PUT("/v1/sketches/{name}", { params: { path: { name: "of:cms2" } }, body: { type: "cms", topk: 10 } });
    check(data !== undefined && data.type === "cms" && data.width === 2719 && data.topk === 10, "a Count-Min with one parameter, the others defaulted", data);
  }

  const add = async (name: string, ids: (number | string)[]): Promise<void> => {
    const { data } = await c.POST("/v1/sketches/{name}/add", { params: { path: { name } }, body: { ids } });
    check(data !== undefined && "accepted" in data && data.accepted === ids.length, `add ${ids.length} ids to ${name}`, data);
  };
  await add("of:hll", [1001, 1002, "alice@example.com"]);
  await add("of:empty", [1002, 1003]);
  {
    // A body that is not JSON (ids one a line) goes out as written with a
    // body serializer that leaves it alone.
    const { data } = await c.POST("/v1/sketches/{name}/add", {
      params: { path: { name: "of:lines" }, query: { create: true } },
      body: "7\n8\n9\n",
      headers: { "Content-Type": "application/x-ndjson" },
      bodySerializer: (b: unknown) => String(b),
    });
    check(data !== undefined && "accepted" in data && data.accepted === 3, "add NDJSON ids", data);
  }

  {
    const { data } = await c.GET("/v1/sketches/{name}", { params: { path: { name: "of:hll" } } });
    check(data !== undefined && data.type === "hll" && data.cardinality === 3, "count", data);
  }
  {
    const { data } = await c.POST("/v1/union", { body: { sketches: ["of:hll", "of:empty"] } });
    check(data !== undefined && "cardinality" in data && data.cardinality === 4, "union", data);
  }
  {
    const { data } = await c.POST("/v1/intersection", { body: { sketches: ["of:hll", "of:empty"] } });
    check(data !== undefined && data.lower <= 1 && 1 <= data.upper && data.terms.length === 3, "intersection", data);
  }

  // A series with the default kind and zone: only the levels are given.
  {
    const { data, response } = await c.PUT("/v1/series/{name}", { params: { path: { name: "of:active" } }, body: { levels: { hour: "P14D", day: "P400D" } } });
    check(response.status === 201 && data !== undefined && data.type === "hll" && data.tz === "UTC", "create a series with defaults", data);
  }
  const now = new Date();
  const yesterday = new Date(now.getTime() - 86400e3);
  const seriesAdd = async (ids: number[], ts: Date): Promise<void> => {
    const { data } = await c.POST("/v1/series/{name}/add", { params: { path: { name: "of:active" }, query: { ts: ts.toISOString() } }, body: { ids } });
    check(data !== undefined && data.accepted === ids.length, `series add at ${ts.toISOString()}`, data);
  };
  await seriesAdd([1, 2, 3], now);
  await seriesAdd([3, 4], yesterday);
  const today = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
  const day = 86400e3;
  {
    const from = new Date(today.getTime() - 7 * day).toISOString();
    const to = new Date(today.getTime() + day).toISOString();
    const { data } = await c.GET("/v1/series/{name}/count", { params: { path: { name: "of:active" }, query: { from, to } } });
    check(data !== undefined && data.cardinality === 4, "series count", data);
  }
  {
    const start = new Date(today.getTime() - day).toISOString();
    const { data } = await c.POST("/v1/retention", { body: { series: "of:active", period: "P1D", start, cohorts: 2, periods: 1 } });
    const first = data?.cohorts[0];
    const back = first?.cells.find((cell) => cell.offset === 1);
    check(data !== undefined && data.cohorts.length === 2 && first !== undefined && first.size.estimate === 2 && back !== undefined && back.estimate === 1,
      "retention: of yesterday's 2, 1 came back today", data);
  }

  // Errors decode as problems.
  {
    const { error, response } = await c.GET("/v1/sketches/{name}", { params: { path: { name: "of:missing" } } });
    const p: Problem | undefined = error;
    check(response.status === 404 && response.headers.get("Content-Type") === "application/problem+json" && p !== undefined &&
      p.type === "urn:sketchd:problem:not-found" && p.status === 404, "a missing sketch decodes as a Problem", error);
  }
  {
    const { error, response } = await c.PUT("/v1/sketches/{name}", { params: { path: { name: "of:bad" } }, body: { log2m: 30 } });
    check(response.status === 400 && error !== undefined && error.detail.includes("log2m"), "a bad parameter decodes as a Problem naming it", error);
  }
  console.log("openapi-fetch client: every check passed");
}

main().catch((err: unknown) => {
  console.log(`FAIL ${String(err)}`);
  process.exit(1);
});
