package bolt_test

import (
	"testing"

	"github.com/sketchd/sketchd/internal/store/bolt"
	"github.com/sketchd/sketchd/internal/store/bolt/bolttest"
	"github.com/sketchd/sketchd/internal/store/storetest"
)

func TestConformance(t *testing.T) { storetest.Run(t, bolttest.Backend(bolt.Options{})) }
