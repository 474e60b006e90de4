#!/usr/bin/env bash
# bench-vs-postgres.sh: measure durable JSON ingest through sketchd on its
# PostgreSQL backend against PostgreSQL doing the same work itself, in one
# run, and compare with the bar of issue 13:
#
#   one sketchd node (-postgres), JSON ints, 10k a request, 8 clients
#     >= 2.5 x PostgreSQL: the same batches from the same load generator as
#              bigint[] to INSERT … SELECT hll_add_agg(hll_hash_bigint(x))
#              FROM unnest($1) ON CONFLICT … hll_union (sketchload -postgres)
#
# then the same load spread over NODES sketchd nodes on the same database
# (one sketchload per node, the clients split between them), for the
# scaling figure. Every batch is fresh random ids (sketchload -prebuilt 0),
# so every request changes the sketch and commits.
#
# Run from anywhere inside the repository:  scripts/bench-vs-postgres.sh
# Settings (environment):
#   PGDSN="host=/var/run/postgresql dbname=postgres"  the database; the run
#                      uses a schema of its own there, dropped at the end
#   DURATION=10  WARMUP=1  CLIENTS=8  BATCH=10000  NODES=3
#   STRICT=0           1 = exit 1 when the bar is missed
set -euo pipefail

PGDSN=${PGDSN:-host=/var/run/postgresql dbname=postgres}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-1}
CLIENTS=${CLIENTS:-8}
BATCH=${BATCH:-10000}
NODES=${NODES:-3}
STRICT=${STRICT:-0}
BAR=2.5

die() {
	echo "bench-vs-postgres: $*" >&2
	exit 1
}
log() { echo "bench-vs-postgres: $*" >&2; }
case "${1:-}" in
-h | --help)
	sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
	exit 0
	;;
"") ;;
*) die "no arguments expected (settings come from the environment; see --help)" ;;
esac
for v in DURATION WARMUP CLIENTS BATCH NODES; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v=${!v}: want a positive whole number"
done
command -v jq >/dev/null || die "needs jq"
command -v psql >/dev/null || die "needs psql"

cd "$(dirname "${BASH_SOURCE[0]}")/.."
TMP=$(mktemp -d "${TMPDIR:-/tmp}/bench-vs-postgres.XXXXXX")
SCHEMA="sketchd_bench_$$"
PIDS=()
cleanup() {
	local rc=$? pid
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
	psql "$PGDSN" -qc "DROP SCHEMA IF EXISTS $SCHEMA CASCADE" >/dev/null 2>&1 || true
	rm -rf "$TMP"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() {
	local p
	for _ in $(seq 1 200); do
		p=$((20000 + RANDOM % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	die "found no free loopback port"
}

log "building sketchd and sketchload"
go build -o "$TMP/sketchd" ./cmd/sketchd
go build -o "$TMP/sketchload" ./cmd/sketchload
psql "$PGDSN" -qc "CREATE EXTENSION IF NOT EXISTS hll; CREATE SCHEMA $SCHEMA" >/dev/null
DSN="$PGDSN search_path=$SCHEMA,public"

# start_nodes N: start N sketchd nodes on the schema; their ports in PORTS.
PORTS=()
start_nodes() {
	local i port
	PORTS=()
	for ((i = 0; i < $1; i++)); do
		port=$(free_port)
		"$TMP/sketchd" -addr "127.0.0.1:$port" -postgres "$DSN" -log-level warn 2>>"$TMP/sketchd.log" &
		PIDS+=($!)
		PORTS+=("$port")
	done
	for port in "${PORTS[@]}"; do
		for _ in $(seq 1 100); do
			curl -fs "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && continue 2
			sleep 0.1
		done
		die "sketchd on $port did not become ready (see $TMP/sketchd.log)"
	done
}
stop_nodes() {
	local pid
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
	PIDS=()
}

# load_nodes: one sketchload per node, CLIENTS split between them, all at
# once; prints the summed ids/s.
load_nodes() {
	local n=${#PORTS[@]} i c out=()
	for ((i = 0; i < n; i++)); do
		c=$((CLIENTS / n + (i < CLIENTS % n ? 1 : 0)))
		"$TMP/sketchload" -target "http://127.0.0.1:${PORTS[$i]}" -format json -create -prefix "load$i" -c "$c" -batch "$BATCH" \
			-prebuilt 0 -duration "${DURATION}s" -warmup "${WARMUP}s" -progress 0 -json >"$TMP/load$i.json" &
		out+=($!)
	done
	for pid in "${out[@]}"; do wait "$pid"; done
	jq -s 'map(.ids_per_second) | add' "$TMP"/load*.json
	rm -f "$TMP"/load*.json
}

log "1 sketchd node, $CLIENTS clients, $BATCH JSON ids a request"
start_nodes 1
ONE=$(load_nodes)
stop_nodes
log "PostgreSQL itself: the same batches as bigint[] (sketchload -postgres)"
PG=$("$TMP/sketchload" -postgres "$DSN" -create -c "$CLIENTS" -batch "$BATCH" -prebuilt 0 \
	-duration "${DURATION}s" -warmup "${WARMUP}s" -progress 0 -json | jq '.ids_per_second')
log "$NODES sketchd nodes, $CLIENTS clients split between them"
start_nodes "$NODES"
MANY=$(load_nodes)
stop_nodes

RATIO=$(jq -n "$ONE / $PG")
printf '%-44s %14.0f ids/s\n' "sketchd -postgres, 1 node (JSON)" "$ONE"
printf '%-44s %14.0f ids/s\n' "PostgreSQL hll_add_agg + hll_union (bigint[])" "$PG"
printf '%-44s %14.0f ids/s\n' "sketchd -postgres, $NODES nodes (JSON)" "$MANY"
printf '1 node / PostgreSQL = %.2fx (bar %sx)   %d nodes / 1 node = %.2fx\n' "$RATIO" "$BAR" "$NODES" "$(jq -n "$MANY / $ONE")"
if [[ $STRICT == 1 ]] && jq -e -n "$RATIO < $BAR" >/dev/null; then
	die "the bar is missed"
fi
