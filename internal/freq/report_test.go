package freq

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sketchd/sketchd/internal/theta"
)

// exactReport is the frequency report computed exactly, as the seed's SQL
// does: count impressions per user, then users and impressions per
// frequency class (the last class holding max or more).
type exactReport struct {
	reach, total float64
	users, impr  []float64 // index k = 1..max
}

func exactAnswer(stream []int64, maxClass int) exactReport {
	perUser := map[int64]int{}
	for _, id := range stream {
		perUser[id]++
	}
	r := exactReport{reach: float64(len(perUser)), total: float64(len(stream)),
		users: make([]float64, maxClass+1), impr: make([]float64, maxClass+1)}
	for _, c := range perUser {
		k := min(c, maxClass)
		r.users[k]++
		r.impr[k] += float64(c)
	}
	return r
}

// TestFrequencyReportExact: while the sketch is exact, every figure of the
// report equals the exact answer and its bounds are tight.
func TestFrequencyReportExact(t *testing.T) {
	stream := impressions(11, 2000, 30)
	s := mustNew(t, DefaultParams())
	for _, id := range stream {
		s.AddInt(id)
	}
	want := exactAnswer(stream, 10)
	r, err := s.FrequencyReport(10, 2)
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, got Interval, want float64) {
		if got.Estimate != want || got.Lower != want || got.Upper != want {
			t.Errorf("%s = %+v, want exactly %v", name, got, want)
		}
	}
	check("reach", r.Reach, want.reach)
	check("impressions", r.Impressions, want.total)
	if len(r.Classes) != 10 || !r.Classes[9].OrMore || r.Classes[8].OrMore {
		t.Fatalf("classes %+v, want 1..9 then 10 or more", r.Classes)
	}
	for _, c := range r.Classes {
		check(fmt.Sprintf("class %d users", c.K), c.Users, want.users[c.K])
		check(fmt.Sprintf("class %d impressions", c.K), c.Impressions, want.impr[c.K])
	}
	for _, bad := range [][2]int{{1, 2}, {MaxClasses + 1, 2}, {10, 0}, {10, 4}} {
		if _, err := s.FrequencyReport(bad[0], bad[1]); !errors.Is(err, ErrParams) {
			t.Errorf("FrequencyReport(%d, %d) = %v, want ErrParams", bad[0], bad[1], err)
		}
	}
}

// TestFrequencyReportCoverage: for populations far larger than the sketch,
// with Zipf-distributed impressions per user, each figure of the report
// (reach, total impressions, users and impressions of each class) lies
// within its stated 2-sd bounds in at least 95% of cases over repeated
// trials. Each user's impressions are added at once (AddHash with a
// count), which leaves the sketch as adding them one by one would; the
// interop tests add shuffled single impressions.
func TestFrequencyReportCoverage(t *testing.T) {
	const (
		trials   = 300
		maxClass = 10
		users    = 30000
	)
	covered, total := 0, 0
	missByClass := map[string]int{}
	for trial := range trials {
		r := rand.New(rand.NewPCG(uint64(100+trial), 7))
		z := rand.NewZipf(r, 1.3, 1, 199)
		s := mustNew(t, Params{LgK: 10})
		want := exactReport{users: make([]float64, maxClass+1), impr: make([]float64, maxClass+1)}
		for u := range users {
			c := z.Uint64() + 1
			s.AddHash(theta.HashInt(int64(trial)<<32|int64(u)), uint32(c))
			k := min(int(c), maxClass)
			want.reach++
			want.total += float64(c)
			want.users[k]++
			want.impr[k] += float64(c)
		}
		if !s.IsEstimationMode() {
			t.Fatal("the sketch should be estimating")
		}
		rep, err := s.FrequencyReport(maxClass, 2)
		if err != nil {
			t.Fatal(err)
		}
		try := func(name string, got Interval, want float64) {
			total++
			if got.Lower <= want && want <= got.Upper {
				covered++
			} else {
				missByClass[name]++
			}
		}
		try("reach", rep.Reach, want.reach)
		try("impressions", rep.Impressions, want.total)
		for _, c := range rep.Classes {
			try(fmt.Sprintf("users %d", c.K), c.Users, want.users[c.K])
			try(fmt.Sprintf("impressions %d", c.K), c.Impressions, want.impr[c.K])
		}
	}
	rate := float64(covered) / float64(total)
	t.Logf("2-sd bounds covered %d of %d figures (%.1f%%); misses by figure: %v", covered, total, 100*rate, missByClass)
	if rate < 0.95 {
		t.Errorf("coverage %.1f%% below 95%%", 100*rate)
	}
}
