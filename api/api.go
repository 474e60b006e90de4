// Package api holds sketchd's HTTP contract, openapi.yaml (OpenAPI
// 3.0.3), embedded so the server can serve it at /openapi.yaml and tests
// can check the routes against it.
package api

import _ "embed"

//go:embed openapi.yaml
var spec []byte

// Spec returns the OpenAPI document. Callers must not modify it.
func Spec() []byte { return spec }
