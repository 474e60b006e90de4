package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/sketchd/sketchd/internal/store/bolt"
	"github.com/sketchd/sketchd/migrations"
)

// TestUpgradeFromV4: testdata/v4 is a store written by a schema-version-4
// sketchd (before checksums; make.sh says how), with writes left in its
// log by a kill -9. The current binary must upgrade it (every stored
// record gains its checksum), replay the old log records, answer every
// read exactly as the old binary did, and leave a file whose every record
// passes its checksum.
func TestUpgradeFromV4(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the real binary")
	}
	var want struct {
		Reads map[string]string `json:"reads"`
		Gone  []string          `json:"gone"`
	}
	b, err := os.ReadFile("testdata/v4/want.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	data := copyTree(t, "testdata/v4/sketchd.db")
	p := startProcess(t, data, "-log-level", "info", "-retention-interval", "1h")
	c := newClient(p.addr)
	for path, hexBody := range want.Reads {
		wantBody, _ := hex.DecodeString(hexBody)
		// The version-4 binary wrote freq downloads in the C++ tuple
		// layout only; the default is Java's now, and ?layout=cpp asks
		// for the old bytes.
		if path == "/v1/sketches/freq/raw" {
			path += "?layout=cpp"
		}
		got := c.must(t, http.StatusOK, "GET", path, "", nil, nil)
		if !bytes.Equal(got, wantBody) {
			t.Errorf("GET %s after the upgrade differs from the version-4 binary's answer:\n got %x\nwant %x", path, got, wantBody)
		}
	}
	for _, path := range want.Gone {
		c.must(t, http.StatusNotFound, "GET", path, "", nil, nil)
	}
	if err := p.terminate(t); err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(data, 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *bbolt.Tx) error {
		if v, _ := migrations.Version(tx); v != migrations.Latest() {
			t.Errorf("schema version %d after the upgrade, want %d", v, migrations.Latest())
		}
		return nil
	})
	db.Close()
	rep, err := bolt.CheckFiles(data)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Clean() {
		t.Errorf("the upgraded store is not clean:\n%s", rep)
	}
	if rep.Records < len(want.Reads) {
		t.Errorf("the check read %d records, want at least %d", rep.Records, len(want.Reads))
	}
}

// The fixture must stay as the old binary wrote it.
func TestV4FixtureIsVersion4(t *testing.T) {
	db, err := bbolt.Open(filepath.Join("testdata", "v4", "sketchd.db"), 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *bbolt.Tx) error {
		if v, _ := migrations.Version(tx); v != 4 {
			t.Errorf("testdata/v4/sketchd.db has schema version %d, want 4", v)
		}
		return nil
	})
}
