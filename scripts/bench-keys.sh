#!/usr/bin/env bash
# bench-keys.sh: what Idempotency-Keys cost. Durable ingest into one
# sketchd (CLIENTS clients, BATCH fresh random ids a request, a 2xx only
# once durable) without and with a key on every request (sketchload
# -idempotency-keys), alternating in one run against the same server, COUNT
# times each, each run into a sketch of its own. Prints one Go benchmark
# line a run (ids/s, p50 and p99 latency), so that
#
#   benchstat -col /keys file
#
# compares the two; with benchstat on PATH (or BENCHSTAT=path) the script
# runs it. The bar (issue 25): on bbolt, keys cost less than 10% of ids/s.
#
# Run from anywhere inside the repository:  scripts/bench-keys.sh
# Settings (environment):
#   BACKEND=bolt       or postgres (then PGDSN names the database; the run
#                      uses a schema of its own there, dropped at the end)
#   PGDSN="host=/var/run/postgresql dbname=postgres"
#   DURATION=10  WARMUP=1  CLIENTS=8  BATCH=10000  COUNT=6  FORMAT=json
#   OUT=file           also write the benchmark lines there
#   BENCHSTAT=benchstat
#   STRICT=0           1 = exit 1 when keys cost 10% or more (median ids/s)
set -euo pipefail

BACKEND=${BACKEND:-bolt}
PGDSN=${PGDSN:-host=/var/run/postgresql dbname=postgres}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-1}
CLIENTS=${CLIENTS:-8}
BATCH=${BATCH:-10000}
COUNT=${COUNT:-6}
FORMAT=${FORMAT:-json}
OUT=${OUT:-}
BENCHSTAT=${BENCHSTAT:-benchstat}
STRICT=${STRICT:-0}

die() {
	echo "bench-keys: $*" >&2
	exit 1
}
log() { echo "bench-keys: $*" >&2; }
case "${1:-}" in
-h | --help)
	sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
	exit 0
	;;
"") ;;
*) die "no arguments expected (settings come from the environment; see --help)" ;;
esac
for v in DURATION WARMUP CLIENTS BATCH COUNT; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v=${!v}: want a positive whole number"
done
[[ $BACKEND == bolt || $BACKEND == postgres ]] || die "BACKEND=$BACKEND: want bolt or postgres"
command -v jq >/dev/null || die "needs jq"

cd "$(dirname "${BASH_SOURCE[0]}")/.."
TMP=$(mktemp -d "${TMPDIR:-/tmp}/bench-keys.XXXXXX")
SCHEMA="sketchd_bench_keys_$$"
PID=
cleanup() {
	local rc=$?
	[[ -n $PID ]] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
	if [[ $BACKEND == postgres ]]; then
		psql "$PGDSN" -qc "DROP SCHEMA IF EXISTS $SCHEMA CASCADE" >/dev/null 2>&1 || true
	fi
	rm -rf "$TMP"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log "building sketchd and sketchload"
go build -o "$TMP/sketchd" ./cmd/sketchd
go build -o "$TMP/sketchload" ./cmd/sketchload

PORT=
for _ in $(seq 1 200); do
	p=$((20000 + RANDOM % 40000))
	if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
		PORT=$p
		break
	fi
done
[[ -n $PORT ]] || die "found no free loopback port"
ARGS=(-addr "127.0.0.1:$PORT" -log-level warn -data "$TMP/sketchd.db")
if [[ $BACKEND == postgres ]]; then
	command -v psql >/dev/null || die "needs psql"
	psql "$PGDSN" -qc "CREATE EXTENSION IF NOT EXISTS hll; CREATE SCHEMA $SCHEMA" >/dev/null
	ARGS+=(-postgres "$PGDSN search_path=$SCHEMA,public")
fi
"$TMP/sketchd" "${ARGS[@]}" 2>>"$TMP/sketchd.log" &
PID=$!
for _ in $(seq 1 100); do
	curl -fs "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1 && break
	sleep 0.1
done
curl -fs "http://127.0.0.1:$PORT/readyz" >/dev/null || die "sketchd did not become ready (see $TMP/sketchd.log)"

# run KEYS N: one load run into a sketch of its own; prints a benchmark line.
run() {
	local keys=$1 n=$2 flags=()
	[[ $keys == on ]] && flags=(-idempotency-keys)
	"$TMP/sketchload" -target "http://127.0.0.1:$PORT" -create -prefix "keys-$keys-$n" -c "$CLIENTS" -batch "$BATCH" \
		-format "$FORMAT" -prebuilt 0 -duration "${DURATION}s" -warmup "${WARMUP}s" -progress 0 -json "${flags[@]}" >"$TMP/run.json"
	jq -r --arg name "BenchmarkIngest/backend=$BACKEND/format=$FORMAT/keys=$keys" \
		'"\($name) 1 \(.ids_per_second) ids/s \(.latency_ms.p50) p50-ms \(.latency_ms.p99) p99-ms"' "$TMP/run.json"
}

log "$BACKEND, $CLIENTS clients, $BATCH $FORMAT ids a request, $COUNT runs of ${DURATION}s each way, alternating"
: >"$TMP/bench.txt"
echo "goos: $(go env GOOS)" >>"$TMP/bench.txt"
echo "goarch: $(go env GOARCH)" >>"$TMP/bench.txt"
echo "pkg: github.com/sketchd/sketchd/scripts/bench-keys" >>"$TMP/bench.txt"
for ((i = 1; i <= COUNT; i++)); do
	# Alternate which goes first, so drift over the run falls on both.
	if ((i % 2)); then order=(off on); else order=(on off); fi
	for k in "${order[@]}"; do
		line=$(run "$k" "$i")
		echo "$line" | tee -a "$TMP/bench.txt" >&2
	done
done
[[ -n $OUT ]] && cp "$TMP/bench.txt" "$OUT"
cat "$TMP/bench.txt"
if command -v "$BENCHSTAT" >/dev/null; then
	"$BENCHSTAT" -col /keys "$TMP/bench.txt"
fi

# The medians, and the bar.
median() { grep "keys=$1 " "$TMP/bench.txt" | awk '{print $3}' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
OFF=$(median off)
ON=$(median on)
COST=$(jq -n "100 * (1 - $ON / $OFF)")
printf 'median ids/s: without keys %.0f, with keys %.0f: keys cost %.1f%%\n' "$OFF" "$ON" "$COST"
if [[ $STRICT == 1 && $BACKEND == bolt ]] && jq -e -n "$COST >= 10" >/dev/null; then
	die "keys cost 10% or more on bbolt: the bar is missed"
fi
