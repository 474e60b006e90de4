// Package hllbias is the empirical bias of the raw HyperLogLog estimate,
// derived by simulation in this repository, for the estimators that
// correct it as the HyperLogLog++ paper does (Heule, Nunkesser and Hall,
// "HyperLogLog in Practice", EDBT 2013, section 5.2): ZetaSketch's
// HLL++ (internal/zeta) and airlift's HyperLogLog (internal/airlift).
// Those libraries carry tables of their own; sketchd derives its table
// instead, so its estimates in the bias-corrected range come close to
// theirs without being equal (docs/formats.md gives the measured
// difference).
//
// # The simulation (sim.go, reproducible)
//
// For each precision p in [MinPrecision, MaxPrecision] (m = 2^p
// registers), Trials(p) independent trials each insert uniformly random
// 64-bit hashes, drawn from a SplitMix64 generator whose seed is fixed
// by p and the trial number, into m registers as HyperLogLog does (index
// = the top p bits, value = 1 + the leading zeros of the 64-p bits
// below, at most 65-p). At each true cardinality n of the grid
// Grid(p) (0 to 5m, about 200 steps; HLL++ corrects the raw estimate up
// to 5m) the trial records H = m²/Σ 2^-register, the raw estimate
// without its constant α (the raw estimate is α·H, and α differs between
// libraries at small p). The table keeps, per grid point, n and the mean
// of H over the trials. Means are summed in a fixed order (trials in
// blocks of a fixed size, blocks in order), so the table does not
// depend on how many goroutines computed it: `go generate` rewrites
// table.go with exactly the same bits, and TestTableReproduces
// regenerates the smallest precisions and compares them bit for bit.
//
// # The correction
//
// Bias(p, α, e) and BiasKNN(p, α, e) are the bias of a raw estimate
// e = α·H, from the grid's points (α·H̄_k, α·H̄_k − n_k), which rise with
// k. Bias interpolates linearly between the two points around e (as
// airlift does with its own table); BiasKNN takes the mean of the six
// points nearest e weighted by the inverse of their squared distance (as
// the HLL++ paper and ZetaSketch do). Outside the table's range (below
// the empty sketch's α·m or above the mean raw estimate at 5m) there is
// no correction, and ok is false.
package hllbias
