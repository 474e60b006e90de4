package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
)

// ErrUsage is wrapped by errors in the command line that the flag package
// has already explained on stderr.
var ErrUsage = errors.New("usage")

// ErrNoSuccess is returned (after the result is printed) when the measured
// run completed requests but none succeeded, so scripts fail loudly.
var ErrNoSuccess = errors.New("no request succeeded")

// run is the whole command: parse args, set up the target, build bodies,
// warm up, measure and print. It returns after ctx ends with the result of
// what ran until then.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseConfig(args, stderr)
	if err != nil {
		return err
	}
	if cfg.serveDiscard != "" {
		ln, err := net.Listen("tcp", cfg.serveDiscard)
		if err != nil {
			return err
		}
		return serveDiscard(ctx, ln, stderr)
	}

	var workers []worker
	unitSize := 1
	defer func() {
		for _, w := range workers {
			w.close()
		}
	}()
	switch {
	case cfg.postgres != "":
		d := newPGDriver(cfg)
		if err := d.setup(ctx); err != nil {
			return err
		}
		for i := range cfg.conc {
			w, err := d.newWorker(ctx, i)
			if err != nil {
				return err
			}
			workers = append(workers, w)
		}
		d.buildPool(cfg.prebuilt)
	case cfg.redis != "":
		unitSize = cfg.pipeline
		d := newRedisDriver(cfg)
		for i := range cfg.conc {
			w, err := d.newWorker(ctx, i)
			if err != nil {
				return err
			}
			workers = append(workers, w)
		}
		d.buildPool(cfg.prebuilt)
	default:
		d := newHTTPDriver(cfg)
		if cfg.create {
			if err := d.create(ctx); err != nil {
				return err
			}
		}
		for i := range cfg.conc {
			workers = append(workers, d.newWorker(i))
		}
		d.buildPool(cfg.prebuilt)
	}

	progress := cfg.progress
	var base uint64
	if cfg.warmup > 0 {
		r := runPhase(ctx, phase{
			duration: cfg.warmup, unitSize: unitSize, rate: cfg.rate,
			maxBackoff: cfg.maxBackoff, progress: progress, label: "warmup",
		}, workers, stderr)
		if r.interrupted {
			return ctx.Err()
		}
		base = r.units
	}
	r := runPhase(ctx, phase{
		duration: cfg.duration, requests: cfg.requests, unitSize: unitSize, rate: cfg.rate,
		maxBackoff: cfg.maxBackoff, batchBase: base, progress: progress, label: "run",
	}, workers, stderr)

	res := newResult(cfg, r)
	if cfg.json {
		err = res.writeJSON(stdout)
	} else {
		err = res.writeText(stdout)
	}
	if err != nil {
		return fmt.Errorf("write result: %w", err)
	}
	if res.Requests > 0 && res.OKRequests == 0 {
		if n := res.Failures["404"]; n > 0 && !cfg.create && cfg.redis == "" && cfg.postgres == "" {
			return fmt.Errorf("%w (%d answered 404: do the sketches exist? -create makes them)", ErrNoSuccess, n)
		}
		return ErrNoSuccess
	}
	return nil
}
