package console

import "testing"

func TestAcceptsGzip(t *testing.T) {
	for _, c := range []struct {
		values []string
		want   bool
	}{
		{nil, false},
		{[]string{"gzip"}, true},
		{[]string{"br, gzip;q=0.8"}, true},
		{[]string{"GZIP"}, true},
		{[]string{"gzip;q=0"}, false},
		{[]string{"gzip; q=0.000"}, false},
		{[]string{"identity", "deflate"}, false},
		{[]string{"deflate", "gzip"}, true},
		{[]string{"x-gzip"}, false},
	} {
		if got := acceptsGzip(c.values); got != c.want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", c.values, got, c.want)
		}
	}
}

func TestETagMatches(t *testing.T) {
	const etag = `"abc"`
	for _, c := range []struct {
		list string
		want bool
	}{
		{`"abc"`, true},
		{`W/"abc"`, true},
		{`"x", "abc"`, true},
		{`*`, true},
		{`"abcd"`, false},
		{`abc`, false},
	} {
		if got := etagMatches(c.list, etag); got != c.want {
			t.Errorf("etagMatches(%q) = %v, want %v", c.list, got, c.want)
		}
	}
}
