// Package series is the time arithmetic of series: named sequences of
// sketches, one per time bucket, at one or more levels (hour, day, ISO
// week from Monday, month), each kept for its own retention, with bucket
// edges in the series' IANA time zone (so a DST day is 23 or 25 hours and
// the repeated hour of a fall-back is two hour buckets).
//
// It decides, and stores nothing:
//
//   - which buckets an add stamped ts updates (Spec.Buckets): one per
//     level that still keeps ts (an add older than the hour level keeps
//     backfills days and months), refusing a ts older than the late limit
//     or more than MaxFuture ahead;
//   - what a change of the late limit and retentions gives
//     (Spec.Changed), validated as a create is;
//   - from which buckets a range [from, to) is answered (Spec.Plan): the
//     fewest that tile it, coarse levels inside and finer ones at the
//     edges, never an expired one; an edge inside the finest bucket kept
//     there moves outward, with a warning, so an answer never silently
//     covers another range;
//   - how a rolling line is computed (Spec.Timeseries and Window): the
//     buckets of one level visited once each by a sliding-window union
//     with two stacks, so a point costs O(1) unions amortised instead of
//     one per bucket in its window.
//
// Planning is bounded by a Budget per request (buckets considered, points
// of a line), so that a read's cost follows the buckets it may use, never
// the span it names: past the budget a plan is Unprocessable before it
// has laid out more than the budget allows. A plan is a few Runs of
// consecutive buckets of one level, which a backend looks up by range,
// loading only the buckets that exist.
//
// Durations are ISO 8601 (P400D, PT1H, P1Y2M), with calendar parts added
// in the series' time zone.
package series
