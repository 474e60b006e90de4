package bolt_test

import (
	"testing"

	"github.com/sketchd/sketchd/internal/store/bolt"
	"github.com/sketchd/sketchd/internal/store/bolt/bolttest"
	"github.com/sketchd/sketchd/internal/store/storetest"
)

func TestConformance(t *testing.T) { storetest.Run(t, bolttest.Backend(bolt.Options{})) }

// Both halves of the contract, checked when the tests build: a backend
// that lost a series method would only be skipped by the series tests.
var (
	_ storetest.Store       = (*bolt.DB)(nil)
	_ storetest.SeriesStore = (*bolt.DB)(nil)
)
