package postgres_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/store/postgres"
	"github.com/sketchd/sketchd/internal/store/postgres/pgstoretest"
	"github.com/sketchd/sketchd/internal/store/storetest"
)

// BenchmarkCitusGroups measures durable adds through one node on Citus
// (SKETCHD_CITUS_DSN) from 8 writers, 10,000 fresh ids a request spread
// over 64 HLLs on every worker, with the committer's groups split by
// worker (each part a one-phase commit on its worker) and kept whole (a
// two-phase commit whenever a group spans workers), in the same run.
//
//	go test -run '^$' -bench CitusGroups -benchtime 200x -count 3 ./internal/store/postgres
func BenchmarkCitusGroups(b *testing.B) {
	const writers, batch, sketches = 8, 10000, 64
	for _, mode := range []string{"split", "whole"} {
		b.Run("groups="+mode, func(b *testing.B) {
			opts := postgres.Options{}
			if mode == "whole" {
				opts = postgres.WholeGroups(opts)
			}
			db, err := postgres.Open(ctx, pgstoretest.CitusSchema(b, b.TempDir()), opts)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			for i := range sketches {
				if _, _, err := db.Create(ctx, fmt.Sprintf("s%02d", i), hllSpec(14)); err != nil {
					b.Fatal(err)
				}
			}
			r := rand.New(rand.NewPCG(9, uint64(b.N)))
			inputs := make([]storetest.Input, b.N)
			for i := range inputs {
				ids := make([]cms.ID, batch)
				for j := range ids {
					ids[j] = cms.IntID(int64(r.Uint64()))
				}
				inputs[i] = storetest.Input{IDs: ids}
			}
			var mu sync.Mutex
			next := 0
			b.ResetTimer()
			var wg sync.WaitGroup
			for range writers {
				wg.Go(func() {
					for {
						mu.Lock()
						i := next
						next++
						mu.Unlock()
						if i >= b.N {
							return
						}
						if _, err := db.Add(ctx, fmt.Sprintf("s%02d", i%sketches), inputs[i], false); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "ids/s")
		})
	}
}
