package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
)

// Candidates are what POST /v1/rank compares with its target: every
// sketch whose name starts with Prefix, or (List) sketch names and
// series ranges, 1 to 100,000 (the server's -max-rank-candidates).
type Candidates struct {
	Prefix string
	List   []Operand
}

// CandidatesWithPrefix returns the candidates named by a prefix.
func CandidatesWithPrefix(prefix string) Candidates { return Candidates{Prefix: prefix} }

// MarshalJSON writes {"prefix": Prefix} or the list.
func (c Candidates) MarshalJSON() ([]byte, error) {
	switch {
	case c.Prefix != "" && c.List != nil:
		return nil, errors.New("client: candidates give a prefix and a list; give one")
	case c.List != nil:
		return json.Marshal(c.List)
	}
	return json.Marshal(struct {
		Prefix string `json:"prefix"`
	}{c.Prefix})
}

// RankOverlapRequest ranks Candidates by their overlap with Target (a
// sketch, or a series range; not a prefix): By "intersection",
// "jaccard" or "containment" (then Direction "target_in_candidate", the
// share of the target in each candidate, or "candidate_in_target"),
// keeping the best Top (1 to 1,000). Method is an hll pair's
// intersection method, as for Intersection ("" for the default).
type RankOverlapRequest struct {
	Target     Operand    `json:"target"`
	Candidates Candidates `json:"candidates"`
	By         string     `json:"by"`
	Direction  string     `json:"direction,omitempty"`
	Top        int        `json:"top"`
	Method     string     `json:"method,omitempty"`
}

// Ranking is the answer of POST /v1/rank: the target's own count, how
// many candidates were compared (Skipped: named but missing; Complete:
// none was), and the best, best first. ToldApart is false when some
// result's bounds overlap the next one's (or, for the last, the best
// candidate left out); Note then says so in words.
type Ranking struct {
	Target    RankingTarget     `json:"target"`
	By        string            `json:"by"`
	Direction string            `json:"direction,omitempty"`
	Method    string            `json:"method"`
	Scanned   int               `json:"scanned"`
	Skipped   int               `json:"skipped"`
	Complete  bool              `json:"complete"`
	Results   []RankedCandidate `json:"results"`
	ToldApart bool              `json:"told_apart"`
	Note      string            `json:"note,omitempty"`
	Warnings  []string          `json:"warnings"`
}

// RankingTarget is the target's own count with its bounds at two
// standard deviations.
type RankingTarget struct {
	Name  string  `json:"name"`
	Count float64 `json:"count"`
	Lower float64 `json:"lower"`
	Upper float64 `json:"upper"`
}

// RankedCandidate is one result: the measure ranked by (Estimate, its
// one-sigma StdError and bounds), the candidate's own Count, the pair's
// intersection when the measure is another, and the verdict of that
// intersection, as Intersection gives them for [target, candidate].
// TiedWithNext: its order against the next is not told apart; results
// so joined share a Group.
type RankedCandidate struct {
	Rank         int      `json:"rank"`
	Name         string   `json:"name"`
	Estimate     float64  `json:"estimate"`
	StdError     float64  `json:"std_error"`
	Lower        float64  `json:"lower"`
	Upper        float64  `json:"upper"`
	Count        float64  `json:"count"`
	Intersection *Bounded `json:"intersection,omitempty"`
	Verdict      string   `json:"verdict"`
	VerdictText  string   `json:"verdict_text"`
	// Warnings are the pair's intersection warnings, which the verdict
	// text refers to.
	Warnings     []string `json:"warnings"`
	TiedWithNext bool     `json:"tied_with_next"`
	Group        int      `json:"group"`
}

// RankOverlap ranks candidates by their overlap with a target
// (POST /v1/rank). It is retried: it changes nothing.
func (c *Client) RankOverlap(ctx context.Context, req RankOverlapRequest) (*Ranking, error) {
	cl, err := jsonCall(http.MethodPost, "/v1/rank", req, true, http.StatusOK)
	if err != nil {
		return nil, err
	}
	return into[Ranking](ctx, c, cl)
}
