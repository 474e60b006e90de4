package sketch

// BoundsZ is how many one-sigma errors an intersection's Lower and Upper
// lie from its estimate (the envelope's ±3Δ). Answers built from
// intersections (retention cells, funnel conversions) bound their other
// numbers at the same width, so that every bound of one answer means the
// same.
const BoundsZ = envelopeZ
