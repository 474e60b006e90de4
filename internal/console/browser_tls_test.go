package console_test

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/sketchd/sketchd/internal/certs/certstest"
)

// TestBrowserHTTPS loads the console from sketchd's TLS configuration:
// the page, its modules and every API call it makes go over HTTPS and
// HTTP/2 to the page's own origin (none is sent to an http:// address),
// the read token works there, and the psql line it prints names the https
// address. Chromium accepts the test's certificate by its public key
// (--ignore-certificate-errors-spki-list), which trusts that one key and
// nothing else: an error about any other certificate still fails the
// load.
func TestBrowserHTTPS(t *testing.T) {
	ca := certstest.NewCA(t, "console-test")
	pair := ca.Server(t, "console")
	spki := sha256.Sum256(pair.Cert.RawSubjectPublicKeyInfo)
	b := browser(t, chromedp.Flag("ignore-certificate-errors-spki-list", base64.StdEncoding.EncodeToString(spki[:])))
	s := newTLSSite(t, true, ca, pair)
	seed(t, s)
	if !strings.HasPrefix(s.url, "https://") {
		t.Fatalf("site at %s, want https", s.url)
	}

	tb := newTab(t, b)
	tb.open(t, s.url, "/")
	tb.wait(t, "#message")
	tb.do(t, "enter the token", chromedp.SendKeys(chromedp.ID("token"), readToken+kb.Enter))
	tb.wait(t, "table.sketches tbody tr")
	if n := eval[int](t, tb, `document.querySelectorAll('table.sketches tbody tr').length`); n != 5 {
		t.Errorf("%d rows over HTTPS, want 5", n)
	}
	type page struct {
		Protocol, Navigation string
		Secure               bool
		API, Plain           []string
		Protocols            []string
	}
	const probe = `(() => {
		const res = performance.getEntriesByType('resource');
		return {
			Protocol: location.protocol,
			Navigation: performance.getEntriesByType('navigation')[0].nextHopProtocol,
			Secure: window.isSecureContext,
			API: res.filter(e => e.name.includes('/v1/')).map(e => e.name),
			Plain: res.filter(e => !e.name.startsWith(location.origin + '/')).map(e => e.name),
			Protocols: [...new Set(res.map(e => e.nextHopProtocol))],
		};
	})()`
	p := eval[page](t, tb, probe)
	if p.Protocol != "https:" || p.Navigation != "h2" || !p.Secure {
		t.Errorf("page over %s by %q (secure context %v), want https: by h2", p.Protocol, p.Navigation, p.Secure)
	}
	if len(p.API) == 0 {
		t.Error("the page made no API call")
	}
	if len(p.Plain) > 0 {
		t.Errorf("requests outside the page's https origin: %v", p.Plain)
	}
	if len(p.Protocols) != 1 || p.Protocols[0] != "h2" {
		t.Errorf("resources fetched by %v, want h2 only", p.Protocols)
	}

	tb.open(t, s.url, "/sketch/newsletter:oct")
	tb.wait(t, "#psql")
	if line := tb.text(t, "#psql"); !strings.Contains(line, "'"+s.url+"/v1/sketches/newsletter:oct/raw?format=hex'") {
		t.Errorf("psql line %q, want it to fetch from %s", line, s.url)
	}
	tb.open(t, s.url, "/overlap?s=newsletter:oct&s=checkout:oct")
	tb.wait(t, "#ov-estimate")
	// The first load's 401 (no token yet) is the only error allowed.
	tb.noErrors(t, func(m chromedp.ConsoleMessage) bool {
		return m.Source == "network" && strings.Contains(m.Text, "401")
	})
}
