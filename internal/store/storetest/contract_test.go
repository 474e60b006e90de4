package storetest_test

import (
	"github.com/sketchd/sketchd/internal/server"
	"github.com/sketchd/sketchd/internal/store/storetest"
)

// The suite's Store and the server's are the same method set: each
// converts to the other.
var (
	_ server.Store          = storetest.Store(nil)
	_ storetest.Store       = server.Store(nil)
	_ server.SeriesStore    = storetest.SeriesStore(nil)
	_ storetest.SeriesStore = server.SeriesStore(nil)
	_ server.ExpiryStore    = storetest.ExpiryStore(nil)
	_ storetest.ExpiryStore = server.ExpiryStore(nil)
)
