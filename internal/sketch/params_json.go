package sketch

import (
	"encoding/json"
	"strconv"
)

// ParamsJSON is p as JSON for readers outside sketchd: the params column
// of the PostgreSQL backend and the params field of a backup archive's
// records. Both backends write the same bytes for the same parameters.
//
// The kinds a store holds most (hll, cms, theta, freq) are written
// directly, as encoding/json writes their members (keys in order): a
// backup of a million small sketches spent most of its time marshalling
// maps.
func ParamsJSON(p Params) ([]byte, error) {
	switch p := p.(type) {
	case HLLParams:
		b := append(make([]byte, 0, 64), `{"expthresh":`...)
		b = strconv.AppendInt(b, int64(p.Expthresh), 10)
		b = strconv.AppendInt(append(b, `,"log2m":`...), int64(p.Log2m), 10)
		b = strconv.AppendInt(append(b, `,"regwidth":`...), int64(p.Regwidth), 10)
		b = strconv.AppendBool(append(b, `,"sparse":`...), p.Sparse)
		return append(b, '}'), nil
	case CMSParams:
		b := strconv.AppendBool(append(make([]byte, 0, 96), `{"conservative":`...), p.Conservative)
		b = strconv.AppendInt(append(b, `,"depth":`...), int64(p.Depth), 10)
		if p.DomainBits > 0 {
			b = strconv.AppendInt(append(b, `,"domain_bits":`...), int64(p.DomainBits), 10)
		}
		b = strconv.AppendInt(append(b, `,"topk":`...), int64(p.TopK), 10)
		b = strconv.AppendInt(append(b, `,"width":`...), int64(p.Width), 10)
		return append(b, '}'), nil
	case ThetaParams:
		return append(strconv.AppendInt([]byte(`{"lg_k":`), int64(p.LgK), 10), '}'), nil
	case FreqParams:
		return append(strconv.AppendInt([]byte(`{"lg_k":`), int64(p.LgK), 10), '}'), nil
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
