package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/sketchd/sketchd/internal/store/bolt"
)

// Exit statuses of sketchd check.
const (
	checkDamaged = 1 // damage found
	checkFailed  = 2 // could not check: bad flags, no store, locked
)

// exitError is an error that ends the process with its own status
// (main prints err, if any, to stderr).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

const checkUsage = `Usage: sketchd check [-data FILE]

check reads a stopped store offline, the bbolt data file and its
write-ahead log (<data>.wal/), and lists every damaged sketch, series
entry, log record and structure, each with what can be recovered and how.
It opens the data file read-only and only reads the log: it never changes
either. A running sketchd holds a lock on the file: stop it first.

It checks the file's size against its pages, bbolt's consistency check,
the schema version, store identity and checkpoint position, every stored
record (its checksum, then a full decode, as a read would), every
idempotency key record and the /metrics index, the log's marker against
the data file, and every log record (length, checksum, order), replaying
its operations in memory as a start does: what a start refuses, check
lists.

Exit status: 0 no damage found, 1 damage found (listed on stdout),
2 the check could not run (bad flags, no store at FILE, locked, not
readable). See docs/damage.md.

Flags:
`

// runCheck is "sketchd check": it checks the store at -data (or
// SKETCHD_DATA) and writes the report to stdout.
func runCheck(args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("sketchd check", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	data := fs.String("data", "sketchd.db", "bbolt data file to check (its write-ahead log is <data>.wal/); also SKETCHD_DATA")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, checkUsage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return nil
		}
		return &exitError{checkFailed, fmt.Errorf("check: %w (sketchd check -h lists the flags)", err)}
	}
	if fs.NArg() > 0 {
		return &exitError{checkFailed, fmt.Errorf("check: unexpected argument %q", fs.Arg(0))}
	}
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "data" })
	if v := getenv("SKETCHD_DATA"); v != "" && !set {
		*data = v
	}
	rep, err := bolt.CheckFiles(*data)
	if err != nil {
		return &exitError{checkFailed, err}
	}
	if _, err := io.WriteString(stdout, rep.String()); err != nil {
		return &exitError{checkFailed, err}
	}
	if !rep.Clean() {
		return &exitError{checkDamaged, fmt.Errorf("check: %s: %d damaged (listed above)", *data, len(rep.Problems))}
	}
	return nil
}
