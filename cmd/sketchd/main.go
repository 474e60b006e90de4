// Command sketchd serves named sketches over HTTP: HyperLogLog (in
// postgresql-hll's storage format), Count-Min, DataSketches' theta,
// frequency, HLL, CPC and KLL sketches, ZetaSketch's HLL++, airlift's
// HyperLogLog and Bloom filters, single or as series over time, durable
// in a bbolt file or in PostgreSQL. With no arguments it listens on :8080 and
// keeps its data in ./sketchd.db; every flag also reads SKETCHD_<FLAG>
// (upper case, - as _). SIGINT and SIGTERM drain requests, commit and exit
// 0; a second one exits at once. SIGHUP rereads the token file and the
// TLS certificate, key and client CAs (-tls-cert, -tls-key, -tls-client-ca).
// "sketchd check -data FILE" checks a stopped store's files offline
// (check.go); "sketchd backup", "restore" and "copy" save, load and move
// a store through its backup archive (archive_cmds.go, docs/backup.md).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"

	// Series bucket edges need IANA time zones, and the static image has
	// no /usr/share/zoneinfo.
	_ "time/tzdata"
)

// Set at build time: -ldflags "-X main.version=... -X main.revision=...".
var version, revision string

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go exitOnSecondSignal(ctx, stop)
	h := host{environ: os.Environ(), terminal: isTerminal(os.Stdin), stderrTerminal: isTerminal(os.Stderr)}
	if err := runOn(ctx, h, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "sketchd:", err)
		code := 1
		if ee := (*exitError)(nil); errors.As(err, &ee) {
			code = ee.code
		}
		os.Exit(code)
	}
}

// exitOnSecondSignal waits for the first SIGINT or SIGTERM (which ends
// ctx and starts the drain), then exits at once on a second one: whoever
// presses Ctrl-C twice does not want to wait. What was acknowledged is
// durable already; the write-ahead log is replayed at the next start.
func exitOnSecondSignal(ctx context.Context, stop func()) {
	<-ctx.Done()
	second := make(chan os.Signal, 1)
	signal.Notify(second, os.Interrupt, syscall.SIGTERM)
	stop()
	s := <-second
	fmt.Fprintf(os.Stderr, "sketchd: second %v: exiting without draining (acknowledged writes are durable)\n", s)
	code := 1
	if n, ok := s.(syscall.Signal); ok {
		code = 128 + int(n)
	}
	os.Exit(code)
}

// isTerminal reports whether f is a terminal (not a pipe, a file or
// /dev/null, as under systemd, Docker or Kubernetes).
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
