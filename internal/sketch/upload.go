package sketch

import (
	"encoding/hex"
	"fmt"
	"strings"
)

// DecodeUpload decodes an uploaded sketch. With format "" the kind is
// recognized from the preamble: the kind whose Sniff claims the bytes
// decodes them, strictly. With a format (a registered type, as PUT
// …/raw?format= names it) only that kind decodes them. Errors are Invalid
// and name the format the bytes were taken for and what is wrong with
// them, never another format's complaint: bytes no kind reads get a
// detail naming the format their preamble looks like (a DataSketches
// family sketchd does not read), or saying that it looks like none; a cut
// or padded airlift HyperLogLog gets its decoder's complaint.
func DecodeUpload(b []byte, format Type) (Sketch, error) {
	if format != "" {
		k, err := LookupFor(format, b)
		if err != nil {
			return nil, Errorf(Invalid, "query parameter format=%s names no sketch type; use %s", quote(string(format)), typeList())
		}
		s, err := k.Decode(b)
		if err != nil {
			detail := "the upload is not a valid " + string(k.Type) + " sketch (" + k.Format + "): " + trimKindPrefix(err.Error())
			if !k.Sniff(b) {
				if other := lookalike(b); other != "" {
					detail += "; its preamble looks like " + other
				}
			}
			return nil, Wrap(Invalid, err, detail)
		}
		return s, nil
	}
	for _, k := range registry {
		if !k.Sniff(b) {
			continue
		}
		s, err := k.Decode(b)
		if err != nil {
			return nil, Wrap(Invalid, err, "the upload looks like "+k.Format+" but is not a valid "+string(k.Type)+" sketch: "+trimKindPrefix(err.Error()))
		}
		return s, nil
	}
	other := recognize(b)
	if other == "" && len(b) >= 2 && (b[0] == 2 || b[0] == 3) && b[1] >= 4 && b[1] <= 16 {
		// airlift's SPARSE_V2 (2) or DENSE_V2 (3) tag and index bits, at a
		// length its Sniff does not take (cut or padded): its decoder
		// says what is wrong.
		if _, err := airliftKind.Decode(b); err != nil {
			return nil, Wrap(Invalid, err, "the upload looks like "+airliftKind.Format+" but is not a valid "+string(airliftKind.Type)+" sketch: "+trimKindPrefix(err.Error()))
		}
	}
	if other != "" {
		return nil, Errorf(Invalid, "the upload looks like %s, which sketchd does not read; it reads %s", other, formatList())
	}
	return nil, Errorf(Invalid, "the upload is in no format sketchd recognizes (it begins %s); it reads %s", leading(b), formatList())
}

// DetectUpload is DecodeUpload(b, ""): the kind recognized from the
// preamble.
func DetectUpload(b []byte) (Sketch, error) { return DecodeUpload(b, "") }

// leading shows the first bytes of b for a message.
func leading(b []byte) string {
	switch {
	case len(b) == 0:
		return "with no bytes"
	case len(b) > 8:
		return "0x" + hex.EncodeToString(b[:8]) + "…"
	}
	return "0x" + hex.EncodeToString(b)
}

// formatList names every registered kind with its format.
func formatList() string {
	parts := make([]string, len(registry))
	for i, k := range registry {
		parts[i] = string(k.Type) + " (" + k.Format + ")"
	}
	return strings.Join(parts, ", ")
}

// dataSketchesFamilies names DataSketches' family ids (byte 2 of every
// DataSketches serialization), from the libraries' Family enum.
var dataSketchesFamilies = map[byte]string{
	1: "theta alpha", 2: "theta update", 3: "compact theta", 4: "theta union",
	5: "theta intersection", 6: "theta A-not-B", 7: "HLL", 8: "quantiles",
	9: "tuple", 10: "frequent items", 11: "reservoir", 12: "VarOpt",
	13: "reservoir union", 14: "VarOpt union", 15: "KLL", 16: "CPC",
	17: "REQ", 18: "Count-Min", 19: "EBPPS", 20: "t-digest", 21: "Bloom filter",
}

// lookalike names the format b's preamble looks like, registered or
// not, or "".
func lookalike(b []byte) string {
	for _, k := range registry {
		if k.Sniff(b) {
			return k.Format + " (type " + string(k.Type) + ")"
		}
	}
	return recognize(b)
}

// recognize names the format b's preamble looks like among those no
// registered kind claims, or "". It only reads a few bytes; nothing is
// validated.
func recognize(b []byte) string {
	switch {
	case len(b) >= 3 && b[1] >= 1 && b[1] <= 4 && dataSketchesFamilies[b[2]] != "":
		return fmt.Sprintf("a DataSketches %s sketch (family %d, serial version %d)", dataSketchesFamilies[b[2]], b[2], b[1])
	}
	return ""
}
