package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestRunSmallGrid runs a tiny grid: one row per cell, with the exact
// intersection size, and a summary line.
func TestRunSmallGrid(t *testing.T) {
	var out, errs bytes.Buffer
	err := run([]string{"-runs", "3", "-small", "2000", "-ratios", "1,2", "-overlaps", "0.5,1", "-lgk", "8", "-log2m", "11", "-workers", "1"}, &out, &errs)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errs.String())
	}
	for _, want := range []string{"| 1 | 0.5 | 1000 |", "| 1 | 1 | 2000 |", "| 2 | 0.5 | 1000 |", "| 2 | 1 | 2000 |", "Over all 12 observations"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if err := run([]string{"-lgk", "30"}, &out, &errs); err == nil {
		t.Error("run with lg_k 30 succeeded")
	}
}
