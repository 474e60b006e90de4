// Package archtest holds the test that keeps sketchd's dependency rules
// (STYLE.md §2): arrows point inward, the server never reaches bbolt, the
// store never reaches HTTP, the sketch engines need only the standard
// library and MurmurHash3, and metrics need only Prometheus.
package archtest
