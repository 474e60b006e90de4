package javatest

import (
	"os"
	"strings"
	"testing"
)

// TestCIFetchesEveryArtifact: .ci/run fetches every jar Interop.java is
// compiled against, so that CI runs the Java tests instead of failing
// them for a missing jar.
func TestCIFetchesEveryArtifact(t *testing.T) {
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range Artifacts {
		if !strings.Contains(string(ci), a.String()) {
			t.Errorf(".ci/run does not fetch %s", a)
		}
	}
}

var shared Shared

// TestUnknownRequest: a request Interop does not know comes back as an
// error naming it, and the JVM goes on answering.
func TestUnknownRequest(t *testing.T) {
	jvm := shared.Get(t)
	if _, err := jvm.Try("no_such_request", "1"); err == nil || !strings.Contains(err.Error(), "no_such_request") {
		t.Errorf("Try(no_such_request) = %v, want an error naming it", err)
	}
	if r := jvm.Call(t, "theta_build", "5", "0", "10", "-"); len(r) != 12 {
		t.Errorf("theta_build answered %d fields, want 12", len(r))
	}
}
