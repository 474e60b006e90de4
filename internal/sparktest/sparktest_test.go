package sparktest

import (
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
)

// spark is the package's one Spark session.
var spark Shared

// TestCIInstallsPySpark: .ci/run installs exactly the PySpark and pyarrow
// the tests pin and makes a missing one a failure, so that CI runs the
// Spark and pyarrow tests instead of skipping them.
func TestCIInstallsPySpark(t *testing.T) {
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"'pyspark==" + PySpark + "'", "export SKETCHD_REQUIRE_SPARK=1", "'pyarrow==" + PyArrow + "'", "export SKETCHD_REQUIRE_PYARROW=1"} {
		if !strings.Contains(string(ci), want) {
			t.Errorf(".ci/run lacks %s", want)
		}
	}
}

// TestSession: the session is the pinned Spark; a failing statement comes
// back as an error naming Spark's complaint, and the session goes on
// answering; BINARY values travel both ways unchanged.
func TestSession(t *testing.T) {
	s := spark.Get(t)
	if s.Version != PySpark {
		t.Errorf("Spark %s, want %s", s.Version, PySpark)
	}
	_, err := s.Query("SELECT no_such_function(1)", nil)
	var se *Error
	if !errors.As(err, &se) || !strings.Contains(se.Msg, "no_such_function") {
		t.Errorf("a bad statement gave %v, want Spark's complaint naming the function", err)
	}
	b := []byte{0, 1, 0xfe, 0xff}
	r := s.One(t, "SELECT :b, length(:b), 2.5D, CAST(NULL AS INT), array(1L, 9007199254740993L)", map[string]any{"b": Binary(b)})
	if got := r.Bytes(t, 0); string(got) != string(b) || r.Int(t, 1) != 4 || r.Float(t, 2) != 2.5 || r[3] != nil {
		t.Errorf("row %v, want the bytes back, 4, 2.5, NULL", r)
	}
	if got := r.Ints(t, 4); got[1] != 9007199254740993 {
		t.Errorf("a BIGINT beyond 2^53 came back as %d", got[1])
	}
	v, printed, err := s.Python("x = spark.sql('SELECT 41 + 1 AS n')\nx.show()\nx.first()[0]")
	if err != nil || !regexp.MustCompile(`\|\s*42\|`).MatchString(printed) {
		t.Errorf("Python: printed %q, err %v", printed, err)
	}
	if n, err := AsFloat(v); err != nil || n != 42 {
		t.Errorf("Python's last value %#v, want 42", v)
	}
}
