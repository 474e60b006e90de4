package postgres_test

import (
	"context"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	pgmigrations "github.com/sketchd/sketchd/migrations/postgres"
)

// statementLog records every statement a store sends (postgres.Options'
// Tracer), whitespace collapsed, so a test can check them against the
// list in docs/scale-out.md.
type statementLog struct {
	mu   sync.Mutex
	seen map[string]int
}

func (l *statementLog) add(sql string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == nil {
		l.seen = map[string]int{}
	}
	l.seen[normalizeSQL(sql)]++
}

func (l *statementLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	l.add(d.SQL)
	return ctx
}

func (l *statementLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (l *statementLog) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	for _, q := range d.Batch.QueuedQueries {
		l.add(q.SQL)
	}
	return ctx
}

func (l *statementLog) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (l *statementLog) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

var spaces = regexp.MustCompile(`\s+`)

// normalizeSQL collapses runs of white space to one space.
func normalizeSQL(sql string) string {
	return strings.TrimSpace(spaces.ReplaceAllString(sql, " "))
}

// documentedStatements reads the statements docs/scale-out.md lists: the
// ```sql block of its section "Every statement sketchd runs", statements
// ended by a semicolon at the end of a line, comment lines (--) left out.
func documentedStatements(tb testing.TB) map[string]bool {
	tb.Helper()
	b, err := os.ReadFile("../../../docs/scale-out.md")
	if err != nil {
		tb.Fatal(err)
	}
	const heading = "### Every statement sketchd runs"
	_, section, ok := strings.Cut(string(b), heading)
	if !ok {
		tb.Fatalf("docs/scale-out.md has no section %q", heading)
	}
	_, block, ok := strings.Cut(section, "```sql\n")
	if ok {
		block, _, ok = strings.Cut(block, "\n```")
	}
	if !ok {
		tb.Fatalf("the section %q of docs/scale-out.md has no ```sql block", heading)
	}
	out := map[string]bool{}
	var cur []string
	for _, line := range strings.Split(block, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "--") {
			continue
		}
		cur = append(cur, line)
		if strings.HasSuffix(strings.TrimSpace(line), ";") {
			st := normalizeSQL(strings.Join(cur, " "))
			out[strings.TrimSuffix(st, ";")] = true
			cur = nil
		}
	}
	if rest := normalizeSQL(strings.Join(cur, " ")); rest != "" {
		tb.Fatalf("docs/scale-out.md: a statement without its closing semicolon: %s", rest)
	}
	// The migrations run as they are; the document lists them by file.
	ents, err := fs.ReadDir(pgmigrations.FS, ".")
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".sql") {
			m, err := fs.ReadFile(pgmigrations.FS, e.Name())
			if err != nil {
				tb.Fatal(err)
			}
			out[normalizeSQL(string(m))] = true
		}
	}
	return out
}

// checkDocumented fails tb for every statement l saw that
// docs/scale-out.md does not list.
func (l *statementLog) checkDocumented(tb testing.TB) {
	tb.Helper()
	doc := documentedStatements(tb)
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.seen) == 0 {
		tb.Fatal("no statement was recorded")
	}
	var missing []string
	for st := range l.seen {
		if !doc[st] {
			missing = append(missing, st)
		}
	}
	slices.Sort(missing)
	for _, st := range missing {
		tb.Errorf("docs/scale-out.md (\"Every statement sketchd runs\") does not list a statement sketchd ran:\n%s", st)
	}
}
