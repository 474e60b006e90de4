package server

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"testing"

	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/sketch"
)

// switchedRanker is a store whose JointRanker can be turned off, so one
// test compares a rank computed on the database with the node's own.
type switchedRanker struct {
	Store
	onNode atomic.Bool
}

func (s *switchedRanker) EachPrefixJoint(ctx context.Context, prefix, exclude string, limit int, target *hll.Sketch,
	fn func(string, *sketch.Joint, sketch.Sketch) error) (int, bool, error) {
	jr, ok := s.Store.(JointRanker)
	if !ok || s.onNode.Load() {
		return 0, false, nil
	}
	return jr.EachPrefixJoint(ctx, prefix, exclude, limit, target, fn)
}

// TestRankOnDatabase checks a rank whose candidates are compared on the
// database (PostgreSQL or Citus with the sketchd_hll extension) against
// the same rank read on the node: byte-identical answers, by every
// measure, with candidates the database's tables answer and others it
// sends whole (sketches too small to be FULL, another precision, an
// EXPLICIT one). It runs over a backend that ranks on the database:
// SKETCHD_TEST_BACKEND=postgres or citus with the extension installed
// (SKETCHD_REQUIRE_PGEXT=1 makes its absence a failure).
func TestRankOnDatabase(t *testing.T) {
	t.Parallel()
	var sw *switchedRanker
	e := newEnv(t, withStore(func(s Store) Store { sw = &switchedRanker{Store: s}; return sw }))
	rd, ok := sw.Store.(interface{ RanksOnDatabase() bool })
	if !ok || !rd.RanksOnDatabase() {
		msg := "the backend does not rank on the database: run with SKETCHD_TEST_BACKEND=postgres or citus, with the sketchd_hll extension installed (make -C pg/sketchd_hll install; docs/postgres.md)"
		if ok && os.Getenv("SKETCHD_REQUIRE_PGEXT") == "1" {
			t.Fatal("SKETCHD_REQUIRE_PGEXT=1 but " + msg)
		}
		t.Skip(msg)
	}
	buildRankSet(t, e, `{"type":"hll","log2m":14}`, 30000, 60, 3)
	e.create(t, "c:folded", `{"type":"hll","log2m":12}`)
	must(t, e.send(t, http.MethodPost, "/v1/sketches/c:folded/add", "application/octet-stream", octetIDs(idRange(0, 20000)...)), http.StatusOK, "add c:folded")
	e.create(t, "c:few", `{"type":"hll","log2m":14}`)
	must(t, e.send(t, http.MethodPost, "/v1/sketches/c:few/add", "application/octet-stream", octetIDs(idRange(100, 140)...)), http.StatusOK, "add c:few")
	// The database answers with a table exactly the FULL candidates at
	// the target's precision.
	full := 0
	for i := range 60 {
		var d struct{ Representation string }
		decode(t, must(t, e.get(t, fmt.Sprintf("/v1/sketches/c:%03d", i)), http.StatusOK, "describe").Body, &d)
		if d.Representation == "FULL" {
			full++
		}
	}
	if full < 10 || full > 50 {
		t.Fatalf("%d of the 60 candidates are FULL; the set no longer mixes FULL and smaller sketches", full)
	}
	for _, m := range []string{
		`"by":"intersection"`, `"by":"jaccard"`,
		`"by":"containment","direction":"target_in_candidate"`, `"by":"containment","direction":"candidate_in_target"`,
	} {
		body := fmt.Sprintf(`{"target":"t","candidates":{"prefix":"c:"},%s,"top":20}`, m)
		before := e.s.rankedOnDatabase.Load()
		onDB := must(t, e.postJSON(t, "/v1/rank", body), http.StatusOK, "rank on the database").Body
		compared := e.s.rankedOnDatabase.Load() - before
		sw.onNode.Store(true)
		onNode := must(t, e.postJSON(t, "/v1/rank", body), http.StatusOK, "rank on the node").Body
		sw.onNode.Store(false)
		if compared != int64(full) {
			t.Errorf("%s: %d candidates compared by the database's tables, want the %d FULL ones", m, compared, full)
		}
		if e.s.rankedOnDatabase.Load() != before+compared {
			t.Errorf("%s: the rank on the node used the database's tables", m)
		}
		if !bytes.Equal(onDB, onNode) {
			t.Errorf("%s: on the database\n%s\non the node\n%s", m, onDB, onNode)
		}
	}
}
