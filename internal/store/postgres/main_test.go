package postgres_test

import (
	"testing"

	"github.com/sketchd/sketchd/internal/pgtest"
)

// The tests mostly wait on PostgreSQL and Citus: up to six at once.
func TestMain(m *testing.M) { pgtest.Main(m, 6) }
