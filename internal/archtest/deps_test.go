package archtest

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const mod = "github.com/sketchd/sketchd/"

// dataSketchesGo is the pinned DataSketches Go library (go.mod) that the
// ds_hll engine wraps, with what it brings.
var dataSketchesGo = []string{"github.com/apache/datasketches-go/", "github.com/twmb/murmur3"}

// parquetGo is the pinned Parquet library (go.mod) the server writes a
// listing's Parquet file with (GET /v1/sketches?format=parquet), with
// what it brings: its compression codecs, protobuf and geometry types
// (its variant and geospatial columns), uuid, and x/sys for CPU features.
var parquetGo = []string{"github.com/parquet-go/", "github.com/andybalholm/brotli", "github.com/klauspost/compress", "github.com/pierrec/lz4/", "github.com/google/uuid", "github.com/twpayne/go-geom", "google.golang.org/protobuf", "golang.org/x/sys"}

// engines are the sketch engines below internal/sketch that wrap a
// library, and what every package above them may therefore depend on.
var engines = append([]string{mod + "internal/poison", mod + "internal/dshll", mod + "internal/cpc", mod + "internal/zeta", mod + "internal/airlift", mod + "internal/hllbias"}, dataSketchesGo...)

// above returns allow plus the engines and their libraries.
func above(allow ...string) []string { return append(allow, engines...) }

// rules says, for each package, which non-standard packages its whole
// dependency closure may contain (by prefix), and which standard ones it
// must not.
var rules = map[string]struct {
	allow     []string
	forbidStd []string
}{
	"internal/poison":     {forbidStd: []string{"net/http"}},
	"internal/archive":    {forbidStd: []string{"net/http"}},
	"internal/backup":     {allow: above(mod+"internal/archive", mod+"internal/idem", mod+"internal/series", mod+"internal/sketch", mod+"internal/hll", mod+"internal/theta", mod+"internal/freq", mod+"internal/bloom", mod+"internal/kll", mod+"internal/cms", mod+"internal/murmur", mod+"internal/cpuid", "github.com/spaolacci/murmur3"), forbidStd: []string{"net/http"}},
	"internal/cpuid":      {allow: nil, forbidStd: []string{"net/http"}},
	"internal/murmur":     {allow: []string{mod + "internal/cpuid", "github.com/spaolacci/murmur3"}},
	"internal/hll":        {allow: []string{mod + "internal/murmur", mod + "internal/cpuid", "github.com/spaolacci/murmur3"}, forbidStd: []string{"net/http"}},
	"internal/cms":        {allow: []string{mod + "internal/murmur", mod + "internal/cpuid", "github.com/spaolacci/murmur3"}, forbidStd: []string{"net/http"}},
	"internal/theta":      {allow: []string{mod + "internal/murmur", mod + "internal/cpuid", "github.com/spaolacci/murmur3"}, forbidStd: []string{"net/http"}},
	"internal/freq":       {allow: []string{mod + "internal/theta", mod + "internal/murmur", mod + "internal/cpuid", "github.com/spaolacci/murmur3"}, forbidStd: []string{"net/http"}},
	"internal/bloom":      {forbidStd: []string{"net/http"}},
	"internal/kll":        {forbidStd: []string{"net/http"}},
	"internal/ingest":     {allow: []string{mod + "internal/murmur", mod + "internal/cpuid", "github.com/spaolacci/murmur3"}, forbidStd: []string{"net/http"}},
	"internal/dshll":      {allow: dataSketchesGo, forbidStd: []string{"net/http"}},
	"internal/cpc":        {allow: dataSketchesGo, forbidStd: []string{"net/http"}},
	"internal/hllbias":    {forbidStd: []string{"net/http"}},
	"internal/zeta":       {allow: []string{mod + "internal/hllbias"}, forbidStd: []string{"net/http"}},
	"internal/airlift":    {allow: []string{mod + "internal/hllbias", mod + "internal/murmur", mod + "internal/cpuid", "github.com/spaolacci/murmur3"}, forbidStd: []string{"net/http"}},
	"internal/sketch":     {allow: above(mod+"internal/hll", mod+"internal/theta", mod+"internal/freq", mod+"internal/bloom", mod+"internal/kll", mod+"internal/cms", mod+"internal/murmur", mod+"internal/cpuid", "github.com/spaolacci/murmur3"), forbidStd: []string{"net/http"}},
	"internal/cohort":     {allow: above(mod+"internal/sketch", mod+"internal/hll", mod+"internal/theta", mod+"internal/freq", mod+"internal/bloom", mod+"internal/kll", mod+"internal/cms", mod+"internal/murmur", mod+"internal/cpuid", "github.com/spaolacci/murmur3"), forbidStd: []string{"net/http"}},
	"internal/idem":       {allow: above(mod+"internal/series", mod+"internal/sketch", mod+"internal/hll", mod+"internal/theta", mod+"internal/freq", mod+"internal/bloom", mod+"internal/kll", mod+"internal/cms", mod+"internal/murmur", mod+"internal/cpuid", "github.com/spaolacci/murmur3"), forbidStd: []string{"net/http"}},
	"migrations":          {allow: []string{"go.etcd.io/bbolt", "golang.org/x/sys"}, forbidStd: []string{"net/http"}},
	"internal/store/bolt": {allow: above(mod+"internal/archive", mod+"internal/backup", mod+"internal/idem", mod+"internal/series", mod+"internal/sketch", mod+"internal/hll", mod+"internal/theta", mod+"internal/freq", mod+"internal/bloom", mod+"internal/kll", mod+"internal/cms", mod+"internal/murmur", mod+"internal/cpuid", mod+"migrations", "github.com/spaolacci/murmur3", "go.etcd.io/bbolt", "golang.org/x/sys"), forbidStd: []string{"net/http"}},
	"internal/metrics":    {allow: []string{"github.com/prometheus/", "github.com/beorn7/perks", "github.com/cespare/xxhash", "github.com/munnerz/goautoneg", "go.yaml.in/", "google.golang.org/protobuf", "golang.org/x/sys", "github.com/kylelemons/godebug"}},
	// The public client is for other modules: the standard library only.
	"client": {allow: nil},
	// The console's page is embedded files and a handler: the standard
	// library only.
	"internal/console": {},
	// TLS from PEM files: the standard library only.
	"internal/certs":          {forbidStd: []string{"net/http"}},
	"internal/server":         {allow: append(parquetGo, above(mod+"internal/archive", mod+"internal/console", mod+"internal/cohort", mod+"internal/idem", mod+"internal/series", mod+"internal/sketch", mod+"internal/hll", mod+"internal/theta", mod+"internal/freq", mod+"internal/bloom", mod+"internal/kll", mod+"internal/cms", mod+"internal/ingest", mod+"internal/murmur", mod+"internal/cpuid", "github.com/spaolacci/murmur3", "github.com/go-chi/chi/v5")...)},
	"migrations/postgres":     {forbidStd: []string{"net/http"}},
	"internal/store/postgres": {allow: above(mod+"internal/archive", mod+"internal/backup", mod+"internal/idem", mod+"internal/series", mod+"internal/sketch", mod+"internal/hll", mod+"internal/theta", mod+"internal/freq", mod+"internal/bloom", mod+"internal/kll", mod+"internal/cms", mod+"internal/murmur", mod+"internal/cpuid", mod+"migrations/postgres", "github.com/spaolacci/murmur3", "github.com/jackc/", "golang.org/x/sync", "golang.org/x/text"), forbidStd: []string{"net/http"}},
}

type pkg struct {
	ImportPath string
	Standard   bool
}

// deps lists the dependency closure of the package at path.
func deps(t *testing.T, path string) []pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-json", mod+path).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", path, err)
	}
	var list []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		list = append(list, p)
	}
	return list
}

func TestDependencyRules(t *testing.T) {
	for path, rule := range rules {
		t.Run(path, func(t *testing.T) {
			for _, p := range deps(t, path) {
				if p.ImportPath == mod+path {
					continue
				}
				if p.Standard {
					for _, f := range rule.forbidStd {
						if p.ImportPath == f {
							t.Errorf("%s depends on %s", path, f)
						}
					}
					continue
				}
				ok := false
				for _, a := range rule.allow {
					if strings.HasPrefix(p.ImportPath, a) {
						ok = true
					}
				}
				if !ok {
					t.Errorf("%s depends on %s, which STYLE.md §2 does not allow", path, p.ImportPath)
				}
			}
		})
	}
}

// isBackend reports whether the import path is a store backend.
func isBackend(imp string) bool {
	rest, ok := strings.CutPrefix(imp, mod+"internal/store/")
	return ok && rest != "storetest"
}

// TestOnlyCommandsWire: no internal package imports a command, and only
// commands import a store backend (the server declares the interface it
// needs), besides the backend's own test-support package (bolttest).
func TestOnlyCommandsWire(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, mod+"...").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		importer := strings.TrimPrefix(fields[0], mod)
		for _, imp := range fields[1:] {
			switch {
			case strings.HasPrefix(imp, mod+"cmd/"):
				t.Errorf("%s imports the command %s", importer, imp)
			case isBackend(imp) && !strings.HasPrefix(importer, "cmd/") && !strings.HasPrefix(mod+importer, imp+"/"):
				t.Errorf("%s imports the store backend %s; only commands wire concrete types", importer, imp)
			}
		}
	}
}
