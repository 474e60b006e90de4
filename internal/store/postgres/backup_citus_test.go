package postgres_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sketchd/sketchd/internal/archive"
	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/internal/store/postgres"
)

// TestCitusBackupIsOneMoment: writers send events that each add one id
// to two sketches on different workers (a two-phase commit), while
// backups are taken back to back. Each worker's rows come from that
// worker's snapshot; unless the snapshots are taken at one moment, an
// event committed between them is in one sketch and not the other. In
// every archive the two sketches (EXPLICIT HLLs: exact) hold as many
// ids.
func TestCitusBackupIsOneMoment(t *testing.T) {
	t.Parallel()
	db, dsn := openCitus(t, postgres.Options{})
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var pair []string
	for i := 0; len(pair) < 2; i++ {
		n := fmt.Sprintf("m%02d", i)
		if len(pair) == 0 || workerOf(t, conn, n) != workerOf(t, conn, pair[0]) {
			pair = append(pair, n)
		}
	}
	for _, n := range pair {
		if _, _, err := db.Create(ctx, n, hllSpec(16)); err != nil {
			t.Fatal(err)
		}
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var acked atomic.Int64
	for w := range 4 {
		wg.Go(func() {
			for i := int64(w); i < 4000 && !stop.Load(); i += 4 {
				if _, err := db.AddEvents(ctx, []sketch.Event{{ID: cms.IntID(i), Sketches: pair}}, false); err != nil {
					t.Error(err)
					return
				}
				acked.Add(1)
			}
		})
	}
	defer func() { stop.Store(true); wg.Wait() }()
	// At least 30 backups, and on until 300 events were acknowledged
	// while they ran (at most 1,000 backups).
	for round := 0; round < 30 || acked.Load() < 300 && round < 1000; round++ {
		var buf bytes.Buffer
		w, err := archive.NewWriter(&buf, archive.Header{})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Backup(ctx, w); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		r, err := archive.NewReader(&buf)
		if err != nil {
			t.Fatal(err)
		}
		counts := map[string]float64{}
		for {
			rec, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if rec.Sketch == nil {
				continue
			}
			k, err := sketch.Lookup(sketch.Type(rec.Sketch.Kind))
			if err != nil {
				t.Fatal(err)
			}
			sk, err := k.Decode(rec.Sketch.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			var in sketch.Info
			sk.Describe(&in)
			if in.Representation != "EXPLICIT" && in.Representation != "EMPTY" {
				t.Fatalf("%s is %s; the test needs exact counts", rec.Sketch.Name, in.Representation)
			}
			counts[rec.Sketch.Name] = in.Cardinality
		}
		if a, b := counts[pair[0]], counts[pair[1]]; a != b {
			t.Fatalf("backup %d: %s holds %v ids, %s %v: the workers were read at two moments", round, pair[0], a, pair[1], b)
		}
	}
	if acked.Load() < 300 {
		t.Errorf("only %d events were acknowledged during the backups; the test proves little", acked.Load())
	}
}
