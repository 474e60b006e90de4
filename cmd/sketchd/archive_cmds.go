package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	apiclient "github.com/sketchd/sketchd/client"
	"github.com/sketchd/sketchd/internal/archive"
	"github.com/sketchd/sketchd/internal/backup"
	"github.com/sketchd/sketchd/internal/pace"
	"github.com/sketchd/sketchd/internal/store/bolt"
	"github.com/sketchd/sketchd/internal/store/postgres"
)

// Backup, restore and copy (docs/backup.md). Each parses its own flags,
// exits 0 on success and 1 on any failure, and writes progress to
// stderr when it is a terminal.

const backupUsage = `Usage: sketchd backup -url URL [-token-file FILE] [-ca-file FILE] -o FILE

backup saves a running sketchd's backup archive (GET /v1/backup, which
needs an admin token when the server has tokens) to FILE. The stream is
checked as it arrives (every record's checksum and contents, the
trailer's counts and digest) and written to FILE.tmp, which becomes FILE
only once all of it checked out: a failed or damaged stream leaves no
FILE (and an older FILE is kept). See docs/backup.md.

Flags:
`

const restoreUsage = `Usage: sketchd restore -i FILE (-data FILE | -postgres DSN) [-replace]

restore loads a backup archive into a stopped store: the bbolt file
-data (created if missing) or the PostgreSQL database -postgres. It reads
the whole archive first and refuses a damaged or truncated one, naming
the record and byte offset; then it writes it in one transaction, so a
failure leaves the target as it was. A target that holds any sketch,
series or idempotency key is refused unless -replace is given.

Flags:
`

const copyUsage = `Usage: sketchd copy -from (FILE | DSN) -to (FILE | DSN)

copy moves a stopped store to an empty one, on any backend: a bbolt file,
or a PostgreSQL or Citus database (a libpq connection string or a
postgres:// URL). The source's archive goes through a pipe into the
target's restore, one transaction; then both are read again and compared:
sketch, series, bucket and key counts, and a digest of every value.

Flags:
`

// flagSet is a subcommand's flag set: -h prints usage and its flags.
func flagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("sketchd "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseSub parses args into fs; help is true after -h (usage printed).
func parseSub(fs *flag.FlagSet, name, usage string, args []string, stdout io.Writer) (help bool, err error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return true, nil
		}
		return false, fmt.Errorf("%s: %w (sketchd %s -h lists the flags)", name, err, name)
	}
	if fs.NArg() > 0 {
		return false, fmt.Errorf("%s: unexpected argument %q", name, fs.Arg(0))
	}
	return false, nil
}

// progress writes a line on a terminal, at most every 200ms, rewriting
// itself; done ends it. A nil progress does nothing.
type progress struct {
	w    io.Writer
	what string
	mu   sync.Mutex
	last time.Time
	n    int64
}

func newProgress(w io.Writer, what string) *progress {
	if w == nil {
		return nil
	}
	return &progress{w: w, what: what}
}

func (p *progress) update(n int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n = n
	if time.Since(p.last) < 200*time.Millisecond {
		return
	}
	p.last = time.Now()
	fmt.Fprintf(p.w, "\r%s: %.1f MiB", p.what, float64(n)/(1<<20))
}

func (p *progress) done(c archive.Counts) {
	if p == nil {
		return
	}
	fmt.Fprintf(p.w, "\r%s: %.1f MiB, %d sketches, %d series, %d buckets, %d idempotency keys\n", p.what, float64(p.n)/(1<<20), c.Sketches, c.Series, c.Buckets, c.Keys)
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r  io.Reader
	n  int64
	fn func(int64)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.fn != nil {
		c.fn(c.n)
	}
	return n, err
}

// readToken reads a client token file: the first line that is neither
// blank nor a comment; its first field is the token (a server's token
// file line "token role" works too).
func readToken(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		return strings.Fields(line)[0], nil
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("%s holds no token", path)
}

// runBackup is "sketchd backup".
func runBackup(ctx context.Context, args []string, stdout, term io.Writer) error {
	fs := flagSet("backup")
	url := fs.String("url", "", "the running sketchd's base URL (http://host:8080)")
	tokenFile := fs.String("token-file", "", "a file holding an admin token (its first line's first field)")
	out := fs.String("o", "", "the archive file to write")
	caFile := fs.String("ca-file", "", "PEM file of the CA that signed an https -url's certificate (default: the system's roots)")
	maxRate := fs.String("max-rate", "", "read the archive at most this many bytes a second, with k, M or G after the number (20M): the server then sends it no faster, leaving more of its cores and disk to writers (default: no limit)")
	if help, err := parseSub(fs, "backup", backupUsage, args, stdout); help || err != nil {
		return err
	}
	if *url == "" || *out == "" {
		return errors.New("backup: -url and -o are required (sketchd backup -h lists the flags)")
	}
	var rate float64
	if *maxRate != "" {
		r, err := pace.ParseRate(*maxRate)
		if err != nil {
			return fmt.Errorf("backup: -max-rate: %w", err)
		}
		rate = r
	}
	var opts []apiclient.Option
	if *tokenFile != "" {
		tok, err := readToken(*tokenFile)
		if err != nil {
			return fmt.Errorf("backup: -token-file: %w", err)
		}
		opts = append(opts, apiclient.WithToken(tok))
	}
	if *caFile != "" {
		opts = append(opts, apiclient.WithCAFile(*caFile))
	}
	c, err := apiclient.New(*url, opts...)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	counts, err := saveBackup(ctx, c, *out, rate, newProgress(term, "backup"))
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	fmt.Fprintf(stdout, "backup: wrote %s: %d sketches, %d series, %d buckets, %d idempotency keys\n", *out, counts.Sketches, counts.Series, counts.Buckets, counts.Keys)
	return nil
}

// saveBackup streams c's backup into path.tmp while checking it, then
// syncs it and renames it to path, reading at most rate bytes a second
// (0: no limit). On any failure path.tmp is removed and path is
// untouched.
func saveBackup(ctx context.Context, c *apiclient.Client, path string, rate float64, p *progress) (counts archive.Counts, err error) {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return counts, err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	pr, pw := io.Pipe()
	fetched := make(chan error, 1)
	var to io.Writer = io.MultiWriter(f, pw)
	if rate > 0 {
		to = pace.NewWriter(to, rate)
	}
	go func() {
		_, err := c.Backup(ctx, to)
		pw.CloseWithError(err)
		fetched <- err
	}()
	cr := &countingReader{r: pr, fn: p.update}
	r, err := archive.NewReader(cr)
	if err == nil {
		counts, err = backup.Verify(r, nil)
	}
	if err != nil {
		pr.CloseWithError(err)
		<-fetched
		return counts, err
	}
	// The archive checked out to its trailer; the server must have ended
	// the stream there too.
	if _, err := io.Copy(io.Discard, pr); err != nil {
		return counts, err
	}
	if err := <-fetched; err != nil {
		return counts, err
	}
	if err := f.Sync(); err != nil {
		return counts, err
	}
	if err := f.Close(); err != nil {
		return counts, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return counts, err
	}
	p.done(counts)
	return counts, syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// runRestore is "sketchd restore".
func runRestore(ctx context.Context, args []string, stdout, term io.Writer) error {
	fs := flagSet("restore")
	in := fs.String("i", "", "the archive file to restore")
	data := fs.String("data", "", "restore into this bbolt data file (created if missing; the store must be stopped)")
	pg := fs.String("postgres", "", "restore into this PostgreSQL database (a libpq connection string or URL)")
	replace := fs.Bool("replace", false, "replace the target's contents if it holds any")
	if help, err := parseSub(fs, "restore", restoreUsage, args, stdout); help || err != nil {
		return err
	}
	if *in == "" || (*data == "") == (*pg == "") {
		return errors.New("restore: -i and one of -data or -postgres are required (sketchd restore -h lists the flags)")
	}
	open := func() (*archive.Reader, *os.File, error) {
		f, err := os.Open(*in)
		if err != nil {
			return nil, nil, err
		}
		r, err := archive.NewReader(f)
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("%s: %w", *in, err)
		}
		return r, f, nil
	}
	// The whole archive first: nothing is written from a damaged one.
	r, f, err := open()
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	p := newProgress(term, "checking "+*in)
	counts, err := backup.Verify(r, p.update)
	f.Close()
	if err != nil {
		return fmt.Errorf("restore: %s: %w; nothing was written", *in, err)
	}
	p.done(counts)
	r, f, err = open()
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	defer f.Close()
	p = newProgress(term, "restoring")
	if *data != "" {
		counts, err = bolt.Restore(*data, r, *replace, bolt.Options{}, p.update)
	} else {
		counts, err = restorePostgres(ctx, *pg, r, *replace, p.update)
	}
	if err != nil {
		return fmt.Errorf("restore: %w; the target was left as it was", err)
	}
	p.done(counts)
	fmt.Fprintf(stdout, "restore: restored %d sketches, %d series, %d buckets, %d idempotency keys\n", counts.Sketches, counts.Series, counts.Buckets, counts.Keys)
	return nil
}

func restorePostgres(ctx context.Context, dsn string, r *archive.Reader, replace bool, progress func(int64)) (archive.Counts, error) {
	octx, cancel := context.WithTimeout(ctx, time.Minute)
	db, err := postgres.Open(octx, dsn, postgres.Options{})
	cancel()
	if err != nil {
		return archive.Counts{}, err
	}
	defer db.Close()
	return db.Restore(ctx, r, replace, progress)
}

// isDSN says whether a -from or -to names a PostgreSQL database rather
// than a bbolt file.
func isDSN(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://") || strings.Contains(s, "=")
}

// backuper is a store a copy reads.
type backuper interface {
	Backup(ctx context.Context, w *archive.Writer) error
	BackupSource() byte
	Close() error
}

func openSource(ctx context.Context, src string) (backuper, error) {
	if isDSN(src) {
		octx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		return postgres.Open(octx, src, postgres.Options{})
	}
	if _, err := os.Stat(src); err != nil {
		return nil, err
	}
	return bolt.Open(src, bolt.Options{})
}

// summarize backs b up through a pipe into a Summary.
func summarize(ctx context.Context, b backuper) (backup.Summary, error) {
	pr, pw := io.Pipe()
	written := make(chan struct{})
	go func() {
		defer close(written)
		pw.CloseWithError(writeArchive(ctx, b, pw))
	}()
	var s backup.Summary
	r, err := archive.NewReader(pr)
	if err == nil {
		s, err = backup.Summarize(r)
	}
	pr.CloseWithError(errors.New("summary ended"))
	<-written
	return s, err
}

// writeArchive writes b's whole archive to w.
func writeArchive(ctx context.Context, b backuper, w io.Writer) error {
	aw, err := archive.NewWriter(w, archive.Header{Taken: time.Now(), Source: b.BackupSource()})
	if err != nil {
		return err
	}
	if err := b.Backup(ctx, aw); err != nil {
		return err
	}
	return aw.Close()
}

// runCopy is "sketchd copy".
func runCopy(ctx context.Context, args []string, stdout, term io.Writer) error {
	fs := flagSet("copy")
	from := fs.String("from", "", "the stopped source: a bbolt data file, or a PostgreSQL connection string or URL")
	to := fs.String("to", "", "the empty target: a bbolt data file (created), or a PostgreSQL connection string or URL")
	if help, err := parseSub(fs, "copy", copyUsage, args, stdout); help || err != nil {
		return err
	}
	if *from == "" || *to == "" {
		return errors.New("copy: -from and -to are required (sketchd copy -h lists the flags)")
	}
	if !isDSN(*from) && !isDSN(*to) && filepath.Clean(*from) == filepath.Clean(*to) {
		return errors.New("copy: -from and -to name the same file")
	}
	src, err := openSource(ctx, *from)
	if err != nil {
		return fmt.Errorf("copy: opening the source: %w", err)
	}
	defer src.Close()

	pr, pw := io.Pipe()
	written := make(chan struct{})
	go func() {
		defer close(written)
		pw.CloseWithError(writeArchive(ctx, src, pw))
	}()
	p := newProgress(term, "copying")
	r, err := archive.NewReader(&countingReader{r: pr, fn: p.update})
	var counts archive.Counts
	if err == nil {
		if isDSN(*to) {
			counts, err = restorePostgres(ctx, *to, r, false, nil)
		} else {
			counts, err = bolt.Restore(*to, r, false, bolt.Options{}, nil)
		}
	}
	pr.CloseWithError(errors.New("copy ended"))
	<-written // the source's backup ends (its read transaction too)
	if err != nil {
		return fmt.Errorf("copy: %w; the target was left as it was", err)
	}
	p.done(counts)

	// Verify: both sides read again and compared.
	want, err := summarize(ctx, src)
	if err != nil {
		return fmt.Errorf("copy: reading the source again: %w", err)
	}
	dst, err := openSource(ctx, *to)
	if err != nil {
		return fmt.Errorf("copy: opening the target to verify it: %w", err)
	}
	got, err := summarize(ctx, dst)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("copy: reading the target to verify it: %w", err)
	}
	if got != want {
		return fmt.Errorf("copy: the target differs from the source: %d sketches, %d series, %d buckets, %d keys, digest %x; the source has %d, %d, %d, %d, digest %x (was the source written to during the copy?)",
			got.Counts.Sketches, got.Counts.Series, got.Counts.Buckets, got.Counts.Keys, got.Digest,
			want.Counts.Sketches, want.Counts.Series, want.Counts.Buckets, want.Counts.Keys, want.Digest)
	}
	fmt.Fprintf(stdout, "copy: copied and verified %d sketches, %d series, %d buckets, %d idempotency keys (digest %x)\n",
		got.Counts.Sketches, got.Counts.Series, got.Counts.Buckets, got.Counts.Keys, got.Digest[:8])
	return nil
}
