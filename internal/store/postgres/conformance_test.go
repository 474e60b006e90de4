package postgres_test

import (
	"testing"

	"github.com/sketchd/sketchd/internal/store/postgres"
	"github.com/sketchd/sketchd/internal/store/postgres/pgstoretest"
	"github.com/sketchd/sketchd/internal/store/storetest"
)

func TestConformance(t *testing.T) { storetest.Run(t, pgstoretest.Backend(postgres.Options{})) }

// TestConformanceCitus runs the suite on a Citus coordinator with
// workers (SKETCHD_CITUS_DSN), where the migrations distribute the tables.
func TestConformanceCitus(t *testing.T) { storetest.Run(t, pgstoretest.Citus(postgres.Options{})) }
