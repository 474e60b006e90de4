package postgres

import (
	"fmt"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/sketch"
)

// BenchmarkRowChecksum times what the checksum adds where the node reads
// a stored value: decodeRow (the checksum, then the decode) against the
// decode alone (decodeLocked, what a read did before) on the same bytes,
// for a sketch of every registered kind at its defaults with 3,000 ids,
// in alternating blocks of 20 calls so that both see the same load.
// Needs no database.
//
//	go test -run '^$' -bench RowChecksum -benchtime 1s -count 6 ./internal/store/postgres
func BenchmarkRowChecksum(b *testing.B) {
	for _, k := range sketch.Kinds() {
		sk, err := k.Default().New()
		if err != nil {
			b.Fatal(err)
		}
		ids := make([]cms.ID, 3000)
		for i := range ids {
			ids[i] = cms.IntID(int64(i))
		}
		batch, err := k.Prepare(sketch.IDs(ids))
		if err == nil {
			_, err = sk.Apply(batch, nil)
		}
		if err != nil {
			b.Fatal(err)
		}
		name, kind, v := "bench", string(k.Type), sk.AppendBinary(nil)
		sum := checksum(sketchKey(name, kind), v)
		b.Run(fmt.Sprintf("kind=%s-%d/bytes=%d", k.Type, k.Tag, len(v)), func(b *testing.B) {
			alternate(b, func() {
				if _, err := decodeRow(name, kind, v, sum); err != nil {
					b.Fatal(err)
				}
			}, func() {
				if _, _, err := decodeLocked(kind, v, true); err != nil {
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
