package postgres_test

import (
	"testing"

	"github.com/sketchd/sketchd/internal/store/postgres"
	"github.com/sketchd/sketchd/internal/store/postgres/pgstoretest"
	"github.com/sketchd/sketchd/internal/store/storetest"
)

func TestConformance(t *testing.T) { storetest.Run(t, pgstoretest.Backend(postgres.Options{})) }

// Both halves of the contract, checked when the tests build: a backend
// that lost a series method would only be skipped by the series tests.
var (
	_ storetest.Store       = (*postgres.DB)(nil)
	_ storetest.SeriesStore = (*postgres.DB)(nil)
)
