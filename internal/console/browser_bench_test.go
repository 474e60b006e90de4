package console_test

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// The cost of a browser test's browser, up to a first blank tab and
// closed again: a headless Chromium of its own (as every browser test
// started until they shared one), or a new browser context in the
// package's shared Chromium (as browser gives each test now).

func BenchmarkBrowserOwnChromium(b *testing.B) {
	path := chromium(b)
	for b.Loop() {
		_, stop, err := startBrowser(browserOptions(path, b.TempDir()))
		if err != nil {
			b.Fatal(err)
		}
		stop()
	}
}

func BenchmarkBrowserContext(b *testing.B) {
	shared := sharedBrowser(b, chromium(b))
	for b.Loop() {
		ctx, cancel := chromedp.NewContext(shared, chromedp.WithNewBrowserContext())
		if err := chromedp.Do(ctx); err != nil {
			b.Fatal(err)
		}
		cancel()
	}
}
