// Command sketchload measures how fast a sketchd server ingests ids: it
// drives POST /v1/sketches/{name}/add from -c concurrent connections with
// batches of ids in any of the add formats (JSON ints or strings, NDJSON,
// text, big-endian int64), closed loop or open loop at a fixed -rate, and
// prints ids/s, requests/s, latency percentiles from a log-linear
// histogram, failures by status and bytes sent (as JSON with -json).
//
// With -redis host:port it runs the same workload against a redis-server
// as pipelined PFADD commands written as RESP straight onto the connection,
// which makes the Redis comparison of the performance bars apples to
// apples (scripts/bench-vs-redis.sh runs both).
//
// Bodies are built before the clock starts (-prebuilt) and buffers are
// reused, so the generator spends its CPU sending rather than encoding.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return
	case errors.Is(err, ErrUsage):
		os.Exit(2) // the flag package has explained
	default:
		fmt.Fprintf(os.Stderr, "sketchload: %v\n", err)
		os.Exit(1)
	}
}
