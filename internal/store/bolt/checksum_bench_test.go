package bolt

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// What the record checksums cost where they are computed and checked: a
// checkpoint (every changed sketch is encoded, checksummed and written)
// and a cold load (a record read from bbolt, checked and decoded). Both
// benchmarks use only what the store had before checksums, so the same
// file runs on the commit before them for the comparison in
// docs/benchmarks.md:
//
//	go test -run '^$' -bench 'Checkpoint|ColdLoad' -count 6 ./internal/store/bolt

// benchSketches makes n sketches of the kind rep names (FULL: log2m 14
// with 20,000 ids, about 10 KiB; EXPLICIT: 20 ids) and checkpoints them.
func benchSketches(b *testing.B, rep string, n int) *DB {
	b.Helper()
	s, _ := openStore(b, Options{CheckpointInterval: time.Hour})
	r := rand.New(rand.NewPCG(7, 7))
	ids := 20
	if rep == "FULL" {
		ids = 20000
	}
	for i := range n {
		if err := addHashes(s, fmt.Sprintf("s%05d", i), randomHashes(r, ids), true); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Checkpoint(ctx); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkCheckpoint checkpoints 1,000 changed sketches: each loop marks
// them all changed (without a write, so only the checkpoint is timed) and
// checkpoints.
func BenchmarkCheckpoint(b *testing.B) {
	for _, rep := range []string{"FULL", "EXPLICIT"} {
		b.Run(rep, func(b *testing.B) {
			const n = 1000
			s := benchSketches(b, rep, n)
			var es []*entry
			s.cacheMu.Lock()
			for _, e := range s.entries {
				es = append(es, e)
			}
			s.cacheMu.Unlock()
			if len(es) != n {
				b.Fatalf("%d cached sketches, want %d", len(es), n)
			}
			b.ReportAllocs()
			for b.Loop() {
				for _, e := range es {
					e.mu.Lock()
					s.markDirty(e, 0)
					e.mu.Unlock()
				}
				if err := s.Checkpoint(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/sketch")
		})
	}
}

// BenchmarkColdLoad reads and decodes one stored sketch from bbolt, as
// the first read of a sketch that is not cached does.
func BenchmarkColdLoad(b *testing.B) {
	for _, rep := range []string{"FULL", "EXPLICIT"} {
		b.Run(rep, func(b *testing.B) {
			s := benchSketches(b, rep, 1)
			b.ReportAllocs()
			for b.Loop() {
				st, err := s.load("s00000")
				if err != nil || st == nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRecordChecksum: what the checksum adds to encoding and
// decoding one record of each kind, CPU only. Each loop runs a block of
// calls with the checksum and a block of its peer without, alternately,
// so both see the same load on a shared machine; it reports the time of
// each and the overhead. Peers: encode is appendRecord against the same
// record without its checksum (the header and the body's encoding);
// decode is decodeEntry against decodeBody on the same bytes (the decode
// without the check).
//
//	go test -run '^$' -bench RecordChecksum -count 6 ./internal/store/bolt
func BenchmarkRecordChecksum(b *testing.B) {
	for _, sr := range storedRecords(b) {
		st, err := decodeEntry(sr.key, sr.rec)
		if err != nil {
			b.Fatal(err)
		}
		body := sr.rec[recordHeaderLen : len(sr.rec)-recordCRCLen]
		buf := make([]byte, 0, 2*len(sr.rec))
		b.Run("kind="+sr.what+"/op=encode", func(b *testing.B) {
			alternate(b, func() {
				buf = appendRecord(buf[:0], sr.key, st)
			}, func() {
				buf = append(buf[:0], sr.rec[:recordHeaderLen]...)
				if st.def != nil {
					buf = appendDef(buf, st.def)
				} else {
					buf = st.sk.AppendBinary(buf)
				}
			})
		})
		b.Run("kind="+sr.what+"/op=decode", func(b *testing.B) {
			alternate(b, func() {
				if _, err := decodeEntry(sr.key, sr.rec); err != nil {
					b.Fatal(err)
				}
			}, func() {
				if _, err := decodeBody(sr.key, sr.rec, body); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// alternate times with and without in alternating blocks and reports
// each one's ns per call and with's overhead over without.
func alternate(b *testing.B, with, without func()) {
	const block = 20
	var tWith, tWithout time.Duration
	calls := 0
	for b.Loop() {
		t0 := time.Now()
		for range block {
			with()
		}
		t1 := time.Now()
		for range block {
			without()
		}
		tWithout += time.Since(t1)
		tWith += t1.Sub(t0)
		calls += block
	}
	b.ReportMetric(float64(tWith.Nanoseconds())/float64(calls), "ns/checksummed")
	b.ReportMetric(float64(tWithout.Nanoseconds())/float64(calls), "ns/without")
	b.ReportMetric(100*(float64(tWith)/float64(tWithout)-1), "%overhead")
}
