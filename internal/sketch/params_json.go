package sketch

import "encoding/json"

// ParamsJSON is p as JSON for readers outside sketchd: the params column
// of the PostgreSQL backend and the params field of a backup archive's
// records. Both backends write the same bytes for the same parameters.
func ParamsJSON(p Params) ([]byte, error) {
	switch p := p.(type) {
	case HLLParams:
		return json.Marshal(map[string]any{"log2m": p.Log2m, "regwidth": p.Regwidth, "expthresh": p.Expthresh, "sparse": p.Sparse})
	case CMSParams:
		m := map[string]any{"width": p.Width, "depth": p.Depth, "conservative": p.Conservative, "topk": p.TopK}
		if p.DomainBits > 0 {
			m["domain_bits"] = p.DomainBits
		}
		return json.Marshal(m)
	case ThetaParams:
		return json.Marshal(map[string]any{"lg_k": p.LgK})
	case FreqParams:
		return json.Marshal(map[string]any{"lg_k": p.LgK})
	case KLLParams:
		return json.Marshal(map[string]any{"k": p.K, "items": p.Items.String()})
	case BloomParams:
		m := map[string]any{"bits": p.Bits, "hashes": p.Hashes}
		if p.Stated() {
			m["expected_items"], m["fpp"] = p.ExpectedItems, p.FPP
		}
		return json.Marshal(m)
	}
	return json.Marshal(p)
}
