#!/bin/sh
# Builds the schema-version-4 store in this directory with a sketchd binary
# of that version (before checksums: commit 6824cc3), the way an operator
# upgrading would leave it: sketches of every kind and series checkpointed
# into sketchd.db, then more writes left in the write-ahead log by a
# kill -9 (their puts are records without checksums), and want.json, what
# that binary answered for each read just before the kill.
# TestUpgradeFromV4 (upgrade_test.go) opens a copy with the current binary
# and must answer the same.
#
#   go build -o /tmp/sketchd-v4 ./cmd/sketchd    # at commit 6824cc3
#   cd cmd/sketchd/testdata/v4 && sh make.sh /tmp/sketchd-v4
#
# The file is cut to the pages in use (bbolt grows it again as needed) so
# the fixture stays small. Never rerun it with a newer binary: the point is
# the old format.
set -eu
bin=$1
dir=$(pwd)
port=18479
rm -rf sketchd.db sketchd.db.wal want.json
api=http://127.0.0.1:$port
pid=
trap '[ -z "$pid" ] || kill -KILL $pid 2>/dev/null || true' EXIT
start() {
	"$bin" -addr 127.0.0.1:$port -data "$dir/sketchd.db" -drain-delay 0s -log-level warn -checkpoint-interval 1h -retention-interval 1h &
	pid=$!
	i=0
	until curl -sf $api/readyz >/dev/null; do
		i=$((i + 1))
		[ $i -lt 100 ] || exit 1
		sleep 0.1
	done
}
j() { curl -sf -H 'Content-Type: application/json' "$@" >/dev/null; }
now=$(date -u +%s)
hour=$((now / 3600 * 3600))
day=$((now / 86400 * 86400))
ts() { date -u -d "@$1" +%FT%TZ; }

start
j -X PUT -d '{"log2m":11}' $api/v1/sketches/hll-empty
j -X PUT -d '{"log2m":11}' $api/v1/sketches/hll-explicit
j -d '{"ids":[1,2,3,4,5]}' $api/v1/sketches/hll-explicit/add
j -X PUT -d '{"log2m":14,"expthresh":0,"metric":true}' $api/v1/sketches/hll-sparse
seq 1 300 | curl -sf -H 'Content-Type: text/plain' --data-binary @- $api/v1/sketches/hll-sparse/add >/dev/null
j -X PUT -d '{"log2m":11}' $api/v1/sketches/hll-full
seq 1 20000 | curl -sf -H 'Content-Type: text/plain' --data-binary @- $api/v1/sketches/hll-full/add >/dev/null
j -X PUT -d '{"type":"cms","width":64,"depth":3,"topk":4}' $api/v1/sketches/cms
j -d '{"items":[{"id":"a","count":3},{"id":7,"count":2}]}' $api/v1/sketches/cms/add
j -X PUT -d '{"type":"theta","lg_k":10}' $api/v1/sketches/theta
seq 1 3000 | curl -sf -H 'Content-Type: text/plain' --data-binary @- $api/v1/sketches/theta/add >/dev/null
j -X PUT -d '{"type":"freq"}' $api/v1/sketches/freq
j -d '{"items":[{"id":"alice","count":3},{"id":"bob","count":1}]}' $api/v1/sketches/freq/add
j -X PUT -d '{"tz":"UTC","levels":{"hour":"P14D","day":"P400D"}}' $api/v1/series/active
j -d '{"ids":[1,2,3]}' "$api/v1/series/active/add?ts=$(ts $((hour - 3600)))"
j -d '{"ids":[3,4]}' "$api/v1/series/active/add?ts=$(ts $hour)"
j -X PUT -d '{"type":"cms","width":32,"depth":2,"tz":"Europe/Berlin","levels":{"day":"P30D"}}' $api/v1/series/clicks
j -d '{"items":[{"id":"x","count":5}]}' "$api/v1/series/clicks/add?ts=$(ts $hour)"
kill -TERM $pid
wait $pid

# Writes left in the log: puts (creates, an upload, a whole new state),
# adds and a delete.
start
j -X PUT -d '{"log2m":12}' $api/v1/sketches/logged-put
curl -sf $api/v1/sketches/hll-explicit/raw | curl -sf -X PUT -H 'Content-Type: application/octet-stream' --data-binary @- $api/v1/sketches/logged-upload/raw >/dev/null
j -X PUT -d '{"log2m":10}' $api/v1/sketches/logged-state
seq 1 5000 | curl -sf -H 'Content-Type: text/plain' --data-binary @- $api/v1/sketches/logged-state/add >/dev/null
seq 20001 20100 | curl -sf -H 'Content-Type: text/plain' --data-binary @- $api/v1/sketches/hll-full/add >/dev/null
j -d '{"items":[{"id":"a","count":1}]}' $api/v1/sketches/cms/add
j -d '{"ids":[4,5,6]}' "$api/v1/series/active/add?ts=$(ts $hour)"
j -d '{"events":[{"id":77,"sketches":["hll-sparse","theta"]}]}' $api/v1/events
curl -sf -X DELETE $api/v1/sketches/hll-empty >/dev/null

# What the old binary answers, read by TestUpgradeFromV4.
from=$(ts $((day - 86400)))
to=$(ts $((day + 86400)))
{
	printf '{"reads":{'
	sep=
	for n in hll-explicit hll-sparse hll-full cms theta freq logged-put logged-upload logged-state; do
		printf '%s"/v1/sketches/%s/raw":"%s"' "$sep" $n "$(curl -sf $api/v1/sketches/$n/raw | od -An -v -tx1 | tr -d ' \n')"
		sep=,
	done
	for n in active clicks; do
		printf ',"/v1/series/%s/raw?from=%s&to=%s":"%s"' $n "$from" "$to" "$(curl -sf "$api/v1/series/$n/raw?from=$from&to=$to" | od -An -v -tx1 | tr -d ' \n')"
	done
	printf '},"gone":["/v1/sketches/hll-empty"]}\n'
} >want.json
kill -KILL $pid
wait $pid || true

# Cut the file to the pages its newest meta page says are in use.
python3 - <<'EOF'
import os, struct
b = open("sketchd.db", "rb").read()
metas = [struct.unpack_from("<QQ", b, m * 4096 + 56) for m in (0, 1)]  # (pgid high-water mark, txid)
hwm = max(metas, key=lambda m: m[1])[0]
os.truncate("sketchd.db", hwm * 4096)
EOF
rm -f sketchd.db.wal/checkpoint.tmp
ls -l sketchd.db sketchd.db.wal
