#!/usr/bin/env bash
# bench-ingest-cpu.sh: sketchd's CPU per id on the durable ingest path, beside
# the read ceiling (sketchload -serve-discard: a Go HTTP server that reads each
# body to its end and drops it) under the same load, in one run.
#
# For each round, each kind of ids (IDS) and each body format (JSON,
# octet-stream), sketchload drives each server in turn (-create, 8 clients,
# 10k fresh random ids a request) for DURATION seconds after 2 s of warmup;
# the server's CPU (utime + stime from
# /proc/PID/stat) over the run, divided by the ids it acknowledged, is its CPU
# per id. CPU per id stays put on a shared, loaded machine where throughput
# does not: it is the figure to compare. sketchd runs with its defaults (every
# answer waits for its fdatasync). Prints one line per run, then the medians
# and the ratio to the ceiling.
#
# Run from anywhere inside the repository:  scripts/bench-ingest-cpu.sh
# Settings (environment):
#   ROUNDS=3       rounds (each runs every server, kind of ids and format once)
#   DURATION=10    seconds a run
#   CLIENTS=8      sketchload -c
#   BATCH=10000    ids a request
#   FORMATS="json octet"
#   IDS=small      the ids sent, one or more of (each runs every round):
#                    small     uniform below 10^8 (7-8 digits), sketchload's default
#                    int64     uniform in [0, 2^63): 18-19 digits, as 64-bit user ids
#                    negative  the int64 ids negated (-1-id): a sign and 18-19 digits
#                    uuid      36-character UUID-like strings (JSON only: octet skipped)
#   OUT=           also write every run as JSON lines to this file
#   BASE=          a git revision: sketchd built from it runs too, as "base",
#                  so a change is measured against the code before it in the
#                  same run (its ratio to the ceiling is printed beside)
set -euo pipefail

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10}
CLIENTS=${CLIENTS:-8}
BATCH=${BATCH:-10000}
FORMATS=${FORMATS:-json octet}
IDS=${IDS:-small}
OUT=${OUT:-}
BASE=${BASE:-}

die() {
	echo "bench-ingest-cpu: $*" >&2
	exit 1
}
log() { echo "bench-ingest-cpu: $*" >&2; }

case "${1:-}" in
-h | --help)
	sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
	exit 0
	;;
"") ;;
*) die "no arguments expected (settings come from the environment; see --help)" ;;
esac
for v in ROUNDS DURATION CLIENTS BATCH; do
	[[ ${!v} =~ ^[0-9]+$ ]] && ((${!v} > 0)) || die "$v=${!v}: want a positive whole number"
done
for f in $FORMATS; do [[ $f == json || $f == octet ]] || die "FORMATS: $f is not json or octet"; done
for k in $IDS; do [[ $k =~ ^(small|int64|negative|uuid)$ ]] || die "IDS: $k is not small, int64, negative or uuid"; done
# idflags KIND FORMAT: sketchload's flags for those ids in that format
# (empty for a pair that cannot be sent: uuid in octet-stream).
idflags() {
	case $1 in
	small) echo "-format $2" ;;
	int64) echo "-format $2 -ids 9223372036854775808" ;;
	negative) echo "-format $2 -ids 9223372036854775808 -negative" ;;
	uuid) [[ $2 == json ]] && echo "-format json-uuid" ;;
	esac
}

cd "$(git rev-parse --show-toplevel 2>/dev/null || pwd)"
[[ -f go.mod && -d cmd/sketchd ]] || die "run from the sketchd repository"
TMP=$(mktemp -d)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT
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
go build -o "$TMP/sketchd" ./cmd/sketchd || die "go build ./cmd/sketchd failed"
go build -o "$TMP/sketchload" ./cmd/sketchload || die "go build ./cmd/sketchload failed"
if [[ -n $BASE ]]; then
	mkdir "$TMP/base-src"
	git archive "$BASE" | tar -x -C "$TMP/base-src" || die "BASE=$BASE: git archive failed"
	(cd "$TMP/base-src" && go build -o "$TMP/base" ./cmd/sketchd) || die "BASE=$BASE: go build ./cmd/sketchd failed"
fi
TICK=$(getconf CLK_TCK)

SD_PORT=$(free_port)
"$TMP/sketchd" -addr "127.0.0.1:$SD_PORT" -data "$TMP/sketchd.db" -log-level warn -drain-delay 0 >"$TMP/sketchd.log" 2>&1 &
SD_PID=$!
PIDS+=("$SD_PID")
CE_PORT=$(free_port)
"$TMP/sketchload" -serve-discard "127.0.0.1:$CE_PORT" 2>"$TMP/ceiling.log" &
CE_PID=$!
PIDS+=("$CE_PID")
for _ in $(seq 1 100); do
	curl -fs "127.0.0.1:$SD_PORT/readyz" >/dev/null 2>&1 && curl -fs -X PUT "127.0.0.1:$CE_PORT/" >/dev/null 2>&1 && break
	sleep 0.1
done
curl -fs "127.0.0.1:$SD_PORT/readyz" >/dev/null || die "sketchd did not start: $(tail -3 "$TMP/sketchd.log")"
if [[ -n $BASE ]]; then
	BASE_PORT=$(free_port)
	"$TMP/base" -addr "127.0.0.1:$BASE_PORT" -data "$TMP/base.db" -log-level warn -drain-delay 0 >"$TMP/base.log" 2>&1 &
	BASE_PID=$!
	PIDS+=("$BASE_PID")
	for _ in $(seq 1 100); do
		curl -fs "127.0.0.1:$BASE_PORT/readyz" >/dev/null 2>&1 && break
		sleep 0.1
	done
	curl -fs "127.0.0.1:$BASE_PORT/readyz" >/dev/null || die "sketchd at BASE=$BASE did not start: $(tail -3 "$TMP/base.log")"
fi

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
declare -A RES
run() { # server pid port format ids round
	local name=$1 pid=$2 port=$3 f=$4 k=$5 r=$6 c0 c1 out ids flags
	flags=$(idflags "$k" "$f")
	# Warm up (connections, the sketch full) before the CPU is read.
	# shellcheck disable=SC2086 # flags are words
	"$TMP/sketchload" -target "http://127.0.0.1:$port" -create -prefix "cpu-$k-$f" $flags -c "$CLIENTS" \
		-batch "$BATCH" -prebuilt 0 -duration 2s -progress 0 >/dev/null || die "sketchload against $name failed"
	c0=$(cpu_ticks "$pid")
	# shellcheck disable=SC2086
	out=$("$TMP/sketchload" -target "http://127.0.0.1:$port" -create -prefix "cpu-$k-$f" $flags -c "$CLIENTS" \
		-batch "$BATCH" -prebuilt 0 -duration "${DURATION}s" -progress 0 -json) || die "sketchload against $name failed"
	c1=$(cpu_ticks "$pid")
	ids=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["ids"])' <<<"$out")
	((ids > 0)) || die "$name acknowledged no ids"
	local ns
	ns=$(awk -v t=$((c1 - c0)) -v k="$TICK" -v n="$ids" 'BEGIN { printf "%.2f", t / k * 1e9 / n }')
	RES[$name,$k,$f]+="$ns "
	printf '%-8s %-6s %-8s round %d: %6.2f ns of server CPU per id (%d ids, load average %s)\n' "$name" "$f" "$k" "$r" "$ns" "$ids" "$(cut -d' ' -f1 /proc/loadavg)"
	if [[ -n $OUT ]]; then
		printf '{"server":"%s","format":"%s","ids_kind":"%s","round":%d,"cpu_ns_per_id":%s,"ids":%d}\n' "$name" "$f" "$k" "$r" "$ns" "$ids" >>"$OUT"
	fi
}
for k in $IDS; do
	for f in $FORMATS; do
		[[ -n $(idflags "$k" "$f") ]] || log "IDS=$k cannot be sent as $f: skipped"
	done
done
for r in $(seq 1 "$ROUNDS"); do
	for k in $IDS; do
		for f in $FORMATS; do
			[[ -n $(idflags "$k" "$f") ]] || continue
			[[ -z $BASE ]] || run base "$BASE_PID" "$BASE_PORT" "$f" "$k" "$r"
			run sketchd "$SD_PID" "$SD_PORT" "$f" "$k" "$r"
			run ceiling "$CE_PID" "$CE_PORT" "$f" "$k" "$r"
		done
	done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
range() { tr ' ' '\n' | grep . | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print lo "-" hi }'; }
echo
printf '%-6s %-8s %12s %14s %12s %14s %8s\n' format ids sketchd range ceiling range ratio
for k in $IDS; do
	for f in $FORMATS; do
		[[ -n $(idflags "$k" "$f") ]] || continue
		s=$(median <<<"${RES[sketchd,$k,$f]}")
		c=$(median <<<"${RES[ceiling,$k,$f]}")
		printf '%-6s %-8s %9.2f ns %14s %9.2f ns %14s %7.2fx   (medians of %d; server CPU per id)\n' "$f" "$k" "$s" "$(range <<<"${RES[sketchd,$k,$f]}")" \
			"$c" "$(range <<<"${RES[ceiling,$k,$f]}")" "$(awk -v a="$s" -v b="$c" 'BEGIN { print a / b }')" "$ROUNDS"
		if [[ -n $BASE ]]; then
			s=$(median <<<"${RES[base,$k,$f]}")
			printf '%-6s %-8s %9.2f ns %14s %12s %14s %7.2fx   (sketchd at BASE=%s)\n' "$f" "$k" "$s" "$(range <<<"${RES[base,$k,$f]}")" \
				"" "" "$(awk -v a="$s" -v b="$c" 'BEGIN { print a / b }')" "$BASE"
		fi
	done
done
