// Package cohort answers the questions users ask of sets over time from
// intersections: retention tables (of the users active in period i, how
// many were active again k periods later) and funnels (how many of step
// 1's users reached step 2, then step 3, …). It composes, in one place,
// the intersection estimators of internal/sketch (the joint MLE for
// pairs, inclusion–exclusion for more) with their error envelope and
// verdict, and derives from them the shares and conversions users read,
// each with its error and bounds. It decides no verdict of its own: a
// cell or step is reliable exactly when sketch.Intersect (or
// IntersectFamily) says its intersection is, and a ratio when every
// intersection it is made of is. A step every user of which reached the
// steps before is, as its intersection says, within them (Within, and
// words to match), not spurious.
//
// It takes decoded sketches of the HLL family (hll, ds_hll, cpc): their
// intersections carry the envelope and verdict. Theta sketches have
// DataSketches' own intersection bounds and no such verdict, and are
// refused (Conflict), as are other kinds.
//
// # Errors of derived numbers
//
// A set's size is its estimate with its standard error (0 for an exact,
// EXPLICIT HLL); its bounds lie sketch.BoundsZ errors either side,
// clipped at 0. A ratio r = x/y of an intersection x and a set or
// intersection y that contains it (a share of a cohort, a conversion from
// the previous step) has the error
//
//	σ_r = √((σ_x/y)² + (r·σ_y/y)²),
//
// the first-order (delta method) error of a ratio of independent
// estimates. x and y are estimated from overlapping registers and their
// errors are positively correlated (x ⊆ y), which makes the true error of
// the ratio smaller: σ_r is conservative. Its bounds are r ± BoundsZ·σ_r,
// clipped to [0, 1]. cmd/intersim's -retention mode measures how often
// the bounds cover the truth on simulated cohorts (docs/series.md).
package cohort
