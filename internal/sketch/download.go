package sketch

import "github.com/sketchd/sketchd/internal/freq"

// Download says how a raw download of a sketch is written, beyond its
// kind's defaults. The zero value asks for the defaults.
type Download struct {
	// Layout is a freq sketch's summary layout: LayoutJava (the default)
	// or LayoutCPP.
	Layout Layout
	// Compressed asks a theta sketch for DataSketches' compressed compact
	// form (serial version 4), which the format keeps no lg_k in.
	Compressed bool
}

// Layout is the byte layout of a freq sketch's integer summaries.
type Layout string

// The summary layouts of a freq download.
const (
	// LayoutJava writes Java's IntegerSummary: the int32 count, then its
	// mode byte (0, sum); what datasketches-java's
	// IntegerSummaryDeserializer (and so Druid, Hive, Spark UDFs) reads.
	// The default: Java's reader cannot be told another layout, while the
	// C++ and Python libraries read any layout through a serde.
	LayoutJava Layout = "java"
	// LayoutCPP writes the bare int32, as the C++ library's int32 serde
	// and Python's PyIntsSerDe read it.
	LayoutCPP Layout = "cpp"
)

// AppendDownload appends s as a raw download asks for it. With the zero
// Download the bytes are s.AppendBinary's (so bytes kept as uploaded come
// back unchanged), except that a freq sketch with nothing kept is written
// in the default layout, LayoutJava. A Layout on a kind other than freq,
// Compressed on a kind other than theta, or an unknown Layout is Invalid.
func AppendDownload(b []byte, s Sketch, d Download) ([]byte, error) {
	switch d.Layout {
	case "", LayoutJava, LayoutCPP:
	default:
		return nil, Errorf(Invalid, "layout=%s is not a freq summary layout; use java (Java's IntegerSummary, the default) or cpp (C++ and Python's int32)", quote(string(d.Layout)))
	}
	if d.Layout != "" && s.Kind() != &freqKind {
		return nil, Errorf(Invalid, "layout applies to freq sketches; this is a %s sketch", s.Kind().Type)
	}
	if d.Compressed && s.Kind() != &thetaKind {
		return nil, Errorf(Invalid, "compressed applies to theta sketches; this is a %s sketch", s.Kind().Type)
	}
	switch v := s.(type) {
	case freqSketch:
		if d.Layout == "" && v.orig.bytes() != nil {
			return v.AppendBinary(b), nil
		}
		if d.Layout == LayoutCPP {
			return v.f.AppendStoredWidth(b, freq.SummaryInt32), nil
		}
		return v.f.AppendStoredWidth(b, freq.SummaryJava), nil
	case thetaSketch:
		if d.Compressed {
			return v.t.AppendCompressed(b), nil
		}
	}
	return s.AppendBinary(b), nil
}
