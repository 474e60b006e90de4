package main

import (
	"testing"

	"github.com/sketchd/sketchd/internal/pgtest"
)

// The end-to-end tests mostly wait on sketchd processes, databases and
// clusters: up to six at once.
func TestMain(m *testing.M) { pgtest.Main(m, 6) }
