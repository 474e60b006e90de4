// Package sparktest runs Apache Spark SQL for sketchd's tests: one local
// Spark session (PySpark at the version PySpark names, local[1], a small
// heap, no UI, bound to 127.0.0.1) per test binary, started on first use
// by driver.py (embedded here; its comment lists the requests) and
// answering one request at a time over stdin and stdout, so that Spark's
// start-up (several seconds) is paid once.
//
// Without python3, PySpark at that version or Java a test skips with a
// message saying how to provide them; with SKETCHD_REQUIRE_SPARK=1 (set
// by CI, which installs PySpark into its virtual environment) it fails
// instead.
//
// The package's own tests check Spark's sketch functions against a live
// sketchd in both directions, for every kind Spark reads (ds_hll, theta,
// freq as Spark's integer tuple sketches, kll), run every Spark line
// that docs/formats.md and the README show and every Python, Java and
// PostgreSQL line of docs/formats.md (each block there is run or marked
// "not run by CI"), and read a prefix's Parquet
// listing (GET /v1/sketches?format=parquet) as a table, with Spark and
// with pyarrow (SKETCHD_REQUIRE_PYARROW=1 makes a missing pyarrow a
// failure).
package sparktest

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

//go:embed driver.py
var driver string

// PySpark is the PySpark release the tests run, exactly (.ci/run
// installs it with pip; its jars carry datasketches-java 6.2.0).
const PySpark = "4.3.0"

// answerTimeout bounds one request: a Spark that stops answering fails
// the test instead of hanging the test binary.
const answerTimeout = 3 * time.Minute

// Shared starts one Spark session on first use and hands the same one to
// every later caller; a test package keeps one in a package-level
// variable.
type Shared struct {
	once sync.Once
	s    *Session
	err  error
	skip string
}

// Get returns the shared session, starting it on the first call. It
// skips tb (fails it under SKETCHD_REQUIRE_SPARK=1) when python3, PySpark
// or Java is missing, and fails it when Spark cannot start.
func (sh *Shared) Get(tb testing.TB) *Session {
	tb.Helper()
	sh.once.Do(func() { sh.s, sh.skip, sh.err = start() })
	if sh.skip != "" {
		if os.Getenv("SKETCHD_REQUIRE_SPARK") == "1" {
			tb.Fatalf("SKETCHD_REQUIRE_SPARK=1 but %s", sh.skip)
		}
		tb.Skipf("skipping the Spark test: %s (pip install pyspark==%s, and a JDK 17 or newer on PATH; .ci/run installs both)", sh.skip, PySpark)
	}
	if sh.err != nil {
		tb.Fatalf("sparktest: %v", sh.err)
	}
	return sh.s
}

// Session is a running driver.py. Requests are answered one at a time.
type Session struct {
	// Version is the Spark version the session reported.
	Version string

	mu      sync.Mutex
	in      io.WriteCloser
	answers chan answerLine
	cmd     *exec.Cmd
	broken  error
}

type answerLine struct {
	line []byte
	err  error
}

// start checks for python3, PySpark and Java, then starts driver.py and
// waits for its session. skip says what is missing.
func start() (s *Session, skip string, err error) {
	if _, err := exec.LookPath("python3"); err != nil {
		return nil, "python3 is not on PATH", nil
	}
	out, err := exec.Command("python3", "-c", "import pyspark; print(pyspark.__version__)").CombinedOutput()
	if err != nil {
		return nil, "python3 cannot import pyspark: " + lastLine(out), nil
	}
	if v := strings.TrimSpace(string(out)); v != PySpark {
		return nil, fmt.Sprintf("python3 has pyspark %s, and the tests pin %s", v, PySpark), nil
	}
	if _, err := exec.LookPath("java"); err != nil {
		return nil, "java is not on PATH (Spark runs in a JVM)", nil
	}
	// Spark 4 runs on Java 17 and newer; `java -version` says which
	// (`openjdk version "17.0.15" …`, `java version "1.8.0_…"`).
	out, _ = exec.Command("java", "-version").CombinedOutput()
	m := regexp.MustCompile(`version "(1\.)?(\d+)`).FindSubmatch(out)
	if m == nil {
		return nil, "", fmt.Errorf("java -version printed %q, with no version", lastLine(out))
	}
	if v, _ := strconv.Atoi(string(m[2])); v < 17 {
		return nil, fmt.Sprintf("java is version %s, and Spark %s needs 17 or newer", m[2], PySpark), nil
	}
	cmd := exec.Command("python3", "-u", "-c", driver)
	// Spark binds its driver to this address only: the tests talk to
	// nothing off this machine.
	cmd.Env = append(os.Environ(), "SPARK_LOCAL_IP=127.0.0.1", "PYTHONDONTWRITEBYTECODE=1")
	cmd.Stderr = &quietWriter{w: os.Stderr}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, "", err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("start python3: %w", err)
	}
	s = &Session{in: in, answers: make(chan answerLine, 1), cmd: cmd}
	go func() {
		r := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			s.answers <- answerLine{line, err}
			if err != nil {
				return
			}
		}
	}()
	// The session ends when its stdin closes: when the test binary exits.
	var ready struct {
		Ready string `json:"ready"`
	}
	line, err := s.read()
	if err == nil {
		err = json.Unmarshal(line, &ready)
	}
	if err != nil || ready.Ready == "" {
		s.cmd.Process.Kill()
		return nil, "", fmt.Errorf("starting Spark: %v (answer %q; its stderr is above)", err, line)
	}
	s.Version = ready.Ready
	return s, "", nil
}

// read waits for the next answer line, up to answerTimeout; after a
// timeout or a broken pipe the session is unusable.
func (s *Session) read() ([]byte, error) {
	if s.broken != nil {
		return nil, s.broken
	}
	select {
	case a := <-s.answers:
		if a.err != nil {
			s.broken = fmt.Errorf("driver.py ended: %w", a.err)
			return nil, s.broken
		}
		return a.line, nil
	case <-time.After(answerTimeout):
		s.cmd.Process.Kill()
		s.broken = fmt.Errorf("no answer from Spark in %v", answerTimeout)
		return nil, s.broken
	}
}

// Error is an exception Spark (or the Python code) raised: the session
// goes on answering.
type Error struct{ Msg string }

func (e *Error) Error() string { return "spark: " + e.Msg }

// do sends one request and decodes the answer into v.
func (s *Session) do(req any, v any) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken != nil {
		return s.broken
	}
	if _, err := s.in.Write(append(b, '\n')); err != nil {
		s.broken = fmt.Errorf("sending to driver.py: %w", err)
		return s.broken
	}
	line, err := s.read()
	if err != nil {
		return err
	}
	var e struct {
		Error *string `json:"error"`
	}
	if err := json.Unmarshal(line, &e); err != nil {
		return fmt.Errorf("driver.py answered %q: %w", line, err)
	}
	if e.Error != nil {
		return &Error{Msg: *e.Error}
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	return dec.Decode(v)
}

// Binary is a BINARY argument of a query.
type Binary []byte

// MarshalJSON writes b as driver.py reads a BINARY: {"hex": "…"}.
func (b Binary) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]string{"hex": hex.EncodeToString(b)})
}

// Query runs a Spark SQL statement with named parameters (:name in the
// statement; a Binary for a BINARY, else a number, string or bool) and
// returns its rows.
func (s *Session) Query(sql string, args map[string]any) ([]Row, error) {
	var a struct {
		Rows []Row `json:"rows"`
	}
	if err := s.do(map[string]any{"sql": sql, "args": args}, &a); err != nil {
		return nil, err
	}
	return a.Rows, nil
}

// MustQuery is Query that fails tb on an error.
func (s *Session) MustQuery(tb testing.TB, sql string, args map[string]any) []Row {
	tb.Helper()
	rows, err := s.Query(sql, args)
	if err != nil {
		tb.Fatalf("%v\nin %s", err, clip(sql))
	}
	return rows
}

// One is MustQuery for a statement that answers one row.
func (s *Session) One(tb testing.TB, sql string, args map[string]any) Row {
	tb.Helper()
	rows := s.MustQuery(tb, sql, args)
	if len(rows) != 1 {
		tb.Fatalf("%d rows, want 1, from %s", len(rows), clip(sql))
	}
	return rows[0]
}

// Python runs Python code as the pyspark shell would (spark is the
// session) and returns the value of its last line, if an expression, and
// what it printed.
func (s *Session) Python(code string) (value any, printed string, err error) {
	var a struct {
		Value   any    `json:"value"`
		Printed string `json:"printed"`
	}
	if err := s.do(map[string]any{"python": code}, &a); err != nil {
		return nil, "", err
	}
	return a.Value, a.Printed, nil
}

// Row is one row of an answer: each column a json.Number, string, bool,
// nil (NULL), []any (an array), or map[string]any{"hex": …} (a BINARY).
type Row []any

// Bytes returns column i, a BINARY.
func (r Row) Bytes(tb testing.TB, i int) []byte {
	tb.Helper()
	b, err := AsBytes(r.col(tb, i))
	if err != nil {
		tb.Fatalf("column %d: %v", i, err)
	}
	return b
}

// Int returns column i, an integer.
func (r Row) Int(tb testing.TB, i int) int64 {
	tb.Helper()
	n, ok := r.col(tb, i).(json.Number)
	if !ok {
		tb.Fatalf("column %d is %#v, not a number", i, r[i])
	}
	v, err := n.Int64()
	if err != nil {
		tb.Fatalf("column %d: %v", i, err)
	}
	return v
}

// Float returns column i, a number.
func (r Row) Float(tb testing.TB, i int) float64 {
	tb.Helper()
	v, err := AsFloat(r.col(tb, i))
	if err != nil {
		tb.Fatalf("column %d: %v", i, err)
	}
	return v
}

// Floats returns column i, an array of numbers.
func (r Row) Floats(tb testing.TB, i int) []float64 {
	tb.Helper()
	a, ok := r.col(tb, i).([]any)
	if !ok {
		tb.Fatalf("column %d is %#v, not an array", i, r[i])
	}
	out := make([]float64, len(a))
	for j, v := range a {
		f, err := AsFloat(v)
		if err != nil {
			tb.Fatalf("column %d, element %d: %v", i, j, err)
		}
		out[j] = f
	}
	return out
}

// Ints returns column i, an array of integers, exactly.
func (r Row) Ints(tb testing.TB, i int) []int64 {
	tb.Helper()
	a, ok := r.col(tb, i).([]any)
	if !ok {
		tb.Fatalf("column %d is %#v, not an array", i, r[i])
	}
	out := make([]int64, len(a))
	for j, v := range a {
		n, ok := v.(json.Number)
		var err error
		if ok {
			out[j], err = n.Int64()
		}
		if !ok || err != nil {
			tb.Fatalf("column %d, element %d is %#v, not an integer", i, j, v)
		}
	}
	return out
}

func (r Row) col(tb testing.TB, i int) any {
	tb.Helper()
	if i >= len(r) {
		tb.Fatalf("column %d of a row of %d", i, len(r))
	}
	if r[i] == nil {
		tb.Fatalf("column %d is NULL", i)
	}
	return r[i]
}

// AsBytes reads a BINARY value of an answer.
func AsBytes(v any) ([]byte, error) {
	m, ok := v.(map[string]any)
	h, isStr := m["hex"].(string)
	if !ok || !isStr || len(m) != 1 {
		return nil, fmt.Errorf("%#v is not a BINARY", v)
	}
	return hex.DecodeString(h)
}

// AsFloat reads a number of an answer.
func AsFloat(v any) (float64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return math.NaN(), fmt.Errorf("%#v is not a number", v)
	}
	return n.Float64()
}

// quietWriter passes Spark's stderr on to w, dropping the warnings
// every start prints (they say nothing about a test).
type quietWriter struct {
	w    io.Writer
	part []byte
}

func (t *quietWriter) Write(p []byte) (int, error) {
	t.part = append(t.part, p...)
	for {
		i := bytes.IndexByte(t.part, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := t.part[:i+1]
		if !quiet(line) {
			t.w.Write(line)
		}
		t.part = t.part[i+1:]
	}
}

// quiet reports whether a line of Spark's stderr is start-up noise.
func quiet(line []byte) bool {
	for _, s := range []string{" WARN ", "log4j2-defaults.properties", "setLogLevel(newLevel)", "restricted mode where no off-heap", "Using incubator modules", "Setting default log level"} {
		if bytes.Contains(line, []byte(s)) {
			return true
		}
	}
	return false
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// clip shortens a statement (hex literals make them long) for messages.
func clip(s string) string {
	if len(s) > 400 {
		return s[:400] + "…"
	}
	return s
}
