#!/usr/bin/env bash
# bench-small-sketches.sh: the memory of a million small sketches in sketchd
# against Redis holding the same keys, in one run.
#
# Both servers get N keys named %08d, each with the 3 integer ids 3i, 3i+1,
# 3i+2: sketchd through POST /v1/events with ?create (default HLLs, so each is
# an EXPLICIT HLL of 3 ids), Redis through PFADD (a sparse HyperLogLog each),
# without persistence. sketchd is built as the image builds it (static,
# stripped). sketchd's RSS is read once right after the last
# write (unsettled: new sketches still in the log); then the script waits
# for sketchd's checkpoints to settle (its log empty, then 2 s more: sketchd
# returns the heap its checkpoints released within a second of the last
# one), reads each server's RSS (VmRSS) and
# peak (VmHWM) from /proc, pages through every sketchd sketch 1,000 at a
# time (GET /v1/sketches) and reads sketchd's RSS and peak again: a
# listing must not raise the peak.
#
# Run from anywhere inside the repository:  scripts/bench-small-sketches.sh
# Settings (environment):
#   N=1000000     keys
#   BATCH=10000   keys a request (3 events each)
#   KEEP_TMP=0    1 = keep the temp dir
#   SKETCHD_FLAGS="" more sketchd flags (e.g. "-debug-addr 127.0.0.1:6060"
#                 to take heap profiles while it runs)
set -euo pipefail

N=${N:-1000000}
BATCH=${BATCH:-10000}
KEEP_TMP=${KEEP_TMP:-0}
SKETCHD_FLAGS=${SKETCHD_FLAGS:-}

die() {
	echo "bench-small-sketches: $*" >&2
	exit 1
}
log() { echo "bench-small-sketches: $*" >&2; }

case "${1:-}" in
-h | --help)
	sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
	exit 0
	;;
"") ;;
*) die "no arguments expected (settings come from the environment; see --help)" ;;
esac
for v in N BATCH; do
	[[ ${!v} =~ ^[0-9]+$ ]] && ((${!v} > 0)) || die "$v=${!v}: want a positive whole number"
done

cd "$(git rev-parse --show-toplevel 2>/dev/null || pwd)"
[[ -f go.mod && -d cmd/sketchd ]] || die "run from the sketchd repository"
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
	if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
		log "installing redis-server and redis-tools with apt-get"
		DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >&2
	fi
fi
command -v redis-server >/dev/null && command -v redis-cli >/dev/null || die "redis-server and redis-cli are needed"
command -v python3 >/dev/null || die "python3 is needed to write the request bodies"
command -v curl >/dev/null || die "curl is needed"

TMP=$(mktemp -d)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [[ $KEEP_TMP == 1 ]]; then log "kept $TMP"; else rm -rf "$TMP"; fi
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
kib() { awk -v k="$2" '$1 == k":" { print $2 }' "/proc/$1/status"; }
mib() { awk -v k="$1" 'BEGIN { printf "%.0f", k / 1024 }'; }

# Built as the image builds it (Dockerfile): static, so no C library is
# mapped into the process whose memory this measures.
CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$TMP/sketchd" ./cmd/sketchd || die "go build ./cmd/sketchd failed"

# --- Redis ---------------------------------------------------------------------
RPORT=$(free_port)
redis-server --port "$RPORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$TMP" >"$TMP/redis.log" 2>&1 &
RPID=$!
PIDS+=("$RPID")
for _ in $(seq 1 100); do redis-cli -p "$RPORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
python3 - "$N" >"$TMP/redis.resp" <<'PY'
import sys
n = int(sys.argv[1])
out = sys.stdout
for i in range(n):
    k = "%08d" % i
    ids = [str(3 * i + j) for j in range(3)]
    args = ["PFADD", k] + ids
    out.write("*%d\r\n" % len(args) + "".join("$%d\r\n%s\r\n" % (len(a), a) for a in args))
PY
redis-cli -p "$RPORT" --pipe <"$TMP/redis.resp" >"$TMP/redis-pipe.log" || die "redis-cli --pipe failed: $(tail -3 "$TMP/redis-pipe.log")"
keys=$(redis-cli -p "$RPORT" dbsize)
[[ $keys == "$N" ]] || die "Redis holds $keys keys, want $N"
REDIS_RSS=$(kib "$RPID" VmRSS)
REDIS_HWM=$(kib "$RPID" VmHWM)
log "redis: $keys keys, RSS $(mib "$REDIS_RSS") MiB, peak $(mib "$REDIS_HWM") MiB"

# --- sketchd -------------------------------------------------------------------
SPORT=$(free_port)
"$TMP/sketchd" -addr "127.0.0.1:$SPORT" -data "$TMP/sketchd.db" -log-level warn -drain-delay 0 $SKETCHD_FLAGS >"$TMP/sketchd.log" 2>&1 &
SPID=$!
PIDS+=("$SPID")
for _ in $(seq 1 100); do curl -fs "127.0.0.1:$SPORT/readyz" >/dev/null && break; sleep 0.1; done
python3 - "$N" "$BATCH" "$TMP/bodies" <<'PY'
import os, sys
n, batch, d = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
os.makedirs(d)
for b, start in enumerate(range(0, n, batch)):
    evs = []
    for i in range(start, min(n, start + batch)):
        for j in range(3):
            evs.append('{"id":%d,"sketches":["%08d"]}' % (3 * i + j, i))
    with open(os.path.join(d, "%06d.json" % b), "w") as f:
        f.write('{"events":[' + ",".join(evs) + "]}")
PY
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
LOAD_START=$(date +%s.%N)
CPU_START=$(cpu_ticks "$SPID")
for f in "$TMP"/bodies/*.json; do
	for try in $(seq 1 200); do
		code=$(curl -s -o "$TMP/answer" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary "@$f" "127.0.0.1:$SPORT/v1/events?create=true")
		[[ $code == 200 ]] && break
		[[ $code == 503 ]] || die "POST /v1/events answered $code: $(cat "$TMP/answer")"
		sleep 0.05 # a checkpoint runs: retry, as a client would
	done
	[[ $code == 200 ]] || die "POST /v1/events kept answering 503"
done
LOAD_END=$(date +%s.%N)
LOAD_CPU=$(awk -v a="$CPU_START" -v b="$(cpu_ticks "$SPID")" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", (b - a) / hz }')
LOAD_S=$(awk -v a="$LOAD_START" -v b="$LOAD_END" 'BEGIN { printf "%.2f", b - a }')
log "sketchd: wrote $N sketches in $LOAD_S s (one request of $BATCH at a time, waiting for each), $LOAD_CPU s of its CPU"
# Before the checkpoints settle: the sketches still only in the log (and
# decoded in memory) are what a burst of new sketches costs until then.
SK_RSS0=$(kib "$SPID" VmRSS)
SK_ANON0=$(kib "$SPID" RssAnon)
SK_FILE0=$(kib "$SPID" RssFile)
WAL0=$(curl -fs "127.0.0.1:$SPORT/metrics" | awk '$1 == "sketchd_wal_size_bytes" { print $2 }')
log "sketchd before the checkpoints settle: RSS $(mib "$SK_RSS0") MiB (anonymous $(mib "$SK_ANON0"), mapped files $(mib "$SK_FILE0")), log ${WAL0:-?} bytes"
# Let the checkpoints settle: the log empties once every change is in bbolt.
for _ in $(seq 1 600); do
	wal=$(curl -fs "127.0.0.1:$SPORT/metrics" | awk '$1 == "sketchd_wal_size_bytes" { print $2 }')
	[[ ${wal:-1} == 0 ]] && break
	sleep 0.5
done
sleep 2
SK_RSS=$(kib "$SPID" VmRSS)
SK_HWM=$(kib "$SPID" VmHWM)
SK_ANON=$(kib "$SPID" RssAnon)
SK_FILE=$(kib "$SPID" RssFile)
log "sketchd: RSS $(mib "$SK_RSS") MiB (anonymous $(mib "$SK_ANON"), mapped files $(mib "$SK_FILE")), peak while loading $(mib "$SK_HWM") MiB"
# One process pages through the listing (a process a page would cost more
# than the pages).
listed=$(python3 - "127.0.0.1:$SPORT" <<'PY'
import json, sys, urllib.parse, urllib.request
base, after, n = sys.argv[1], "", 0
while True:
    q = {"limit": "1000"}
    if after:
        q["after"] = after
    with urllib.request.urlopen("http://%s/v1/sketches?%s" % (base, urllib.parse.urlencode(q))) as r:
        page = json.load(r)
    n += len(page["sketches"])
    after = page.get("next")
    if not after:
        break
print(n)
PY
)
[[ $listed == "$N" ]] || die "listed $listed sketches, want $N"
SK_RSS2=$(kib "$SPID" VmRSS)
SK_HWM2=$(kib "$SPID" VmHWM)
SK_ANON2=$(kib "$SPID" RssAnon)
SK_FILE2=$(kib "$SPID" RssFile)
log "sketchd after listing all: RSS $(mib "$SK_RSS2") MiB (anonymous $(mib "$SK_ANON2"), mapped files $(mib "$SK_FILE2")), peak $(mib "$SK_HWM2") MiB"
# RssFile is mapped files: sketchd's own executable (about 15 MiB from the
# start, before any write), and bbolt's file as the pages a listing
# touched: page cache the kernel reclaims under pressure, not memory
# sketchd holds; RssAnon is.
awk -v s0="$SK_RSS0" -v a0="$SK_ANON0" -v f0="$SK_FILE0" -v s="$SK_RSS" -v s2="$SK_RSS2" -v h="$SK_HWM2" -v r="$REDIS_RSS" -v a="$SK_ANON" -v a2="$SK_ANON2" -v f="$SK_FILE" -v f2="$SK_FILE2" -v n="$N" -v load="$(cut -d' ' -f1 /proc/loadavg)" -v ls="$LOAD_S" -v lc="$LOAD_CPU" 'BEGIN {
	printf "%d small sketches (load average %s)\n", n, load
	printf "  sketchd ingest         %6.2f s  %.0f sketches/s (one request at a time), %.2f s of sketchd CPU\n", ls, n / ls, lc
	printf "  redis RSS              %6.0f MiB\n", r / 1024
	printf "  sketchd RSS, unsettled %6.0f MiB  %.2fx redis  (anonymous %.0f, mapped files %.0f)\n", s0 / 1024, s0 / r, a0 / 1024, f0 / 1024
	printf "  sketchd RSS            %6.0f MiB  %.2fx redis  (anonymous %.0f, mapped files %.0f)\n", s / 1024, s / r, a / 1024, f / 1024
	printf "  sketchd RSS, listed    %6.0f MiB  %.2fx redis  (anonymous %.0f, mapped files %.0f)\n", s2 / 1024, s2 / r, a2 / 1024, f2 / 1024
	printf "  sketchd peak (VmHWM)   %6.0f MiB  %.2fx redis\n", h / 1024, h / r
}'
