package main

import (
	"log/slog"
	"testing"
	"time"
)

// fakeTrimClock drives a trimmer by hand: timers fire when the test says.
type fakeTrimClock struct {
	now    time.Time
	timers []fakeTimer
	frees  int
	took   time.Duration // what each free takes
}

type fakeTimer struct {
	at time.Time
	fn func()
}

func newFakeTrimmer(c *fakeTrimClock) *trimmer {
	t := newTrimmer(slog.New(slog.DiscardHandler))
	t.now = func() time.Time { return c.now }
	t.free = func() { c.frees++; c.now = c.now.Add(c.took) }
	t.after = func(d time.Duration, fn func()) *time.Timer {
		c.timers = append(c.timers, fakeTimer{c.now.Add(d), fn})
		return time.NewTimer(time.Hour) // stopped by nobody; never fires in a test's time
	}
	return t
}

// advance moves the clock by d, firing the timers due.
func (c *fakeTrimClock) advance(d time.Duration) {
	c.now = c.now.Add(d)
	for len(c.timers) > 0 && !c.timers[0].at.After(c.now) {
		fn := c.timers[0].fn
		c.timers = c.timers[1:]
		fn()
	}
}

// TestTrimmerPace: releases below the threshold add up; a trim runs at
// once when they reach it, the next not before the gap (1 s, or 100
// times what a trim took), and a release during the gap waits for it
// instead of being dropped; releases while a trim is pending do not
// schedule another.
func TestTrimmerPace(t *testing.T) {
	c := &fakeTrimClock{now: time.Unix(1_000_000, 0), took: time.Millisecond}
	tr := newFakeTrimmer(c)
	tr.noteReleased(trimMinBytes / 2)
	c.advance(0)
	if c.frees != 0 {
		t.Fatalf("%d trims after half the threshold, want 0", c.frees)
	}
	tr.noteReleased(trimMinBytes / 2)
	c.advance(0)
	if c.frees != 1 {
		t.Fatalf("%d trims once releases reached the threshold, want 1", c.frees)
	}
	// Within the gap: scheduled for its end, once.
	c.advance(trimMinGap / 4)
	tr.noteReleased(trimMinBytes)
	tr.noteReleased(trimMinBytes)
	if len(c.timers) != 1 {
		t.Fatalf("%d trims scheduled for two releases during the gap, want 1", len(c.timers))
	}
	c.advance(trimMinGap / 2)
	if c.frees != 1 {
		t.Fatalf("%d trims before the gap ended, want 1", c.frees)
	}
	c.advance(trimMinGap / 4)
	if c.frees != 2 {
		t.Fatalf("%d trims after the gap, want 2", c.frees)
	}
	// A slow trim widens the gap to 100 times its length.
	c.took = time.Second
	c.advance(trimMinGap)
	tr.noteReleased(trimMinBytes)
	c.advance(0)
	if c.frees != 3 {
		t.Fatalf("%d trims, want 3", c.frees)
	}
	tr.noteReleased(trimMinBytes)
	c.advance(99 * time.Second)
	if c.frees != 3 {
		t.Fatalf("%d trims 99 s after a trim of 1 s, want 3", c.frees)
	}
	c.advance(time.Second)
	if c.frees != 4 {
		t.Fatalf("%d trims 100 s after a trim of 1 s, want 4", c.frees)
	}
	// Stopped: a pending trim does not run.
	c.took = time.Millisecond
	tr.noteReleased(trimMinBytes)
	tr.stop()
	c.advance(time.Hour)
	if c.frees != 4 {
		t.Fatalf("%d trims after stop, want 4", c.frees)
	}
}
