package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// outcome is what a worker reports for one unit of work: one HTTP request,
// or one pipelined round trip of up to -pipeline Redis commands.
type outcome struct {
	requests int   // requests (commands) in the unit
	ok       int   // of which succeeded
	ids      int64 // ids carried by the successful ones
	idsSent  int64 // ids carried by all of them
	bytes    int64 // body bytes written
	accepted int64 // sum of "accepted" in HTTP answers
	failKey  string
	backoff  time.Duration // pause asked for by the server (Retry-After)
	canceled bool          // the run's context ended mid-unit: not counted
}

// worker performs units of work. Each is used by one goroutine only.
type worker interface {
	// do performs unit k of the phase; n is the number of requests in it
	// (always 1 for HTTP; up to the pipeline depth for Redis). batch is the
	// run-wide index of the unit, stable across warmup and measurement, for
	// picking bodies and sequential ids.
	do(ctx context.Context, batch uint64, n int) outcome
	close()
}

// counters are the live totals the progress line reads while a phase runs.
type counters struct {
	requests atomic.Int64
	ids      atomic.Int64
	failed   atomic.Int64
}

// tally is one worker's share of a phase's result.
type tally struct {
	hist     *histogram
	requests int64
	ok       int64
	ids      int64
	idsSent  int64
	bytes    int64
	accepted int64
	failures map[string]int64
}

func newTally() *tally { return &tally{hist: newHistogram(), failures: map[string]int64{}} }

func (t *tally) add(o *tally) {
	t.hist.merge(o.hist)
	t.requests += o.requests
	t.ok += o.ok
	t.ids += o.ids
	t.idsSent += o.idsSent
	t.bytes += o.bytes
	t.accepted += o.accepted
	for k, v := range o.failures {
		t.failures[k] += v
	}
}

// phase describes one timed stretch of load (warmup or measurement).
type phase struct {
	duration   time.Duration // 0 = no time limit
	requests   int64         // 0 = no count limit
	unitSize   int           // requests per unit
	rate       float64       // requests/s, 0 = closed loop
	maxBackoff time.Duration
	batchBase  uint64 // run-wide index of this phase's unit 0
	progress   time.Duration
	label      string
}

// phaseResult is a finished phase.
type phaseResult struct {
	tally       *tally
	elapsed     time.Duration
	units       uint64 // units handed out (for the next phase's batchBase)
	interrupted bool
}

// runPhase drives workers until the phase's limits are reached or ctx ends.
//
// Closed loop (rate 0): every worker sends its next unit as soon as the
// previous one is answered. Open loop (rate > 0): unit k is due at
// start + k·unitSize/rate; a free worker takes the next unit, waits for its
// due time and sends it, and latency is measured from the due time, so
// a server that falls behind shows its queueing delay instead of slowing the
// schedule down (no coordinated omission). With -duration the run stops
// handing out units at the deadline and waits for those in flight.
func runPhase(ctx context.Context, p phase, workers []worker, stderr io.Writer) phaseResult {
	var (
		next    atomic.Uint64
		live    counters
		stop    = make(chan struct{})
		stopped sync.Once
	)
	halt := func() { stopped.Do(func() { close(stop) }) }
	limitUnits := uint64(0)
	if p.requests > 0 {
		limitUnits = uint64((p.requests + int64(p.unitSize) - 1) / int64(p.unitSize))
	}
	var interval float64 // nanoseconds between unit due times
	if p.rate > 0 {
		interval = float64(time.Second) * float64(p.unitSize) / p.rate
	}

	start := time.Now()
	if p.duration > 0 {
		t := time.AfterFunc(p.duration, halt)
		defer t.Stop()
	}
	progressDone := make(chan struct{})
	if p.progress > 0 && stderr != nil {
		go reportProgress(p, &live, start, stop, progressDone, stderr)
	} else {
		close(progressDone)
	}

	tallies := make([]*tally, len(workers))
	var wg sync.WaitGroup
	for i, w := range workers {
		t := newTally()
		tallies[i] = t
		wg.Go(func() {
			var timer *time.Timer
			for {
				select {
				case <-stop:
					return
				case <-ctx.Done():
					return
				default:
				}
				k := next.Add(1) - 1
				if limitUnits > 0 && k >= limitUnits {
					return
				}
				n := p.unitSize
				if limitUnits > 0 && k == limitUnits-1 {
					n = int(p.requests - int64(k)*int64(p.unitSize))
				}
				due := time.Now()
				if interval > 0 {
					due = start.Add(time.Duration(float64(k) * interval))
					if wait := time.Until(due); wait > 0 {
						if timer == nil {
							timer = time.NewTimer(wait)
						} else {
							timer.Reset(wait)
						}
						select {
						case <-timer.C:
						case <-stop:
							return
						case <-ctx.Done():
							return
						}
					}
				}
				o := w.do(ctx, p.batchBase+k, n)
				lat := time.Since(due)
				if o.canceled {
					return
				}
				t.requests += int64(o.requests)
				t.ok += int64(o.ok)
				t.ids += o.ids
				t.idsSent += o.idsSent
				t.bytes += o.bytes
				t.accepted += o.accepted
				if o.ok > 0 {
					t.hist.recordN(lat, uint64(o.ok))
				}
				failed := o.requests - o.ok
				if failed > 0 {
					t.failures[o.failKey] += int64(failed)
					live.failed.Add(int64(failed))
				}
				live.requests.Add(int64(o.requests))
				live.ids.Add(o.ids)
				if o.backoff > 0 && p.maxBackoff > 0 {
					pause(ctx, stop, min(o.backoff, p.maxBackoff))
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	halt()
	<-progressDone

	total := newTally()
	for _, t := range tallies {
		total.add(t)
	}
	units := next.Load()
	if limitUnits > 0 {
		units = min(units, limitUnits)
	}
	return phaseResult{tally: total, elapsed: elapsed, units: units, interrupted: ctx.Err() != nil}
}

// pause sleeps for d unless the phase or the run ends first.
func pause(ctx context.Context, stop <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-stop:
	case <-ctx.Done():
	}
}

// reportProgress prints a line every p.progress until stop is closed:
// elapsed time, ids/s and requests/s over the last interval, and the errors
// so far.
func reportProgress(p phase, live *counters, start time.Time, stop <-chan struct{}, done chan<- struct{}, stderr io.Writer) {
	defer close(done)
	tick := time.NewTicker(p.progress)
	defer tick.Stop()
	last := start
	var lastReq, lastIDs int64
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			req, ids, failed := live.requests.Load(), live.ids.Load(), live.failed.Load()
			dt := now.Sub(last).Seconds()
			fmt.Fprintf(stderr, "sketchload: %s %6.1fs  %s ids/s  %s req/s  errors %d\n",
				p.label, now.Sub(start).Seconds(),
				groupDigits(float64(ids-lastIDs)/dt), groupDigits(float64(req-lastReq)/dt), failed)
			last, lastReq, lastIDs = now, req, ids
		}
	}
}

// pickSketch chooses the sketch for request (or command) index i: round
// robin, or at random from rng.
func pickSketch(i uint64, n int, random bool, rng *rand.Rand) int {
	if n == 1 {
		return 0
	}
	if random {
		return rng.IntN(n)
	}
	return int(i % uint64(n))
}
