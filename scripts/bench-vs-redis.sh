#!/usr/bin/env bash
# bench-vs-redis.sh: measure sketchd's HTTP ingest against Redis PFADD on this
# machine, in one run, and compare the ratios with the performance bars of
# DESIGN.md:
#
#   sketchd JSON ints (10k a request, 8 clients) >= 2    x Redis PFADD without durability
#   sketchd JSON ints                            >= 3    x Redis PFADD with appendfsync always
#   sketchd octet-stream                         >= 2.5  x Redis PFADD without durability
#
# Redis is measured with redis-benchmark (-P 16 -c 8, PFADD of 100 random ids a
# command via __rand_int__) and with sketchload -redis, which sends the same
# workload from the same client code that measures sketchd. Every server is a
# throwaway one on a free loopback port with its data in a temp dir; all of it
# is stopped and removed on exit.
#
# Run from anywhere inside the repository:  scripts/bench-vs-redis.sh
# Settings (environment):
#   DURATION=10        seconds of each measured run
#   WARMUP=1           seconds of warmup before each sketchload run
#   CLIENTS=8          connections (redis-benchmark -c, sketchload -c)
#   PIPELINE=16        Redis commands per round trip (redis-benchmark -P)
#   REDIS_BATCH=100    ids per PFADD command
#   BATCH=10000        ids per sketchd add request
#   IDS=100000000      id space: ids are drawn from [0, IDS)
#   REDIS_REQUESTS=    redis-benchmark -n; default: what sketchload -redis did
#                      per second on the same server times DURATION
#   PREBUILT=0         sketchload -prebuilt: 0 builds every request during the
#                      run from fresh random ids, as redis-benchmark's
#                      __rand_int__ does. A reused pool (-1 = sketchload's
#                      default) repeats ids, and an add that changes no
#                      register needs no durable write: Redis does not even
#                      append such a PFADD to its AOF, so fsync-always figures
#                      from a pool measure no fsync at all.
#   REDIS_REF=benchmark  which Redis figure the bars use: benchmark
#                      (redis-benchmark) or sketchload (sketchload -redis)
#   SKIP_SKETCHD=0     1 = measure Redis only (no sketchd build)
#   OUT=               also write the figures and ratios as JSON to this file
#   STRICT=0           1 = exit 1 when a bar is missed
#   KEEP_TMP=0         1 = keep the temp dir (logs, AOF, sketchd.db)
set -euo pipefail

DURATION=${DURATION:-10}
WARMUP=${WARMUP:-1}
CLIENTS=${CLIENTS:-8}
PIPELINE=${PIPELINE:-16}
REDIS_BATCH=${REDIS_BATCH:-100}
BATCH=${BATCH:-10000}
IDS=${IDS:-100000000}
REDIS_REQUESTS=${REDIS_REQUESTS:-}
REDIS_REF=${REDIS_REF:-benchmark}
PREBUILT=${PREBUILT:-0}
SKIP_SKETCHD=${SKIP_SKETCHD:-0}
OUT=${OUT:-}
STRICT=${STRICT:-0}
KEEP_TMP=${KEEP_TMP:-0}

BAR_JSON_NOFSYNC=2
BAR_JSON_FSYNC=3
BAR_OCTET_NOFSYNC=2.5

die() {
	echo "bench-vs-redis: $*" >&2
	exit 1
}
log() { echo "bench-vs-redis: $*" >&2; }

case "${1:-}" in
-h | --help)
	sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
	exit 0
	;;
"") ;;
*) die "no arguments expected (settings come from the environment; see --help)" ;;
esac

for v in DURATION WARMUP CLIENTS PIPELINE REDIS_BATCH BATCH IDS; do
	[[ ${!v} =~ ^[0-9]+$ ]] || die "$v=${!v}: want a whole number"
done
((DURATION > 0 && CLIENTS > 0 && PIPELINE > 0 && REDIS_BATCH > 0 && BATCH > 0 && IDS > 0)) ||
	die "DURATION, CLIENTS, PIPELINE, REDIS_BATCH, BATCH and IDS must be positive"
[[ -z $REDIS_REQUESTS || $REDIS_REQUESTS =~ ^[1-9][0-9]*$ ]] || die "REDIS_REQUESTS=$REDIS_REQUESTS: want a positive number"
[[ $PREBUILT =~ ^(-1|[0-9]+)$ ]] || die "PREBUILT=$PREBUILT: want -1, 0 or a number of bodies"
[[ $REDIS_REF == benchmark || $REDIS_REF == sketchload ]] || die "REDIS_REF=$REDIS_REF: want benchmark or sketchload"

cd "$(dirname "${BASH_SOURCE[0]}")/.."
[[ -f go.mod && -d cmd/sketchload ]] || die "run from the sketchd repository (no go.mod/cmd/sketchload under $(pwd))"

# --- what we start, and how it all stops --------------------------------------
PIDS=()
TMP=$(mktemp -d "${TMPDIR:-/tmp}/bench-vs-redis.XXXXXX")
cleanup() {
	local rc=$?
	local pid
	for pid in "${PIDS[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${PIDS[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	if [[ $KEEP_TMP == 1 ]]; then
		log "kept $TMP"
	else
		rm -rf "$TMP"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

stop_pid() {
	local pid=$1 p
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	local keep=()
	for p in "${PIDS[@]}"; do
		[[ $p == "$pid" ]] || keep+=("$p")
	done
	PIDS=("${keep[@]}")
}

# free_port prints a loopback port nothing listens on (a connect is refused).
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

# --- tools --------------------------------------------------------------------
need_redis() {
	if command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null && command -v redis-cli >/dev/null; then
		return 0
	fi
	if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
		log "installing redis-server and redis-tools with apt-get"
		DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >&2
	fi
	command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null && command -v redis-cli >/dev/null ||
		die "redis-server, redis-benchmark and redis-cli are needed: install redis-server and redis-tools (as root this script does it)"
}
need_redis
command -v go >/dev/null || die "go is needed to build sketchload and sketchd"

# The bars are ratios taken in one run on one machine; other work sharing the
# CPU skews them (a single-threaded client such as redis-benchmark loses more
# of its share than a multi-threaded one), so say so up front.
loadavg() { cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo 0; }
CORES=$(nproc 2>/dev/null || echo 1)
LOAD_BEFORE=$(loadavg)
if awk -v l="$LOAD_BEFORE" -v c="$CORES" 'BEGIN { exit !(l > c / 2) }'; then
	log "warning: load average $LOAD_BEFORE on $CORES cores before the run: other work shares the CPU, figures will be low and noisy"
fi

log "building sketchload"
go build -o "$TMP/sketchload" ./cmd/sketchload || die "go build ./cmd/sketchload failed"
SKETCHLOAD=$TMP/sketchload

# json_num FILE KEY prints the number at top-level KEY of sketchload's -json output.
json_num() {
	local v
	v=$(grep -o "\"$2\": [-0-9.eE+]*" "$1" | head -n1 | awk '{print $2}')
	[[ -n $v ]] || die "no $2 in $1: $(cat "$1")"
	echo "$v"
}

# calc EXPR evaluates a floating-point expression.
calc() { awk "BEGIN { printf \"%.6f\", $1 }"; }
fmt_int() { printf "%'.0f" "$1" 2>/dev/null || printf "%.0f" "$1"; }

# --- Redis --------------------------------------------------------------------
REDIS_PORT=
REDIS_PID=
start_redis() { # name, extra redis-server args…
	local name=$1
	shift
	local dir="$TMP/$name"
	mkdir -p "$dir"
	REDIS_PORT=$(free_port)
	redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --protected-mode yes --dir "$dir" \
		--save '' --daemonize no --logfile "$dir/redis.log" "$@" &
	REDIS_PID=$!
	PIDS+=("$REDIS_PID")
	for _ in $(seq 1 100); do
		if [[ $(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null) == PONG ]]; then
			return 0
		fi
		kill -0 "$REDIS_PID" 2>/dev/null || break
		sleep 0.1
	done
	cat "$dir/redis.log" >&2 || true
	die "redis-server ($name) did not start on 127.0.0.1:$REDIS_PORT"
}

RAND_ARGS=()
for _ in $(seq 1 "$REDIS_BATCH"); do RAND_ARGS+=(__rand_int__); done

# measure_redis NAME: sketchload -redis, then redis-benchmark, on the running
# server. Sets SL_IDS and RB_IDS (ids/s) and RB_N.
measure_redis() {
	local name=$1 out="$TMP/$1"
	log "redis ($name): sketchload -redis, ${DURATION}s"
	"$SKETCHLOAD" -redis "127.0.0.1:$REDIS_PORT" -c "$CLIENTS" -pipeline "$PIPELINE" -batch "$REDIS_BATCH" \
		-ids "$IDS" -prebuilt "$PREBUILT" -duration "${DURATION}s" -warmup "${WARMUP}s" -progress 0 -json >"$out/sketchload.json" ||
		die "sketchload -redis ($name) failed: $(cat "$out/sketchload.json")"
	SL_IDS=$(json_num "$out/sketchload.json" ids_per_second)
	local slrps
	slrps=$(json_num "$out/sketchload.json" requests_per_second)
	RB_N=${REDIS_REQUESTS:-$(awk -v r="$slrps" -v d="$DURATION" 'BEGIN { n = int(r * d); if (n < 10000) n = 10000; print n }')}
	log "redis ($name): redis-benchmark -c $CLIENTS -P $PIPELINE -n $RB_N -r $IDS PFADD key <$REDIS_BATCH x __rand_int__>"
	redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" -c "$CLIENTS" -P "$PIPELINE" -n "$RB_N" -r "$IDS" --csv \
		PFADD key "${RAND_ARGS[@]}" >"$out/redis-benchmark.csv" || die "redis-benchmark ($name) failed"
	local rps
	rps=$(awk -F'","' 'NR == 2 { print $2 }' "$out/redis-benchmark.csv")
	[[ $rps =~ ^[0-9.]+$ ]] || die "cannot read requests/s from redis-benchmark output: $(cat "$out/redis-benchmark.csv")"
	RB_IDS=$(calc "$rps * $REDIS_BATCH")
	local count
	count=$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" pfcount key)
	log "redis ($name): redis-benchmark $(fmt_int "$RB_IDS") ids/s (PFCOUNT key = $count), sketchload -redis $(fmt_int "$SL_IDS") ids/s"
}

start_redis redis-nofsync --appendonly no
measure_redis redis-nofsync
NOFSYNC_RB=$RB_IDS NOFSYNC_SL=$SL_IDS NOFSYNC_N=$RB_N
stop_pid "$REDIS_PID"

# appendfsync always: every write is fsynced to the AOF before the reply. The
# background AOF rewrite is switched off so no fork lands inside a run.
start_redis redis-fsync --appendonly yes --appendfsync always --auto-aof-rewrite-percentage 0
measure_redis redis-fsync
FSYNC_RB=$RB_IDS FSYNC_SL=$SL_IDS FSYNC_N=$RB_N
stop_pid "$REDIS_PID"

if [[ $REDIS_REF == benchmark ]]; then
	REF_NOFSYNC=$NOFSYNC_RB REF_FSYNC=$FSYNC_RB REF_NAME=redis-benchmark
else
	REF_NOFSYNC=$NOFSYNC_SL REF_FSYNC=$FSYNC_SL REF_NAME="sketchload -redis"
fi

# --- sketchd ------------------------------------------------------------------
SD_JSON= SD_OCTET=
if [[ $SKIP_SKETCHD != 1 ]]; then
	log "building sketchd"
	if ! go build -o "$TMP/sketchd" ./cmd/sketchd 2>"$TMP/sketchd-build.log"; then
		cat "$TMP/sketchd-build.log" >&2
		die "go build ./cmd/sketchd failed: no sketchd to measure (SKIP_SKETCHD=1 measures Redis only)"
	fi
	SD_PORT=$(free_port)
	"$TMP/sketchd" -addr "127.0.0.1:$SD_PORT" -data "$TMP/sketchd.db" >"$TMP/sketchd.log" 2>&1 &
	SD_PID=$!
	PIDS+=("$SD_PID")
	for _ in $(seq 1 100); do
		curl -fsS -o /dev/null "http://127.0.0.1:$SD_PORT/healthz" 2>/dev/null && break
		kill -0 "$SD_PID" 2>/dev/null || {
			cat "$TMP/sketchd.log" >&2
			die "sketchd exited at start"
		}
		sleep 0.1
	done
	curl -fsS -o /dev/null "http://127.0.0.1:$SD_PORT/healthz" || {
		tail -n 50 "$TMP/sketchd.log" >&2
		die "sketchd did not answer /healthz on 127.0.0.1:$SD_PORT"
	}

	sketchd_run() { # format, prefix
		local f=$1 out="$TMP/sketchd-$1.json"
		log "sketchd: sketchload -format $f, $BATCH ids a request, $CLIENTS clients, ${DURATION}s"
		"$SKETCHLOAD" -target "http://127.0.0.1:$SD_PORT" -create -prefix "$2" -format "$f" -c "$CLIENTS" \
			-batch "$BATCH" -ids "$IDS" -prebuilt "$PREBUILT" -duration "${DURATION}s" -warmup "${WARMUP}s" -progress 0 -json >"$out" ||
			die "sketchload against sketchd ($f) failed: $(cat "$out")"
		local failed
		failed=$(json_num "$out" failed_requests)
		[[ $failed == 0 ]] || log "warning: $failed sketchd requests failed ($f); ids/s counts acknowledged ids only"
		json_num "$out" ids_per_second
	}
	SD_JSON=$(sketchd_run json bench-json)
	SD_OCTET=$(sketchd_run octet bench-octet)
	stop_pid "$SD_PID"
fi

# --- report -------------------------------------------------------------------
echo
printf "%-52s %14s\n" "ids/s ($CLIENTS clients, ${DURATION}s runs)" "ids/s"
printf "%-52s %14s\n" "Redis PFADD, no fsync, redis-benchmark" "$(fmt_int "$NOFSYNC_RB")"
printf "%-52s %14s\n" "Redis PFADD, no fsync, sketchload -redis" "$(fmt_int "$NOFSYNC_SL")"
printf "%-52s %14s\n" "Redis PFADD, appendfsync always, redis-benchmark" "$(fmt_int "$FSYNC_RB")"
printf "%-52s %14s\n" "Redis PFADD, appendfsync always, sketchload -redis" "$(fmt_int "$FSYNC_SL")"
if [[ -n $SD_JSON ]]; then
	printf "%-52s %14s\n" "sketchd JSON ints ($BATCH a request)" "$(fmt_int "$SD_JSON")"
	printf "%-52s %14s\n" "sketchd octet-stream ($BATCH a request)" "$(fmt_int "$SD_OCTET")"
fi
echo
LOAD_AFTER=$(loadavg)
echo "Redis: $REDIS_BATCH ids a PFADD, pipeline $PIPELINE; redis-benchmark -n $NOFSYNC_N (no fsync), -n $FSYNC_N (fsync always)."
echo "sketchload -prebuilt $PREBUILT ($([[ $PREBUILT == 0 ]] && echo "fresh random ids in every request" || echo "reused bodies: ids repeat"))."
echo "Load average $LOAD_BEFORE before, $LOAD_AFTER after, on $CORES cores."

FAILED=0
R1= R2= R3= P1= P2= P3=
verdict() { # ratio bar
	if awk -v r="$1" -v b="$2" 'BEGIN { exit !(r >= b) }'; then echo PASS; else echo FAIL; fi
}
if [[ -n $SD_JSON ]]; then
	R1=$(calc "$SD_JSON / $REF_NOFSYNC")
	R2=$(calc "$SD_JSON / $REF_FSYNC")
	R3=$(calc "$SD_OCTET / $REF_NOFSYNC")
	P1=$(verdict "$R1" $BAR_JSON_NOFSYNC)
	P2=$(verdict "$R2" $BAR_JSON_FSYNC)
	P3=$(verdict "$R3" $BAR_OCTET_NOFSYNC)
	[[ $P1 == PASS && $P2 == PASS && $P3 == PASS ]] || FAILED=1
	echo
	printf "%-44s %8s %8s %8s\n" "ratio (Redis figure: $REF_NAME)" measured bar verdict
	printf "%-44s %8.2f %8s %8s\n" "sketchd JSON / Redis no fsync" "$R1" "$BAR_JSON_NOFSYNC" "$P1"
	printf "%-44s %8.2f %8s %8s\n" "sketchd JSON / Redis appendfsync always" "$R2" "$BAR_JSON_FSYNC" "$P2"
	printf "%-44s %8.2f %8s %8s\n" "sketchd octet-stream / Redis no fsync" "$R3" "$BAR_OCTET_NOFSYNC" "$P3"
else
	echo "sketchd not measured (SKIP_SKETCHD=1): no ratios."
fi

if [[ -n $OUT ]]; then
	num() { if [[ -n $1 ]]; then printf "%s" "$1"; else printf null; fi; }
	pass() { if [[ -n $1 ]]; then [[ $1 == PASS ]] && printf true || printf false; else printf null; fi; }
	cat >"$OUT" <<EOF
{
  "duration_seconds": $DURATION,
  "clients": $CLIENTS,
  "pipeline": $PIPELINE,
  "redis_batch": $REDIS_BATCH,
  "batch": $BATCH,
  "id_space": $IDS,
  "prebuilt": $PREBUILT,
  "cores": $CORES,
  "load_average_before": $LOAD_BEFORE,
  "load_average_after": $LOAD_AFTER,
  "redis_reference": "$REF_NAME",
  "redis_nofsync": {"redis_benchmark_ids_per_second": $NOFSYNC_RB, "sketchload_ids_per_second": $NOFSYNC_SL, "redis_benchmark_requests": $NOFSYNC_N},
  "redis_fsync_always": {"redis_benchmark_ids_per_second": $FSYNC_RB, "sketchload_ids_per_second": $FSYNC_SL, "redis_benchmark_requests": $FSYNC_N},
  "sketchd": {"json_ids_per_second": $(num "$SD_JSON"), "octet_ids_per_second": $(num "$SD_OCTET")},
  "ratios": {"json_vs_redis_nofsync": $(num "$R1"), "json_vs_redis_fsync_always": $(num "$R2"), "octet_vs_redis_nofsync": $(num "$R3")},
  "bars": {"json_vs_redis_nofsync": $BAR_JSON_NOFSYNC, "json_vs_redis_fsync_always": $BAR_JSON_FSYNC, "octet_vs_redis_nofsync": $BAR_OCTET_NOFSYNC},
  "pass": {"json_vs_redis_nofsync": $(pass "$P1"), "json_vs_redis_fsync_always": $(pass "$P2"), "octet_vs_redis_nofsync": $(pass "$P3")}
}
EOF
	log "wrote $OUT"
fi

if [[ $STRICT == 1 && $FAILED == 1 ]]; then
	die "a bar was missed (STRICT=1)"
fi
