package console_test

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/pgtest"
)

// runPsqlLine runs the line the page shows, exactly, in bash against the
// test PostgreSQL, and checks that hll_cardinality of the loaded sketch
// is the estimate sketchd reports.
func runPsqlLine(t *testing.T, line string, want float64) {
	conn := pgtest.Connect(t) // skips without PostgreSQL (fails under SKETCHD_REQUIRE_PG=1)
	for _, tool := range []string{"bash", "curl", "psql"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("SKETCHD_REQUIRE_PG") == "1" {
				t.Fatalf("SKETCHD_REQUIRE_PG=1 but %s is missing", tool)
			}
			t.Skipf("skipping: %s is not installed", tool)
		}
	}
	cfg := conn.Config()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", line)
	cmd.Env = append(os.Environ(), "PGHOST="+cfg.Host, "PGPORT="+strconv.Itoa(int(cfg.Port)),
		"PGDATABASE="+cfg.Database, "PGUSER="+cfg.User, "PGPASSWORD="+cfg.Password)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the psql line failed: %v\n%s", err, out)
	}
	// psql prints a table; the value is the line that parses as a number.
	for _, l := range strings.Split(string(out), "\n") {
		if v, err := strconv.ParseFloat(strings.TrimSpace(l), 64); err == nil {
			if d := v - want; d > 1e-6*want || d < -1e-6*want {
				t.Errorf("PostgreSQL's hll_cardinality = %v, sketchd's estimate %v", v, want)
			}
			return
		}
	}
	t.Errorf("no number in psql's output:\n%s", out)
}
