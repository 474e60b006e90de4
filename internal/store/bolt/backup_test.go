package bolt

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/sketchd/sketchd/internal/archive"
	"github.com/sketchd/sketchd/internal/sketch"
)

// TestBackupRefusesDamagedValue: a stored record that fails its checksum
// fails the backup with a Damaged error naming it; it is never archived.
func TestBackupRefusesDamagedValue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sketchd.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, n := range []string{"a", "victim", "z"} {
		if _, _, err := s.Create(ctx, n, hllSpec(11)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	bdb, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = bdb.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketSketches)
		v := append([]byte(nil), b.Get([]byte("victim"))...)
		v[len(v)-6] ^= 1
		return b.Put([]byte("victim"), v)
	})
	bdb.Close()
	if err != nil {
		t.Fatal(err)
	}
	// Not reopen: its cleanup checks the file, which is damaged on purpose.
	if s, err = Open(path, Options{}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w, _ := archive.NewWriter(io.Discard, archive.Header{})
	err = s.Backup(ctx, w)
	if !errors.Is(err, errChecksum) || sketch.KindOf(err) != sketch.Damaged || !strings.Contains(err.Error(), `"victim"`) {
		t.Fatalf("backup over a damaged record: %v, want a Damaged checksum error naming it", err)
	}
	if w.Counts().Sketches != 1 {
		t.Errorf("archived %d sketches before the damaged one, want 1 (a)", w.Counts().Sketches)
	}
}
