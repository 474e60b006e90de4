package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/archive"
	"github.com/sketchd/sketchd/internal/backup"
)

// restorer is what the backends offer a restore.
type restorer interface {
	Restore(ctx context.Context, r *archive.Reader, replace bool, progress func(int64)) (archive.Counts, error)
}

// getBackup takes a backup over HTTP and returns the archive's bytes.
func (e *env) getBackup(tb testing.TB, header ...string) []byte {
	tb.Helper()
	req, err := http.NewRequest(http.MethodGet, e.srv.URL+"/v1/backup", nil)
	if err != nil {
		tb.Fatal(err)
	}
	for _, h := range header {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("reading the backup: %v", err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != ArchiveMediaType {
		tb.Fatalf("backup: %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), clipBody(b))
	}
	return b
}

// restoreInto verifies the archive b and restores it into e's store.
func (e *env) restoreInto(tb testing.TB, b []byte, replace bool) (archive.Counts, error) {
	tb.Helper()
	r, err := archive.NewReader(bytes.NewReader(b))
	if err != nil {
		return archive.Counts{}, err
	}
	if _, err := backup.Verify(r, nil); err != nil {
		return archive.Counts{}, err
	}
	r, _ = archive.NewReader(bytes.NewReader(b))
	rs, ok := e.db.Store.(restorer)
	if !ok {
		tb.Fatalf("%T cannot restore", e.db.Store)
	}
	return rs.Restore(context.Background(), r, replace, nil)
}

// kindFixtures are a sketch of every kind, each with what adds to it.
var kindFixtures = []struct{ name, create, add string }{
	{"k-hll", `{"type":"hll","log2m":11,"metric":true}`, `{"ids":[1,2,3,"a"]}`},
	{"k-hll-full", `{"type":"hll","log2m":10,"expthresh":0,"sparse":false,"expire_after":"P2D"}`, idsJSON(idRange(0, 3000)...)},
	{"k-cms", `{"type":"cms","width":64,"depth":3}`, `{"items":[{"id":2,"count":10},{"id":"b","count":4}]}`},
	{"k-theta", `{"type":"theta","lg_k":10}`, idsJSON(idRange(0, 500)...)},
	{"k-freq", `{"type":"freq","lg_k":9}`, `{"items":[{"id":"x","count":7},{"id":9,"count":2}]}`},
	{"k-kll", `{"type":"kll","k":64}`, `{"values":[5,1.5,-3,9]}`},
	{"k-kll-long", `{"type":"kll","items":"long"}`, `{"values":[5,-3,9223372036854775807]}`},
	{"k-bloom", `{"type":"bloom","bits":640,"hashes":3}`, `{"ids":[1,2,"carol"]}`},
	{"k-cpc", `{"type":"cpc","lg_k":10}`, idsJSON(idRange(0, 700)...)},
	{"k-dshll", `{"type":"ds_hll","tgt_type":"HLL_6"}`, idsJSON(idRange(0, 300)...)},
	{"k-zeta", `{"type":"zeta_hll","precision":12}`, idsJSON(idRange(0, 300)...)},
	{"k-airlift", `{"type":"airlift_hll"}`, idsJSON(idRange(0, 300)...)},
}

// describeFields are what a restored sketch's description must repeat:
// everything but the timestamps.
func describeFields(tb testing.TB, e *env, name string) map[string]any {
	tb.Helper()
	var m map[string]any
	decode(tb, must(tb, e.get(tb, "/v1/sketches/"+name), http.StatusOK, "describe "+name).Body, &m)
	delete(m, "created_at")
	delete(m, "updated_at")
	delete(m, "expires_at")
	return m
}

// TestBackupWhileWriting takes a backup while writers add, and restores
// it into an empty store of the same backend: every kind's bytes and
// description, the series' counts, the metric flag and expiry, and
// every id acknowledged before the backup began are there, and an
// idempotency key is not applied twice after the restore.
func TestBackupWhileWriting(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, k := range kindFixtures {
		e.create(t, k.name, k.create)
		must(t, e.postJSON(t, "/v1/sketches/"+k.name+"/add", k.add), http.StatusOK, "add to "+k.name)
	}
	must(t, e.send(t, http.MethodPut, "/v1/series/s", "application/json", seriesBody), http.StatusCreated, "create series")
	now := time.Now()
	for d := range 5 {
		ts := now.Add(-time.Duration(d) * 24 * time.Hour)
		must(t, e.postJSON(t, "/v1/series/s/add?ts="+rfc(ts), idsJSON(idRange(int64(d*100), int64(d*100+50))...)), http.StatusOK, "series add")
	}
	// A write under an idempotency key that would count twice if applied
	// twice.
	keyed := func(e *env) response {
		return e.send(t, http.MethodPost, "/v1/sketches/k-cms/add", "application/json", `{"items":[{"id":"z","count":5}]}`, "Idempotency-Key: once")
	}
	must(t, keyed(e), http.StatusOK, "keyed add")
	totalBefore := e.describeCMS(t, "k-cms").Total

	e.create(t, "hot", `{"type":"bloom","expected_items":100000,"fpp":0.001}`)
	must(t, e.send(t, http.MethodPut, "/v1/series/live", "application/json", `{"log2m":12,"tz":"UTC","levels":{"day":"P10D"}}`), http.StatusCreated, "create live")
	before := map[string]bool{}
	for _, k := range kindFixtures {
		before[k.name] = true
	}
	want := e.snapshot(t)
	for n := range want {
		if !before[n] {
			delete(want, n)
		}
	}
	descs := map[string]map[string]any{}
	for n := range want {
		descs[n] = describeFields(t, e, n)
	}
	var seriesCount countAnswer
	q := "?from=" + rfc(now.Add(-10*24*time.Hour)) + "&to=" + rfc(now.Add(time.Hour))
	decode(t, must(t, e.get(t, "/v1/series/s/count"+q), http.StatusOK, "count").Body, &seriesCount)

	// Writers: each acknowledged id is noted with when its answer came.
	var mu sync.Mutex
	var acked []int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int64(w); ; i += 2 {
				select {
				case <-stop:
					return
				default:
				}
				r, err := e.try(t, request{Method: http.MethodPost, Path: "/v1/sketches/hot/add", Body: strings.NewReader(idsJSON(i)), Header: []string{"Content-Type: application/json"}})
				if err != nil || r.Status != http.StatusOK {
					t.Errorf("add %d to hot: %v %v", i, r, err)
					return
				}
				r, err = e.try(t, request{Method: http.MethodPost, Path: "/v1/series/live/add", Body: strings.NewReader(idsJSON(i)), Header: []string{"Content-Type: application/json"}})
				if err != nil || r.Status != http.StatusOK {
					t.Errorf("add %d to live: %v %v", i, r, err)
					return
				}
				mu.Lock()
				acked = append(acked, i)
				mu.Unlock()
			}
		}()
	}
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 40 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	ackedBefore := append([]int64(nil), acked...)
	mu.Unlock()
	b := e.getBackup(t)
	close(stop)
	wg.Wait()

	e2 := newEnv(t)
	counts, err := e2.restoreInto(t, b, false)
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	if counts.Sketches != uint64(len(kindFixtures))+1 || counts.Series != 2 || counts.Keys != 1 {
		t.Errorf("restored %+v, want %d sketches, 2 series and 1 key", counts, len(kindFixtures)+1)
	}

	got := e2.snapshot(t)
	delete(got, "hot")
	if d := want.diff(got); len(d) > 0 {
		t.Errorf("restored sketches differ from the backed-up ones:\n%s", strings.Join(d, "\n"))
	}
	for n, d := range descs {
		if g := describeFields(t, e2, n); fmt.Sprint(g) != fmt.Sprint(d) {
			t.Errorf("%s restored describes as\n%v\nwant\n%v", n, g, d)
		}
	}
	var c2 countAnswer
	decode(t, must(t, e2.get(t, "/v1/series/s/count"+q), http.StatusOK, "count").Body, &c2)
	if c2.Cardinality != seriesCount.Cardinality || c2.Cardinality == 0 {
		t.Errorf("series count after restore %v, want %v", c2.Cardinality, seriesCount.Cardinality)
	}

	// Every id acknowledged before the backup began is in hot (a bloom
	// filter has no false negatives) and in the series.
	var c checkAnswer
	decode(t, must(t, e2.postJSON(t, "/v1/sketches/hot/check", idsJSON(ackedBefore...)), http.StatusOK, "check").Body, &c)
	if c.Present != len(ackedBefore) {
		for _, r := range c.Results {
			if !r.Present {
				t.Errorf("id %v was acknowledged before the backup began but the restored store lacks it", r.ID)
			}
		}
	}
	var live countAnswer
	decode(t, must(t, e2.get(t, "/v1/series/live/count?from="+rfc(now.Add(-24*time.Hour))+"&to="+rfc(time.Now().Add(24*time.Hour))), http.StatusOK, "live count").Body, &live)
	if live.Cardinality < float64(len(ackedBefore)) {
		t.Errorf("series live counts %v after restore, but %d distinct ids were acknowledged before the backup", live.Cardinality, len(ackedBefore))
	}

	// The key survived: a retry replays, and counts nothing again.
	r := must(t, keyed(e2), http.StatusOK, "retry after restore")
	if r.Header.Get(headerReplayed) != "true" {
		t.Errorf("a retried key after restore was not replayed: %v", r.Header)
	}
	if got := e2.describeCMS(t, "k-cms").Total; got != totalBefore {
		t.Errorf("k-cms total after the retry = %d, want %d (the keyed add applied twice)", got, totalBefore)
	}
}

// TestRestoreRefusesNonEmpty: a store holding a sketch is not restored
// into unless replace is asked for; then it holds exactly the archive.
func TestRestoreRefusesNonEmpty(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create(t, "a", `{"type":"hll"}`)
	e.addIDs(t, "a", `{"ids":[1,2,3]}`, 3)
	b := e.getBackup(t)

	e2 := newEnv(t)
	e2.create(t, "other", `{"type":"cms"}`)
	_, err := e2.restoreInto(t, b, false)
	if err == nil || !strings.Contains(err.Error(), "not empty") || !strings.Contains(err.Error(), "-replace") {
		t.Fatalf("restore into a non-empty store: %v, want a refusal naming -replace", err)
	}
	must(t, e2.get(t, "/v1/sketches/other"), http.StatusOK, "other still there")
	checkProblem(t, e2.get(t, "/v1/sketches/a"), http.StatusNotFound)

	if _, err := e2.restoreInto(t, b, true); err != nil {
		t.Fatalf("restore with replace: %v", err)
	}
	checkProblem(t, e2.get(t, "/v1/sketches/other"), http.StatusNotFound)
	if !bytes.Equal(e2.raw(t, "a"), e.raw(t, "a")) {
		t.Errorf("a after replace differs")
	}
}

// TestRestoreDamagedChangesNothing: an archive with a byte flipped in
// its last record is refused by the restore itself (without the verify
// pass), and the target keeps what it held.
func TestRestoreDamagedChangesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, n := range []string{"a", "b", "c"} {
		e.create(t, n, `{"type":"hll"}`)
		e.addIDs(t, n, `{"ids":[1,2,3]}`, 3)
	}
	b := e.getBackup(t)
	d := bytes.Clone(b)
	d[len(d)-40] ^= 1 // in the trailer's counts: only the digest catches it

	e2 := newEnv(t)
	r, err := archive.NewReader(bytes.NewReader(d))
	if err != nil {
		t.Fatal(err)
	}
	_, err = e2.db.Store.(restorer).Restore(context.Background(), r, false, nil)
	var ae *archive.Error
	if !errors.As(err, &ae) {
		t.Fatalf("restore of a damaged archive: %v, want an archive error", err)
	}
	checkProblem(t, e2.get(t, "/v1/sketches/a"), http.StatusNotFound)
	e2.create(t, "x", `{"type":"hll"}`) // the store still works
}

// TestBackupNeedsAdmin: a read or write token is refused 403, an admin
// token gets the archive.
func TestBackupNeedsAdmin(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte("reader-token-0000 read\nwriter-token-0000 write\nadmin-token-00000 admin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := LoadAuth(path)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, withAuth(a))
	for _, tok := range []string{"reader-token-0000", "writer-token-0000"} {
		p := checkProblem(t, e.get(t, "/v1/backup", "Authorization: Bearer "+tok), http.StatusForbidden)
		if !strings.Contains(p.Detail, "admin") {
			t.Errorf("%s: %+v", tok, p)
		}
	}
	checkProblem(t, e.get(t, "/v1/backup"), http.StatusUnauthorized)
	b := e.getBackup(t, "Authorization: Bearer admin-token-00000")
	r, err := archive.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if c, err := backup.Verify(r, nil); err != nil || c.Total() != 0 {
		t.Fatalf("empty store's archive: %+v, %v", c, err)
	}
}

// TestBackupHead: HEAD answers a GET's headers without taking a backup.
func TestBackupHead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	req, _ := http.NewRequest(http.MethodHead, e.srv.URL+"/v1/backup", nil)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != ArchiveMediaType {
		t.Fatalf("HEAD /v1/backup: %d %v", resp.StatusCode, resp.Header)
	}
}

// TestBackupIsOneMoment: writers send events that add one id to a sketch
// and to a series in one atomic write, while a backup is taken. The
// sketch is read before the series' buckets, so a backup that read them
// at two moments would hold more ids in the series than in the sketch;
// restored, the two count the same (both EXPLICIT HLLs: exact counts).
func TestBackupIsOneMoment(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create(t, "pair", `{"type":"hll","log2m":16,"regwidth":5}`)
	must(t, e.send(t, http.MethodPut, "/v1/series/pair", "application/json", `{"log2m":16,"regwidth":5,"tz":"UTC","levels":{"day":"P10D"}}`), http.StatusCreated, "create series")
	var mu sync.Mutex
	acked := 0
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int64(w); i < 4000; i += 4 {
				select {
				case <-stop:
					return
				default:
				}
				body := fmt.Sprintf(`{"events":[{"id":%d,"sketches":["pair"],"series":["pair"]}]}`, i)
				r, err := e.try(t, request{Method: http.MethodPost, Path: "/v1/events", Body: strings.NewReader(body), Header: []string{"Content-Type: application/json"}})
				if err != nil || r.Status != http.StatusOK {
					t.Errorf("event %d: %v %v", i, r, err)
					return
				}
				mu.Lock()
				acked++
				mu.Unlock()
			}
		}()
	}
	for {
		mu.Lock()
		n := acked
		mu.Unlock()
		if n >= 200 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	b := e.getBackup(t)
	close(stop)
	wg.Wait()

	e2 := newEnv(t)
	if _, err := e2.restoreInto(t, b, false); err != nil {
		t.Fatal(err)
	}
	var d struct {
		Cardinality    float64
		Representation string
	}
	decode(t, must(t, e2.get(t, "/v1/sketches/pair"), http.StatusOK, "describe").Body, &d)
	var c countAnswer
	now := time.Now()
	decode(t, must(t, e2.get(t, "/v1/series/pair/count?from="+rfc(now.Add(-48*time.Hour))+"&to="+rfc(now.Add(48*time.Hour))), http.StatusOK, "count").Body, &c)
	if d.Representation != "EXPLICIT" {
		t.Fatalf("the sketch is %s; the test needs exact counts", d.Representation)
	}
	if d.Cardinality != c.Cardinality || d.Cardinality < 200 {
		t.Errorf("restored sketch counts %v, the series %v: the backup read them at two moments", d.Cardinality, c.Cardinality)
	}
}
