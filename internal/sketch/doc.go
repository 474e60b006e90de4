// Package sketch is sketchd's domain layer, between the sketch engines
// (internal/hll, internal/cms) and the store and HTTP layers:
//
//   - the kind registry (kind.go): each sketch kind registers once as a
//     Kind, and everything that routes by kind asks the registry (Lookup
//     by API type, ByTag for stored records, DecodeUpload for uploaded
//     bytes, recognized from their preamble or named); an unknown kind is
//     an error, never a default. A decoded
//     sketch of any kind is a Sketch, its parameters Params, a batch of
//     ids an Input that each kind prepares in its own form (a Batch);
//   - what a sketch is created with (Spec), the Info that describes it,
//     and the rule for names (ValidateName);
//   - the errors the API shows: *Error carries a client-safe detail and an
//     ErrorKind that the HTTP layer maps to one status (Invalid 400,
//     NotFound 404, Conflict 409, TooLarge 413, Unauthorized 401,
//     Forbidden 403, Unavailable 503); anything else is Internal, logged
//     and never shown;
//   - estimates built on top of the engines: the intersection of 2 to 8 HLL
//     sketches with its error envelope and a verdict (Intersect), by
//     inclusion-exclusion or by Ertl's joint maximum-likelihood estimator
//     (docs/intersection.md explains the choice and the calibration), and
//     of ds_hll, cpc, zeta_hll or airlift_hll sketches by
//     inclusion-exclusion of their own unions with the same envelope
//     (IntersectFamily).
//
// # Adding a kind
//
// kind_hll.go is the model. A new kind touches its engine's package and
// one file here:
//
//  1. The engine (internal/yourkind): New from parameters, a strict
//     Decode whose errors wrap sentinels and whose allocation is bounded
//     by the input, AppendBinary, Clone, an in-place union, updates from
//     hashed ids. It imports nothing of sketchd but murmur.
//  2. kind_yourkind.go: a Kind value with a new Tag (never reuse one: it
//     is stored in records and log operations), the API Type, its Format
//     for messages, Default, Decode, Sniff (claiming only its own
//     encodings; an upload no kind claims is refused naming what it looks
//     like, upload.go), Prepare (ask the Input for Hashes or
//     Items, whichever the kind adds), Union; a Params type (a comparable
//     value with Validate, New, String) and a Sketch type whose Apply
//     appends a delta that ApplyDelta replays exactly (the embedded
//     store's log holds only deltas), and whose Check refuses what Apply
//     would refuse, so writes across several sketches stay all or
//     nothing.
//  3. One entry in the registry array in kind.go.
//
// Decode keeps the bytes it decoded when the kind would encode the same
// contents otherwise (keepOriginal, original.go): the sketch then serves
// them as they came until its next write. A wrapper holds an *original,
// drops it in Merge, ApplyDelta and Absorb, and ends Apply with
// original.written. Downloads with options (a freq layout, theta's
// compressed form) go through AppendDownload (download.go).
//
// Every backend then stores, logs, replays, merges, lists, unions and
// uploads the kind with no change. What the kind shows over HTTP (its
// create parameters and describe shape in internal/server/dto.go, and any
// routes of its own) is the server's to add.
package sketch
