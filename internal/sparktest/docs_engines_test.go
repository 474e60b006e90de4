package sparktest

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/javatest"
	"github.com/sketchd/sketchd/internal/pgtest"
)

// DataSketchesPython is the release of DataSketches' Python library the
// docs' Python lines are run with (.ci/run installs it).
const DataSketchesPython = "5.2.0"

// numberRE finds the numbers a line prints.
var numberRE = regexp.MustCompile(`-?\d+(\.\d+)?([eE][-+]?\d+)?`)

// sameNumber reports whether printed, a number an engine printed, is
// want: a whole number (no point, no exponent) as want rounded half up
// (as Spark's estimates and Java's long results are), else within a
// relative 1e-9 (what printing a double to its shortest form keeps).
func sameNumber(printed string, want float64) bool {
	got, err := strconv.ParseFloat(printed, 64)
	if err != nil {
		return false
	}
	if !strings.ContainsAny(printed, ".eE") {
		return int64(got) == rounded(want)
	}
	return math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want))
}

// docAnswer is sketchd's answer that a doc line about one sketch must
// print: a kll sketch's median (GET …/quantile?q=0.5), any other kind's
// estimate.
func (d *sketchd) docAnswer(t *testing.T, kind, name string) float64 {
	t.Helper()
	if kind == "kll" {
		q := d.get(t, "/v1/sketches/"+name+"/quantile?q=0.5")
		return q.list(t, "quantiles", "value")[0]
	}
	return d.describe(t, name).num(t, "cardinality")
}

// docDownloads creates a kind's doc sketch in d and returns what a doc
// line's placeholders stand for: $hex, \x…, and sketch.bin, from the
// download the label names (?layout=cpp, or the default).
func docDownloads(t *testing.T, d *sketchd, b docBlock, name string) (data docData, sub func(string) string) {
	t.Helper()
	data, ok := docDataFor(b.kind, b.text)
	if !ok {
		t.Fatalf("formats.md:%d: lines for %s, which the test has no data for", b.line, b.kind)
	}
	d.create(t, name, data.create)
	d.add(t, name, data.add)
	query := ""
	if strings.Contains(b.label, "?layout=cpp") {
		query = "?layout=cpp"
	}
	hexDL := string(d.raw(t, name, "?format=hex"))
	if query != "" {
		hexDL = `\x` + fmt.Sprintf("%x", d.raw(t, name, query))
	}
	file := writeFile(t, "sketchd", d.raw(t, name, query))
	return data, func(s string) string {
		s = strings.ReplaceAll(s, `\x…`, hexDL)
		s = strings.ReplaceAll(s, "$hex", hexDL[2:])
		return strings.ReplaceAll(s, "sketch.bin", file)
	}
}

// checkPrinted checks that out, what a line about one sketch printed,
// holds numbers and that each is want.
func checkPrinted(t *testing.T, b docBlock, out string, want float64) {
	t.Helper()
	nums := numberRE.FindAllString(out, -1)
	if len(nums) == 0 {
		t.Errorf("formats.md:%d printed no number:\n%s", b.line, out)
	}
	for _, n := range nums {
		if !sameNumber(n, want) {
			t.Errorf("formats.md:%d printed %s, sketchd answers %v; all it printed:\n%s", b.line, n, want, out)
		}
	}
}

// TestDocsEngineLines runs every Python, Java and PostgreSQL block of
// docs/formats.md that loads a download (the Spark ones are
// TestDocsSparkLines', the Parquet ones TestDocsParquetLines') against a
// live sketchd, as a reader would: each number a block prints must be
// sketchd's own answer for the sketch it read.
func TestDocsEngineLines(t *testing.T) {
	md, err := os.ReadFile("../../docs/formats.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var blocks []docBlock
	for _, b := range docBlocks(t, string(md)) {
		if b.kind != "parquet" && (b.engine == "python" || b.engine == "java" || b.engine == "psql") {
			blocks = append(blocks, b)
			seen[b.kind+" "+b.engine] = true
		}
	}
	for _, want := range []string{"hll psql", "theta python", "theta java", "freq python", "freq java", "ds_hll python", "ds_hll java",
		"cpc python", "cpc java", "zeta_hll java", "airlift_hll java", "kll python", "kll java"} {
		if !seen[want] {
			t.Errorf("docs/formats.md has no %s lines", want)
		}
	}
	d := newSketchd(t)
	for _, b := range blocks {
		t.Run(fmt.Sprintf("formats.md:%d_%s_%s", b.line, b.kind, b.engine), func(t *testing.T) {
			name := fmt.Sprintf("doc%d", b.line)
			switch b.engine {
			case "python":
				py := python3With(t, "datasketches", DataSketchesPython, "SKETCHD_REQUIRE_DATASKETCHES")
				_, sub := docDownloads(t, d, b, name)
				checkPrinted(t, b, runPython(t, py, b, sub(b.text)), d.docAnswer(t, b.kind, name))
			case "java":
				cp := javatest.Classpath(t)
				_, sub := docDownloads(t, d, b, name)
				checkPrinted(t, b, runJava(t, cp, b, sub(b.text)), d.docAnswer(t, b.kind, name))
			case "psql":
				runPsqlBlock(t, d, b, name)
			}
		})
	}
}

// runPython runs code with python3 in a fresh directory and returns what
// it printed.
func runPython(t *testing.T, py string, b docBlock, code string) string {
	t.Helper()
	cmd := exec.Command(py, "-c", code)
	cmd.Dir = t.TempDir()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("formats.md:%d: python3: %v\n%s\n%s", b.line, err, stderrOf(err), clip(code))
	}
	return string(out)
}

// runJava runs a Java block as jshell would: its imports, then its
// statements as the body of a main, in a source file java runs.
func runJava(t *testing.T, cp string, b docBlock, code string) string {
	t.Helper()
	var imports, body []string
	for _, l := range strings.Split(code, "\n") {
		if strings.HasPrefix(l, "import ") {
			imports = append(imports, l)
		} else {
			body = append(body, "    "+l)
		}
	}
	src := strings.Join(imports, "\n") + "\n\npublic class Doc {\n  public static void main(String[] args) throws Exception {\n" + strings.Join(body, "\n") + "\n  }\n}\n"
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Doc.java"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("java", "-XX:TieredStopAtLevel=1", "-cp", cp, "Doc.java")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("formats.md:%d: java: %v\n%s\n%s", b.line, err, stderrOf(err), clip(src))
	}
	return string(out)
}

// runPsqlBlock runs each statement of a PostgreSQL block with psql, in a
// schema of the test's holding events(user_id bigint) with the doc data's
// users. A statement's answer must be sketchd's: the estimate of the
// download, or for a statement over events sketchd's union of the
// download's sketch with a sketch of the same users.
func runPsqlBlock(t *testing.T, d *sketchd, b docBlock, name string) {
	t.Helper()
	psql, err := exec.LookPath("psql")
	if err != nil {
		if os.Getenv("SKETCHD_REQUIRE_PG") == "1" {
			t.Fatal("psql is not installed and SKETCHD_REQUIRE_PG=1")
		}
		t.Skip("psql is not installed")
	}
	dsn := pgtest.DSN(t)
	conn := pgtest.Connect(t)
	data, sub := docDownloads(t, d, b, name)
	ctx := context.Background()
	schema := fmt.Sprintf("docs_%d_%d", os.Getpid(), time.Now().UnixNano())
	for _, q := range []string{
		`CREATE SCHEMA ` + schema,
		`CREATE TABLE ` + schema + `.events (user_id bigint)`,
		fmt.Sprintf(`INSERT INTO %s.events SELECT g FROM generate_series(%d, %d) AS g`, schema, data.lo, data.hi-1),
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() { conn.Exec(context.Background(), `DROP SCHEMA `+schema+` CASCADE`) })
	events := name + ":events"
	d.create(t, events, data.create)
	d.add(t, events, obj{"ids": ids(data.lo, data.hi, false)})
	for _, st := range statements(b.text) {
		want := d.docAnswer(t, b.kind, name)
		if regexp.MustCompile(`\bevents\b`).MatchString(st) {
			want = d.union(t, name, events).num(t, "cardinality")
		}
		cmd := exec.Command(psql, "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", dsn, "-c", sub(st))
		cmd.Env = append(os.Environ(), "PGOPTIONS=-c search_path="+schema+",public")
		out, err := cmd.Output()
		if err != nil {
			t.Errorf("formats.md:%d: psql: %v\n%s\n%s", b.line, err, stderrOf(err), clip(st))
			continue
		}
		checkPrinted(t, b, string(out), want)
	}
}

// stderrOf returns what a failed command wrote to its standard error.
func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// TestDocsParquetLines runs the lines of docs/formats.md that load a
// prefix's Parquet listing (sketches.parquet) with Spark SQL, PySpark and
// Python (pyarrow with DataSketches), against a live sketchd holding
// ds_hll, theta and other sketches under one prefix. Each row a line
// prints names a sketch, and every number on it must be sketchd's
// estimate of that sketch; each sketch of the kind the line selects must
// have its row; a line that prints one number and no name is a union,
// and must be sketchd's union of the kind's sketches.
func TestDocsParquetLines(t *testing.T) {
	md, err := os.ReadFile("../../docs/formats.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []docBlock
	langs := map[string]bool{}
	for _, b := range docBlocks(t, string(md)) {
		if b.kind == "parquet" && b.engine != "none" {
			blocks = append(blocks, b)
			langs[b.engine+" "+b.lang] = true
		}
	}
	for _, want := range []string{"spark sql", "spark python", "python python"} {
		if !langs[want] {
			t.Errorf("docs/formats.md shows no %s lines for the Parquet listing", want)
		}
	}
	d := newSketchd(t)
	names := parquetPrefix(t, d)
	path := d.parquetFile(t, "pq:")
	kindOf := map[string][]string{}
	for _, n := range names {
		k := d.describe(t, n).str(t, "type")
		kindOf[k] = append(kindOf[k], n)
	}
	sub := func(s string) string { return strings.ReplaceAll(s, "sketches.parquet", path) }
	for _, b := range blocks {
		t.Run(fmt.Sprintf("formats.md:%d_%s_%s", b.line, b.engine, b.lang), func(t *testing.T) {
			switch {
			case b.engine == "spark" && b.lang == "sql":
				s := spark.Get(t)
				for _, st := range statements(b.text) {
					var lines [][]string
					for _, r := range s.MustQuery(t, sub(st), nil) {
						var cells []string
						for _, v := range r {
							cells = append(cells, fmt.Sprint(v))
						}
						lines = append(lines, cells)
					}
					checkParquetRows(t, d, b, st, lines, kindOf)
				}
			case b.engine == "spark":
				s := spark.Get(t)
				_, printed, err := s.Python(sub(b.text))
				if err != nil {
					t.Fatalf("formats.md:%d: %v", b.line, err)
				}
				var lines [][]string
				for _, l := range strings.Split(printed, "\n") {
					if !strings.HasPrefix(l, "|") {
						continue // show()'s rules
					}
					var cells []string
					for _, c := range strings.Split(strings.Trim(l, "|"), "|") {
						cells = append(cells, strings.TrimSpace(c))
					}
					lines = append(lines, cells)
				}
				checkParquetRows(t, d, b, b.text, lines[1:], kindOf) // lines[0] is the header
			case b.engine == "python":
				python3With(t, "pyarrow", PyArrow, "SKETCHD_REQUIRE_PYARROW")
				py := python3With(t, "datasketches", DataSketchesPython, "SKETCHD_REQUIRE_DATASKETCHES")
				var lines [][]string
				for _, l := range strings.Split(strings.TrimSpace(runPython(t, py, b, sub(b.text))), "\n") {
					lines = append(lines, strings.Fields(l))
				}
				checkParquetRows(t, d, b, b.text, lines, kindOf)
			default:
				t.Fatalf("formats.md:%d: a %s %s block, which the test does not run", b.line, b.engine, b.lang)
			}
		})
	}
}

// checkParquetRows checks the rows a Parquet line printed (each a list
// of cells) against sketchd, for the kind the line selects (kind =
// '…' or == "…" in code).
func checkParquetRows(t *testing.T, d *sketchd, b docBlock, code string, rows [][]string, kindOf map[string][]string) {
	t.Helper()
	m := regexp.MustCompile(`kind"?\]?\s*==?\s*['"]([a-z_]+)['"]`).FindStringSubmatch(code)
	if m == nil {
		t.Fatalf("formats.md:%d: %s selects no kind (kind = '…')", b.line, clip(code))
	}
	kind := m[1]
	if len(kindOf[kind]) < 2 {
		t.Fatalf("the test's prefix has %d %s sketches", len(kindOf[kind]), kind)
	}
	if len(rows) == 1 && len(rows[0]) == 1 {
		want := d.union(t, kindOf[kind]...).num(t, "cardinality")
		if !sameNumber(rows[0][0], want) {
			t.Errorf("formats.md:%d: %s\nanswers %s, sketchd's union of %v %v", b.line, clip(code), rows[0][0], kindOf[kind], want)
		}
		return
	}
	var got []string
	for _, r := range rows {
		if len(r) < 2 || !slices.Contains(kindOf[kind], r[0]) {
			t.Errorf("formats.md:%d: a row %q that names no %s sketch of the prefix", b.line, r, kind)
			continue
		}
		got = append(got, r[0])
		want := d.describe(t, r[0]).num(t, "cardinality")
		for _, c := range r[1:] {
			if !sameNumber(c, want) {
				t.Errorf("formats.md:%d: %s's row holds %s, sketchd's estimate %v (row %q)", b.line, r[0], c, want, r)
			}
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, kindOf[kind]) {
		t.Errorf("formats.md:%d: rows for %v, want one for each of %v", b.line, got, kindOf[kind])
	}
}
