package client

import (
	"context"
	"net/http"
	"time"
)

// Periods of a retention table.
const (
	PeriodDay   = "P1D"
	PeriodWeek  = "P1W"
	PeriodMonth = "P1M"
)

// RetentionRequest asks for a retention table: the sets are the users
// active in consecutive periods from Start (a day, Monday or month edge
// in the series' zone), either the ranges of Series or one sketch a
// period named by Sketches, a pattern with {date} (2006-01-02), {week}
// (2006-W01) or {month} (2006-01). Cohorts rows (at most 60), each with
// Periods cells after it (at most 60).
type RetentionRequest struct {
	Series   string    `json:"series,omitempty"`
	Sketches string    `json:"sketches,omitempty"`
	Period   string    `json:"period"`
	Start    time.Time `json:"start"`
	Cohorts  int       `json:"cohorts"`
	Periods  int       `json:"periods"`
	// Method is the intersection estimator: "" (the MLE), "mle" or
	// "inclusion_exclusion".
	Method string `json:"method,omitempty"`
}

// Retention is a retention table. Cohorts that have not begun are left
// out, as are the cells of periods that have not begun; Warnings say so
// and name a period in progress.
type Retention struct {
	Period   string      `json:"period"`
	Cohorts  []CohortRow `json:"cohorts"`
	Warnings []string    `json:"warnings"`
}

// CohortRow is one cohort: the users active in [Start, End), and the
// cells of the periods after it.
type CohortRow struct {
	Label string          `json:"label"`
	Start time.Time       `json:"start"`
	End   time.Time       `json:"end"`
	Size  SizeEstimate    `json:"size"`
	Cells []RetentionCell `json:"cells"`
}

// SizeEstimate is a set's size with its one-sigma error (0 when exact)
// and bounds.
type SizeEstimate struct {
	Estimate float64 `json:"estimate"`
	Error    float64 `json:"error"`
	Lower    float64 `json:"lower"`
	Upper    float64 `json:"upper"`
}

// RatioEstimate is a share or conversion in [0, 1] with its one-sigma
// error and bounds; Reliable is the verdict of the intersections it is
// made of.
type RatioEstimate struct {
	Estimate float64 `json:"estimate"`
	Error    float64 `json:"error"`
	Lower    float64 `json:"lower"`
	Upper    float64 `json:"upper"`
	Reliable bool    `json:"reliable"`
}

// CellEstimate is an intersection as a retention cell or funnel step
// shows it: read Verdict (or Reliable) and Warnings before the numbers,
// as for Intersection.
type CellEstimate struct {
	Estimate float64 `json:"estimate"`
	Error    float64 `json:"error"`
	Lower    float64 `json:"lower"`
	Upper    float64 `json:"upper"`
	Reliable bool    `json:"reliable"` // Verdict is VerdictReliable or VerdictExact
	Spurious bool    `json:"spurious"`
	// Verdict is one of the Verdict constants, the intersection's (a
	// funnel's first step: its count judged by its bounds); VerdictText
	// says it for people.
	Verdict     string   `json:"verdict"`
	VerdictText string   `json:"verdict_text"`
	Method      string   `json:"method"`
	Warnings    []string `json:"warnings"`
	// Within names the set that lies inside the others as far as the
	// errors tell (a step every user of which reached the steps before);
	// "" otherwise.
	Within string `json:"within,omitempty"`
}

// RetentionCell is |cohort ∩ active Offset periods later| (the period
// starting at Start), and its Share of the cohort.
type RetentionCell struct {
	Offset int       `json:"offset"`
	Start  time.Time `json:"start"`
	CellEstimate
	Share RatioEstimate `json:"share"`
}

// Retention asks for a retention table (POST /v1/retention). It is
// retried: it changes nothing.
func (c *Client) Retention(ctx context.Context, req RetentionRequest) (*Retention, error) {
	cl, err := jsonCall(http.MethodPost, "/v1/retention", req, true, http.StatusOK)
	if err != nil {
		return nil, err
	}
	return into[Retention](ctx, c, cl)
}

// FunnelRequest asks for a funnel of 2 to 8 ordered steps, sketches or
// series ranges.
type FunnelRequest struct {
	Steps  []Operand `json:"steps"`
	Method string    `json:"method,omitempty"`
}

// Funnel is a funnel's steps, in order.
type Funnel struct {
	Steps    []FunnelStep `json:"steps"`
	Warnings []string     `json:"warnings"`
}

// FunnelStep is the users of every step up to this one, with the
// conversion from the previous step and from the first (nil for the
// first step, whose Method is "").
type FunnelStep struct {
	Label string `json:"label"`
	CellEstimate
	Conversion *RatioEstimate `json:"conversion,omitempty"`
	Overall    *RatioEstimate `json:"overall,omitempty"`
}

// Funnel asks for a funnel (POST /v1/funnel). It is retried: it changes
// nothing.
func (c *Client) Funnel(ctx context.Context, req FunnelRequest) (*Funnel, error) {
	cl, err := jsonCall(http.MethodPost, "/v1/funnel", req, true, http.StatusOK)
	if err != nil {
		return nil, err
	}
	return into[Funnel](ctx, c, cl)
}
