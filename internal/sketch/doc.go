// Package sketch is sketchd's domain layer, between the sketch engines
// (internal/hll, internal/cms) and the store and HTTP layers:
//
//   - what a sketch is: its Type, the Spec it is created with, the Info
//     that describes it, and the rule for names (ValidateName);
//   - the errors the API shows: *Error carries a client-safe detail and a
//     ErrorKind that the HTTP layer maps to one status (Invalid 400, NotFound
//     404, Conflict 409, TooLarge 413, Unauthorized 401, Forbidden 403,
//     Unavailable 503); anything else is Internal, logged and never shown;
//   - estimates built on top of the engines: the intersection of 2 to 8 HLL
//     sketches with its error envelope and a verdict (Intersect), by
//     inclusion-exclusion or by Ertl's joint maximum-likelihood estimator
//     (docs/intersection.md explains the choice and the calibration).
package sketch
