#!/usr/bin/env bash
# Runs the hostile-client tests through the real binary at larger scales
# than CI does (docs/hostile.md): SCALES="1 4 16" multiplies the lying
# connections (40 each), the trickling bodies (16 each) and the events
# body size (1 MiB each, at most 32 MiB, 64 requests at once). Each line
# of the output is one measurement; a test fails when its bound is passed.
set -euo pipefail
cd "$(dirname "$0")/.."
for scale in ${SCALES:-1 4 16}; do
  echo "== scale $scale"
  SKETCHD_HOSTILE_SCALE=$scale go test -count=1 -timeout 30m -v \
    -run 'TestContentLengthLies|TestSlowBodiesKeepWritesFlowing|TestEventsPeakRSS' ./cmd/sketchd |
    grep -E 'RSS|adds beside|^(--- |ok|FAIL)' || true
done
