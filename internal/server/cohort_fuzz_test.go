package server

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// cohortFuzzEnv is a store with a daily series s and one sketch a day
// (dau:YYYY-MM-DD) for the last four days, for fuzzing retention and
// funnel bodies.
func cohortFuzzEnv(f *testing.F) (*env, time.Time) {
	e := seriesEnv(f)
	must(f, e.send(f, http.MethodPut, "/v1/series/s", "application/json", `{"tz":"UTC","levels":{"hour":"P14D","day":"P400D"},"late_limit":"P30D"}`), http.StatusCreated, "create s")
	first := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -3)
	for d := range 4 {
		ids := idsJSON(idRange(int64(100*d), int64(100*d+300))...)
		must(f, e.postJSON(f, "/v1/series/s/add?ts="+rfc(first.AddDate(0, 0, d).Add(time.Minute)), ids), http.StatusOK, "add")
		name := "dau:" + first.AddDate(0, 0, d).Format("2006-01-02")
		e.create(f, name, `{}`)
		e.addIDs(f, name, ids, 300)
	}
	e.create(f, "th", `{"type":"theta"}`)
	return e, first
}

// FuzzRetention: any body to POST /v1/retention is answered with a table
// or a 4xx problem, and changes nothing.
func FuzzRetention(f *testing.F) {
	e, first := cohortFuzzEnv(f)
	start := first.Format(time.RFC3339)
	for _, b := range []string{
		fmt.Sprintf(`{"series":"s","period":"P1D","start":%q,"cohorts":3,"periods":2}`, start),
		fmt.Sprintf(`{"sketches":"dau:{date}","period":"P1D","start":%q,"cohorts":4,"periods":3}`, start),
		fmt.Sprintf(`{"sketches":"dau:{week}","period":"P1W","start":%q,"cohorts":1,"periods":1}`, start),
		fmt.Sprintf(`{"series":"s","period":"P1M","start":%q,"cohorts":60,"periods":60,"method":"mle"}`, start),
		`{"series":"s","period":"P1D","start":"2026-02-30T00:00:00Z","cohorts":1,"periods":1}`,
		`{"series":"s","sketches":"x","period":"P1Y","start":"","cohorts":-1,"periods":1e9}`,
		`{"sketches":"th","period":"P1D","start":"2026-01-01T00:00:00Z","cohorts":1,"periods":1}`,
		`[]`, `{`, `null`,
	} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		before := e.snapshot(t)
		r := e.postJSON(t, "/v1/retention", string(body))
		if r.Status != http.StatusOK {
			checkRefusal(t, r)
		}
		if d := before.diff(e.snapshot(t)); len(d) > 0 {
			t.Fatalf("a retention table (%v) changed the store: %v", r, d)
		}
	})
}

// FuzzFunnel: any body to POST /v1/funnel is answered with a funnel or a
// 4xx problem, and changes nothing.
func FuzzFunnel(f *testing.F) {
	e, first := cohortFuzzEnv(f)
	day := func(d int) string {
		return fmt.Sprintf(`{"series":"s","from":%q,"to":%q}`, first.AddDate(0, 0, d).Format(time.RFC3339), first.AddDate(0, 0, d+1).Format(time.RFC3339))
	}
	for _, b := range []string{
		`{"steps":["dau:` + first.Format("2006-01-02") + `","dau:` + first.AddDate(0, 0, 1).Format("2006-01-02") + `"]}`,
		`{"steps":[` + day(0) + `,` + day(1) + `,` + day(2) + `],"method":"inclusion_exclusion"}`,
		`{"steps":["th","th"]}`,
		`{"steps":[{"series":"s","from":"x","to":"y"},"nope"]}`,
		`{"steps":[]}`, `{"steps":null}`, `{"steps":[1,2]}`,
	} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		before := e.snapshot(t)
		r := e.postJSON(t, "/v1/funnel", string(body))
		if r.Status != http.StatusOK {
			checkRefusal(t, r)
		}
		if d := before.diff(e.snapshot(t)); len(d) > 0 {
			t.Fatalf("a funnel (%v) changed the store: %v", r, d)
		}
	})
}
