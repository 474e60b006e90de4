// Package bolttest gives the embedded backend to the tests that run over
// every backend: storetest's conformance suite and the server's tests.
package bolttest

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/store/bolt"
	"github.com/sketchd/sketchd/internal/store/storetest"
)

// Backend opens a bbolt file in the test's place, with opts, and checks
// the file's consistency after each close.
func Backend(opts bolt.Options) storetest.Backend {
	return storetest.Backend{
		Name: "bolt",
		Open: func(tb testing.TB, place string) (storetest.Store, func() error) {
			tb.Helper()
			path := filepath.Join(place, "sketchd.db")
			db, err := bolt.Open(path, opts)
			if err != nil {
				tb.Fatal(err)
			}
			return db, func() error {
				if err := db.Close(); err != nil {
					return err
				}
				return bolt.Check(path)
			}
		},
		WithClock: func(now func() time.Time) storetest.Backend {
			o := opts
			o.Now = now
			return Backend(o)
		},
	}
}
