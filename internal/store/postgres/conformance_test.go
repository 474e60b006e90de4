package postgres_test

import (
	"testing"

	"github.com/sketchd/sketchd/internal/store/postgres"
	"github.com/sketchd/sketchd/internal/store/postgres/pgstoretest"
	"github.com/sketchd/sketchd/internal/store/storetest"
)

func TestConformance(t *testing.T) { storetest.Run(t, pgstoretest.Backend(postgres.Options{})) }
