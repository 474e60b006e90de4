package server

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/sketchd/sketchd/internal/cohort"
	"github.com/sketchd/sketchd/internal/series"
	"github.com/sketchd/sketchd/internal/sketch"
)

// retentionRequest is the body of POST /v1/retention: the sets of
// consecutive periods, from a series' ranges or from one sketch a period
// named by a pattern, and the table's shape.
type retentionRequest struct {
	Series   string `json:"series"`
	Sketches string `json:"sketches"`
	Period   string `json:"period"`
	Start    string `json:"start"`
	Cohorts  int    `json:"cohorts"`
	Periods  int    `json:"periods"`
	Method   string `json:"method"`
}

// periodLevels are the periods a table may have, with the series level
// whose edges they must start on.
var periodLevels = map[string]series.Level{"P1D": series.Day, "P1W": series.Week, "P1M": series.Month}

// handleRetention answers a retention table: for each cohort (the users
// active in one period) the users active again 1.. periods later, each
// cell with its estimate, error, bounds, share of the cohort and verdict
// (internal/cohort).
func (s *Server) handleRetention(w http.ResponseWriter, r *http.Request) error {
	if _, err := query(r); err != nil {
		return err
	}
	var req retentionRequest
	if err := s.decodeJSON(w, r, &req, false); err != nil {
		return err
	}
	level, ok := periodLevels[req.Period]
	if !ok {
		return sketch.Errorf(sketch.Invalid, "period must be P1D, P1W or P1M, not %q", clip(req.Period))
	}
	start, err := time.Parse(time.RFC3339, req.Start)
	if err != nil {
		return sketch.Errorf(sketch.Invalid, "start %q is not an RFC 3339 time, like 2026-11-02T00:00:00Z", clip(req.Start))
	}
	if req.Cohorts < 1 || req.Cohorts > cohort.MaxCohorts || req.Periods < 1 || req.Periods > cohort.MaxOffsets {
		return sketch.Errorf(sketch.Invalid, "cohorts must be 1 to %d and periods 1 to %d; got %d and %d", cohort.MaxCohorts, cohort.MaxOffsets, req.Cohorts, req.Periods)
	}
	method, err := sketch.ParseMethod(req.Method)
	if err != nil {
		return err
	}
	period, err := series.ParseField("period", req.Period)
	if err != nil {
		return err
	}
	var sets []cohort.Set
	var spans [][2]time.Time
	var warnings []string
	now := time.Now()
	switch {
	case (req.Series == "") == (req.Sketches == ""):
		return sketch.Errorf(sketch.Invalid, `name either "series" (a series whose ranges are the periods) or "sketches" (a name pattern with {date}, {week} or {month}, one sketch a period)`)
	case req.Series != "":
		if err := sketch.ValidateName(req.Series); err != nil {
			return sketch.Errorf(sketch.Invalid, "series: %s", err.(*sketch.Error).Detail)
		}
		if err := s.allowNames(r.Context(), "series", req.Series); err != nil {
			return err
		}
		sets, spans, warnings, err = s.seriesPeriods(r.Context(), req.Series, level, period, start, req.Cohorts+req.Periods, now)
	default:
		sets, spans, warnings, err = s.sketchPeriods(r.Context(), req.Sketches, period, start, req.Cohorts+req.Periods, now)
	}
	if err != nil {
		return err
	}
	cohorts := min(req.Cohorts, len(sets))
	if cohorts == 0 {
		return sketch.Errorf(sketch.Unprocessable, "the first period starts %s, after the server's clock (%s): no cohort has begun", start.Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	if cohorts < req.Cohorts {
		warnings = append(warnings, fmt.Sprintf("%d of the %d cohorts have begun; the table has %d rows", cohorts, req.Cohorts, cohorts))
	}
	tb, err := cohort.Retention(sets, cohorts, req.Periods, method)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, retentionDTO(req.Period, tb, spans, warnings))
}

// seriesPeriods reads n consecutive periods of a series, from start, as
// the union of each one's buckets, in one view of the series and within
// one budget of planned buckets. Periods that start after now are left
// out; one in progress is read with a warning. A period the series can
// only answer for another range (its finer buckets expired) is 422.
func (s *Server) seriesPeriods(ctx context.Context, name string, level series.Level, period series.Duration, start time.Time, n int, now time.Time) ([]cohort.Set, [][2]time.Time, []string, error) {
	ss, err := s.seriesStore()
	if err != nil {
		return nil, nil, nil, err
	}
	b := s.budget()
	first := *b
	var spans [][2]time.Time
	var warnings []string
	var sets []cohort.Set
	err = ss.ViewSeries(ctx, name, func(spec *series.Spec) ([]series.Run, error) {
		*b, spans, warnings = first, nil, nil
		loc := spec.Location()
		if !level.Aligned(start, loc) {
			return nil, sketch.Errorf(sketch.Invalid, "start %s is not the start of a %s in the series' zone %s; the %s holding it starts at %s", start.Format(time.RFC3339), level, spec.TZ, level, level.Start(start, loc).Format(time.RFC3339))
		}
		var runs []series.Run
		for j := range n {
			from, to := period.AddTo(start.In(loc), j), period.AddTo(start.In(loc), j+1)
			if from.After(now) {
				break
			}
			p, err := spec.PlanWithin(from, to, now, b)
			if err != nil {
				return nil, sketch.Prefixed(err, fmt.Sprintf("period %d: ", j))
			}
			if !p.From.Equal(from) || !p.To.Equal(to) {
				return nil, sketch.Errorf(sketch.Unprocessable, "period %d [%s, %s) can only be answered as [%s, %s) (%s): start later, or ask for a coarser period", j, from.Format(time.RFC3339), to.Format(time.RFC3339), p.From.Format(time.RFC3339), p.To.Format(time.RFC3339), strings.Join(p.Warnings, "; "))
			}
			if to.After(now) {
				warnings = append(warnings, fmt.Sprintf("period %d [%s, %s) is in progress: its sets hold the users seen so far", j, from.Format(time.RFC3339), to.Format(time.RFC3339)))
			}
			spans = append(spans, [2]time.Time{from, to})
			runs = append(runs, p.Runs...)
		}
		return runs, nil
	}, func(spec *series.Spec, bs []series.Bucket) error {
		parts := make([][]series.Bucket, len(spans))
		for _, bk := range bs {
			j, found := slices.BinarySearchFunc(spans, bk.Start, func(sp [2]time.Time, t time.Time) int {
				if t.Before(sp[0]) {
					return 1
				}
				if !t.Before(sp[1]) {
					return -1
				}
				return 0
			})
			if found {
				parts[j] = append(parts[j], bk)
			}
		}
		sets = make([]cohort.Set, len(spans))
		for j, part := range parts {
			u, err := unionOf(spec, part)
			if err != nil {
				return err
			}
			sets[j] = cohort.Set{Label: fmt.Sprintf("%s[%s,%s)", name, spans[j][0].Format(time.RFC3339), spans[j][1].Format(time.RFC3339)), Sketch: u}
		}
		return nil
	})
	return sets, spans, warnings, err
}

// sketchPeriods reads n consecutive periods from one sketch each, named
// by pattern with the period's start (in start's offset): {date}
// 2006-01-02, {week} the ISO week 2006-W01, {month} 2006-01. Periods that
// start after now are left out; a missing sketch for one that has begun
// is NotFound.
func (s *Server) sketchPeriods(ctx context.Context, pattern string, period series.Duration, start time.Time, n int, now time.Time) ([]cohort.Set, [][2]time.Time, []string, error) {
	if !strings.Contains(pattern, "{date}") && !strings.Contains(pattern, "{week}") && !strings.Contains(pattern, "{month}") {
		return nil, nil, nil, sketch.Errorf(sketch.Invalid, "sketches %q names no period: put {date}, {week} or {month} where the period's start goes, like \"dau:{date}\"", clip(pattern))
	}
	var names []string
	var spans [][2]time.Time
	var warnings []string
	for j := range n {
		from, to := period.AddTo(start, j), period.AddTo(start, j+1)
		if from.After(now) {
			break
		}
		y, wk := from.ISOWeek()
		name := strings.NewReplacer("{date}", from.Format("2006-01-02"), "{week}", fmt.Sprintf("%04d-W%02d", y, wk), "{month}", from.Format("2006-01")).Replace(pattern)
		if err := sketch.ValidateName(name); err != nil {
			return nil, nil, nil, sketch.Errorf(sketch.Invalid, "sketches: period %d's name %q: %s", j, clip(name), err.(*sketch.Error).Detail)
		}
		if to.After(now) {
			warnings = append(warnings, fmt.Sprintf("period %d (%s) is in progress: its sketch holds the users seen so far", j, name))
		}
		names, spans = append(names, name), append(spans, [2]time.Time{from, to})
	}
	// Every period's sketch, checked before any is read.
	if err := s.allowNames(ctx, "sketches", names...); err != nil {
		return nil, nil, nil, err
	}
	var sets []cohort.Set
	err := s.store.View(ctx, names, func(sks []sketch.Sketch) error {
		sets = make([]cohort.Set, len(sks))
		for i, sk := range sks {
			sets[i] = cohort.Set{Label: names[i], Sketch: sk.Clone()}
		}
		return nil
	})
	return sets, spans, warnings, err
}

// funnelRequest is the body of POST /v1/funnel.
type funnelRequest struct {
	Steps  []operand `json:"steps"`
	Method string    `json:"method"`
}

// handleFunnel answers a funnel: for each of 2..8 ordered steps (sketches
// or series ranges), the users of every step so far with its error,
// bounds and verdict, and the conversion from the previous step and from
// the first, with their errors.
func (s *Server) handleFunnel(w http.ResponseWriter, r *http.Request) error {
	if _, err := query(r); err != nil {
		return err
	}
	var req funnelRequest
	if err := s.decodeJSON(w, r, &req, false); err != nil {
		return err
	}
	if _, err := checkOperands("steps", req.Steps, cohort.MinSteps, cohort.MaxSteps); err != nil {
		return err
	}
	if err := s.allowOperands(r.Context(), "steps", req.Steps); err != nil {
		return err
	}
	method, err := sketch.ParseMethod(req.Method)
	if err != nil {
		return err
	}
	sks, warnings, err := s.resolve(r.Context(), req.Steps)
	if err != nil {
		return err
	}
	sets := make([]cohort.Set, len(sks))
	for i, sk := range sks {
		sets[i] = cohort.Set{Label: req.Steps[i].label(), Sketch: sk}
	}
	steps, err := cohort.Funnel(sets, method)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, funnelDTO(steps, warnings))
}

// sizeDTO is a set's estimated size with its one-sigma error and bounds.
type sizeDTO struct {
	Estimate float64 `json:"estimate"`
	Error    float64 `json:"error"`
	Lower    float64 `json:"lower"`
	Upper    float64 `json:"upper"`
}

// ratioDTO is a share or conversion with its error, bounds and verdict.
type ratioDTO struct {
	Estimate float64 `json:"estimate"`
	Error    float64 `json:"error"`
	Lower    float64 `json:"lower"`
	Upper    float64 `json:"upper"`
	Reliable bool    `json:"reliable"`
}

// cellDTO is an intersection as a retention cell or funnel step shows it.
type cellDTO struct {
	Estimate float64 `json:"estimate"`
	Error    float64 `json:"error"`
	Lower    float64 `json:"lower"`
	Upper    float64 `json:"upper"`
	Reliable bool    `json:"reliable"`
	Spurious bool    `json:"spurious"`
	// Verdict and VerdictText are the intersection's, as POST
	// /v1/intersection gives them; the console shows them as they are.
	Verdict     string   `json:"verdict"`
	VerdictText string   `json:"verdict_text"`
	Method      string   `json:"method"`
	Warnings    []string `json:"warnings"`
	// Within names the set that lies inside the others as far as the
	// errors tell (a step all of whose users reached the steps before).
	Within string `json:"within,omitempty"`
}

type retentionCell struct {
	Offset int       `json:"offset"`
	Start  time.Time `json:"start"`
	cellDTO
	Share ratioDTO `json:"share"`
}

type retentionRow struct {
	Label string          `json:"label"`
	Start time.Time       `json:"start"`
	End   time.Time       `json:"end"`
	Size  sizeDTO         `json:"size"`
	Cells []retentionCell `json:"cells"`
}

type retentionResponse struct {
	Period   string         `json:"period"`
	Cohorts  []retentionRow `json:"cohorts"`
	Warnings []string       `json:"warnings"`
}

type funnelStep struct {
	Label string `json:"label"`
	cellDTO
	Conversion *ratioDTO `json:"conversion,omitempty"`
	Overall    *ratioDTO `json:"overall,omitempty"`
}

type funnelResponse struct {
	Steps    []funnelStep `json:"steps"`
	Warnings []string     `json:"warnings"`
}

func sizeOut(z cohort.Size) sizeDTO {
	return sizeDTO{Estimate: finite(z.Estimate), Error: finite(z.Error), Lower: finite(z.Lower), Upper: finite(z.Upper)}
}

func ratioOut(q cohort.Ratio) ratioDTO {
	return ratioDTO{Estimate: finite(q.Estimate), Error: finite(q.Error), Lower: finite(q.Lower), Upper: finite(q.Upper), Reliable: q.Reliable}
}

func cellOut(x sketch.Intersection) cellDTO {
	c := cellDTO{Estimate: finite(x.Estimate), Error: finite(x.Error), Lower: finite(x.Lower), Upper: finite(x.Upper),
		Reliable: x.Reliable, Spurious: x.Spurious, Verdict: string(x.Verdict), VerdictText: x.VerdictText, Method: string(x.Method), Warnings: x.Warnings,
		Within: x.Within}
	if c.Warnings == nil {
		c.Warnings = []string{}
	}
	return c
}

func retentionDTO(period string, tb cohort.Table, spans [][2]time.Time, warnings []string) retentionResponse {
	resp := retentionResponse{Period: period, Cohorts: make([]retentionRow, len(tb.Rows)), Warnings: append([]string{}, warnings...)}
	for i, row := range tb.Rows {
		out := retentionRow{Label: row.Label, Start: spans[i][0], End: spans[i][1], Size: sizeOut(row.Size), Cells: []retentionCell{}}
		for _, c := range row.Cells {
			out.Cells = append(out.Cells, retentionCell{Offset: c.Offset, Start: spans[i+c.Offset][0], cellDTO: cellOut(c.Intersection), Share: ratioOut(c.Share)})
		}
		resp.Cohorts[i] = out
	}
	return resp
}

func funnelDTO(steps []cohort.Step, warnings []string) funnelResponse {
	resp := funnelResponse{Steps: make([]funnelStep, len(steps)), Warnings: append([]string{}, warnings...)}
	for k, st := range steps {
		out := funnelStep{Label: st.Label}
		if st.Intersection != nil {
			out.cellDTO = cellOut(*st.Intersection)
		} else {
			out.cellDTO = cellDTO{Reliable: true, Warnings: []string{}}
		}
		out.Estimate, out.Error, out.Lower, out.Upper = finite(st.Reach.Estimate), finite(st.Reach.Error), finite(st.Reach.Lower), finite(st.Reach.Upper)
		if st.Intersection == nil {
			// The first step is one set's count: judged by its bounds.
			v, text := sketch.JudgeBounds(st.Reach.Estimate, st.Reach.Lower, st.Reach.Upper, st.Reach.Error == 0)
			out.Verdict, out.VerdictText = string(v), text
			out.Reliable = v == sketch.VerdictReliable || v == sketch.VerdictExact
		}
		out.Warnings = append([]string{}, st.Warnings...)
		if st.Conversion != nil {
			c, o := ratioOut(*st.Conversion), ratioOut(*st.Overall)
			out.Conversion, out.Overall = &c, &o
		}
		resp.Steps[k] = out
	}
	return resp
}
