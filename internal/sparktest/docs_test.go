package sparktest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docBlock is a fenced block of docs/formats.md, under the kind whose
// section it is in ("**theta**, …"; "parquet" in the section on the
// Parquet listing), with the engine its label (the first line of the
// paragraph above it, after the kind) names: spark for "Spark…" or
// "PySpark…", python, java or psql for "Python…", "Java…" or
// "PostgreSQL…", and none for a label that says "not run by CI".
type docBlock struct {
	line   int
	kind   string
	engine string
	label  string
	lang   string
	text   string
}

// sparkFunctions are what marks a block as Spark's: a block that uses
// one must be labelled as Spark's, so that none goes unrun.
var sparkFunctions = regexp.MustCompile(`hll_sketch_|theta_sketch_|tuple_sketch_|kll_sketch_|binaryFile|spark\.`)

// docEngines are the label starts that name an engine the tests run,
// and the languages of its blocks.
var docEngines = []struct{ prefix, engine, langs string }{
	{"Spark", "spark", "sql python"},
	{"PySpark", "spark", "python"},
	{"Python", "python", "python"},
	{"Java", "java", "java"},
	{"PostgreSQL", "psql", "sql"},
}

// docBlocks parses the fenced blocks of a Markdown file. A block whose
// label names no engine and does not say "not run by CI", or names one
// in a language it does not run, fails tb: every block is run or marked.
func docBlocks(tb testing.TB, md string) []docBlock {
	tb.Helper()
	var out []docBlock
	kindLine := regexp.MustCompile(`^\*\*([a-z_]+)\*\*(, )?`)
	// label is the first line of the paragraph above.
	kind, label, blank := "", "", true
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "## ") {
			kind = ""
			if strings.Contains(l, "Parquet") {
				kind = "parquet"
			}
		}
		lang, isFence := strings.CutPrefix(l, "```")
		if !isFence {
			if strings.TrimSpace(l) == "" {
				blank = true
			} else if blank {
				label, blank = l, false
				if m := kindLine.FindStringSubmatch(l); m != nil {
					kind = m[1]
					label = strings.TrimPrefix(l, m[0])
				}
			}
			continue
		}
		start := i + 1
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, lines[i])
		}
		b := docBlock{line: start, kind: kind, label: label, lang: lang, text: strings.Join(body, "\n")}
		for _, e := range docEngines {
			if strings.HasPrefix(label, e.prefix) {
				b.engine = e.engine
				if !slices.Contains(strings.Fields(e.langs), lang) {
					tb.Errorf("line %d: a %s block in %q, which the test does not run", start, e.prefix, lang)
				}
				break
			}
		}
		switch {
		case b.engine == "" && strings.Contains(label, "not run by CI"):
			b.engine = "none"
		case b.engine == "":
			tb.Errorf("line %d: a block whose label %q names no engine the test runs (Spark SQL, PySpark, Python, Java, PostgreSQL) and does not say \"not run by CI\"", start, label)
		case b.engine != "spark" && sparkFunctions.MatchString(b.text):
			tb.Errorf("line %d: a block using Spark's functions, not labelled as Spark's (a paragraph \"Spark SQL …:\" above it), so not run", start)
		}
		if b.engine != "none" && kind == "" {
			tb.Errorf("line %d: a %s block outside any kind's section", start, b.engine)
		}
		out = append(out, b)
		label, blank = "", true
	}
	return out
}

// statements splits a SQL block into its statements (each ends with ";"
// at the end of a line), dropping "--" comment lines.
func statements(text string) []string {
	var out []string
	var cur []string
	for _, l := range strings.Split(text, "\n") {
		if t := strings.TrimSpace(l); t == "" || strings.HasPrefix(t, "--") {
			continue
		}
		cur = append(cur, l)
		if strings.HasSuffix(strings.TrimSpace(l), ";") {
			st := strings.TrimSuffix(strings.TrimSpace(strings.Join(cur, "\n")), ";")
			out = append(out, st)
			cur = nil
		}
	}
	if len(cur) > 0 {
		out = append(out, strings.Join(cur, "\n"))
	}
	return out
}

// docData is what a kind's Spark lines run on: a sketch in sketchd and
// Spark's own sketch of the same data, small enough that neither side's
// answer is an estimate (so the two must agree exactly), and the events
// table the lines merge with.
type docData struct {
	create obj
	add    obj
	// spark is the aggregate building Spark's own sketch from range's id.
	spark string
	// binQuery is the query of the binary download (theta: the
	// compressed form, so that both forms are run).
	binQuery string
	// n is how many ids or values the sketch holds: Spark's sketch is
	// of range(0, n).
	n int64
	// events is the events table's rows: range(lo, hi).
	lo, hi int64
}

func docDataFor(kind, text string) (docData, bool) {
	switch {
	case kind == "hll":
		// sketchd's defaults, which the PostgreSQL line's hll_add_agg
		// gives.
		return docData{create: obj{"type": "hll"}, add: obj{"ids": ids(0, 1000, false)}, n: 1000, lo: 500, hi: 1500}, true
	case kind == "cpc" || kind == "zeta_hll" || kind == "airlift_hll":
		return docData{create: obj{"type": kind}, add: obj{"ids": ids(0, 1000, false)}, n: 1000, lo: 500, hi: 1500}, true
	case kind == "ds_hll":
		// lg_k 14, so that a union with Spark's sketches (lg_k 12) needs
		// the allowDifferentLgConfigK the lines give.
		return docData{obj{"type": "ds_hll", "lg_k": 14, "tgt_type": "HLL_4"}, obj{"ids": ids(0, 1000, false)}, "hll_sketch_agg(id, 14)", "", 1000, 500, 1500}, true
	case kind == "theta":
		return docData{obj{"type": "theta"}, obj{"ids": ids(0, 1000, false)}, "theta_sketch_agg(id)", "?compressed=true", 1000, 500, 1500}, true
	case kind == "freq":
		return docData{obj{"type": "freq"}, freqItems(0, 1000, 5), "tuple_sketch_agg_integer(id, CAST(id % 5 + 1 AS INT))", "", 1000, 500, 1500}, true
	case kind == "kll" && strings.Contains(text, "_bigint"):
		var vals []any
		for i := int64(0); i < 100; i++ {
			vals = append(vals, i*7-300)
		}
		return docData{obj{"type": "kll", "items": "long"}, obj{"values": vals}, "kll_sketch_agg_bigint(id * 7 - 300)", "", 100, 0, 100}, true
	case kind == "kll":
		var vals []any
		for i := int64(0); i < 100; i++ {
			vals = append(vals, float64(i)*5)
		}
		return docData{obj{"type": "kll"}, obj{"values": vals}, "kll_sketch_agg_double(CAST(id AS DOUBLE) * 5D)", "", 100, 0, 100}, true
	}
	return docData{}, false
}

// TestDocsSparkLines runs every Spark line of docs/formats.md as a reader
// would, once with sketchd's downloads ($hex: the ?format=hex download
// with its \x cut off, as the file says; sketch.bin: the binary download)
// and once with Spark's own sketch of the same data in their place. Each
// statement must answer, with no NULL, and the same both times.
func TestDocsSparkLines(t *testing.T) {
	md, err := os.ReadFile("../../docs/formats.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []docBlock
	for _, b := range docBlocks(t, string(md)) {
		if b.engine == "spark" && b.kind != "parquet" {
			blocks = append(blocks, b)
		}
	}
	seen := map[string]bool{}
	for _, b := range blocks {
		seen[b.kind+" "+b.lang] = true
		if b.kind == "kll" && strings.Contains(b.text, "_bigint") {
			seen["kll longs"] = true
		}
	}
	for _, want := range []string{"ds_hll sql", "ds_hll python", "theta sql", "theta python", "freq sql", "freq python", "kll sql", "kll python", "kll longs"} {
		if !seen[want] {
			t.Errorf("docs/formats.md shows no Spark %s lines", want)
		}
	}
	s := spark.Get(t)
	d := newSketchd(t)
	for _, b := range blocks {
		t.Run(fmt.Sprintf("formats.md:%d", b.line), func(t *testing.T) {
			data, ok := docDataFor(b.kind, b.text)
			if !ok {
				t.Fatalf("Spark lines for %s, which the test has no data for", b.kind)
			}
			name := fmt.Sprintf("doc%d", b.line)
			d.create(t, name, data.create)
			d.add(t, name, data.add)
			hexDownload := string(d.raw(t, name, "?format=hex"))
			if !strings.HasPrefix(hexDownload, `\x`) {
				t.Fatalf("the hex download begins %.8q, not \\x", hexDownload)
			}
			// cut -c3-, as formats.md says.
			ours := substitution{hex: hexDownload[2:], file: writeFile(t, "sketchd", d.raw(t, name, data.binQuery))}
			own := s.One(t, fmt.Sprintf("SELECT %s FROM range(0, %d, 1, 1)", data.spark, data.n), nil).Bytes(t, 0)
			ref := substitution{hex: fmt.Sprintf("%x", own), file: writeFile(t, "spark", own)}
			s.MustQuery(t, fmt.Sprintf(`CREATE OR REPLACE TEMP VIEW events AS
				SELECT id AS user_id, CAST(id %% 3 + 1 AS INT) AS impressions,
				       CAST(id AS DOUBLE) * 3.5D AS latency_ms, id * 11 - 40 AS bytes_sent
				FROM range(%d, %d, 1, 1)`, data.lo, data.hi), nil)
			switch b.lang {
			case "sql":
				for _, st := range statements(b.text) {
					got, err := s.Query(ours.apply(st), nil)
					if err != nil {
						t.Errorf("%s\nwith sketchd's download: %v", st, err)
						continue
					}
					want := s.MustQuery(t, ref.apply(st), nil)
					if len(got) == 0 || hasNull(got) {
						t.Errorf("%s\nwith sketchd's download answers %v", st, got)
					}
					if !reflect.DeepEqual(got, want) {
						t.Errorf("%s\nwith sketchd's download answers %v, with Spark's own sketch of the same data %v", st, got, want)
					}
				}
			case "python":
				v, printed, err := s.Python(ours.apply(b.text))
				if err != nil {
					t.Fatalf("%s\nwith sketchd's download: %v", b.text, err)
				}
				wv, wprinted, err := s.Python(ref.apply(b.text))
				if err != nil {
					t.Fatalf("%s\nwith Spark's own sketch: %v", b.text, err)
				}
				if strings.TrimSpace(printed) == "" || strings.Contains(printed, "NULL") {
					t.Errorf("%s\nwith sketchd's download prints %q", b.text, printed)
				}
				if printed != wprinted || !reflect.DeepEqual(v, wv) {
					t.Errorf("%s\nwith sketchd's download prints\n%s\nwith Spark's own sketch of the same data\n%s", b.text, printed, wprinted)
				}
			}
		})
	}
}

// substitution is what a doc line's placeholders stand for.
type substitution struct{ hex, file string }

func (sub substitution) apply(s string) string {
	s = strings.ReplaceAll(s, "$hex", sub.hex)
	return strings.ReplaceAll(s, "sketch.bin", sub.file)
}

// writeFile writes b as sketch.bin in a fresh directory named dir.
func writeFile(tb testing.TB, dir string, b []byte) string {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), dir, "sketch.bin")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		tb.Fatal(err)
	}
	return p
}

// hasNull reports whether any value of the rows is NULL.
func hasNull(rows []Row) bool {
	var null func(v any) bool
	null = func(v any) bool {
		switch v := v.(type) {
		case nil:
			return true
		case []any:
			for _, x := range v {
				if null(x) {
					return true
				}
			}
		}
		return false
	}
	for _, r := range rows {
		for _, v := range r {
			if null(v) {
				return true
			}
		}
	}
	return false
}

// TestReadmeSparkLine runs the README's example that downloads a ds_hll
// sketch for Spark, with curl against a live sketchd, and the Spark
// statement its comment gives, with what the command printed in place of
// "…": Spark must answer sketchd's estimate (a download pasted with its
// \x would answer NULL).
func TestReadmeSparkLine(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	sparkLine := regexp.MustCompile(`^(.*?)#.*\bthen in Spark[^:]*:\s*(.+)$`)
	var block []string
	var cmdIdx int
	var stmt string
	lines := strings.Split(string(raw), "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```sh" {
			continue
		}
		var body []string
		found := -1
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			if m := sparkLine.FindStringSubmatch(lines[i]); m != nil {
				if found >= 0 {
					t.Fatalf("README.md:%d: a second Spark line in one block", i+1)
				}
				found, stmt = len(body), m[2]
				body = append(body, m[1])
				continue
			}
			body = append(body, lines[i])
		}
		if found >= 0 {
			if block != nil {
				t.Fatal("README.md has more than one block with a Spark line; the test runs one")
			}
			block, cmdIdx = body, found
		}
	}
	if block == nil {
		t.Fatal("README.md has no command whose comment says \"then in Spark\"")
	}
	curl, err := exec.LookPath("curl")
	if err != nil {
		if os.Getenv("SKETCHD_REQUIRE_CURL") == "1" {
			t.Fatal("curl is not installed and SKETCHD_REQUIRE_CURL=1")
		}
		t.Skip("curl is not installed; SKETCHD_REQUIRE_CURL=1 makes this a failure")
	}
	s := spark.Get(t)
	d := newSketchd(t)
	host := strings.TrimPrefix(d.url, "http://")
	var printed string
	for i, c := range block {
		if strings.TrimSpace(c) == "" || strings.HasPrefix(strings.TrimSpace(c), "#") {
			continue
		}
		c = strings.ReplaceAll(c, "localhost:8080", host)
		cmd := exec.Command("bash", "-c", "set -o pipefail; "+c)
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(curl)+string(os.PathListSeparator)+os.Getenv("PATH"), "SKETCHD="+d.url)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("README: %s: %v", c, err)
		}
		if i == cmdIdx {
			printed = strings.TrimSpace(string(out))
		}
	}
	if !strings.Contains(stmt, "…") {
		t.Fatalf("the README's Spark statement %q has no … for the download", stmt)
	}
	m := regexp.MustCompile(`/v1/sketches/([^/?'"]+)/raw`).FindStringSubmatch(block[cmdIdx])
	if m == nil {
		t.Fatalf("the README's Spark line %q downloads no sketch", block[cmdIdx])
	}
	want := rounded(d.describe(t, m[1]).num(t, "cardinality"))
	r := s.One(t, strings.TrimSuffix(strings.ReplaceAll(stmt, "…", printed), ";"), nil)
	if len(r) != 1 || r[0] == nil {
		t.Fatalf("Spark answers %v to the README's statement %s with what the command printed pasted in: a NULL, as unhex('\\x…') gives", r, stmt)
	}
	if got := r.Int(t, 0); got != want {
		t.Errorf("Spark estimates the README's download as %d, sketchd %d", got, want)
	}
}
