// Command sketchd serves named HyperLogLog and Count-Min sketches over
// HTTP, durable in a bbolt file. With no arguments it listens on :8080 and
// keeps its data in ./sketchd.db; every flag also reads SKETCHD_<FLAG>
// (upper case, - as _). SIGINT and SIGTERM drain requests, commit and exit
// 0; SIGHUP reloads the token file. "sketchd check -data FILE" checks a
// stopped store's files offline (check.go).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	// Series bucket edges need IANA time zones, and the static image has
	// no /usr/share/zoneinfo.
	_ "time/tzdata"
)

// Set at build time: -ldflags "-X main.version=... -X main.revision=...".
var version, revision string

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "sketchd:", err)
		code := 1
		if ee := (*exitError)(nil); errors.As(err, &ee) {
			code = ee.code
		}
		os.Exit(code)
	}
}
