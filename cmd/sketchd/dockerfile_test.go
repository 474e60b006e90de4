package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDockerfileImage checks the runtime stage of the Dockerfile: the
// OCI labels (source, licenses and created among them) with every build
// argument they use declared in that stage (an ARG from before FROM is
// empty there otherwise), the licence (Apache-2.0, its LICENSE and NOTICE
// carried in the image), and the CA certificates that -postgres with
// sslmode=verify-full needs.
func TestDockerfileImage(t *testing.T) {
	raw, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(raw), "\\\n", " ")
	stages := regexp.MustCompile(`(?m)^FROM `).Split(text, -1)
	final := stages[len(stages)-1]
	args := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^ARG (\w+)`).FindAllStringSubmatch(final, -1) {
		args[m[1]] = true
	}
	label := regexp.MustCompile(`(?m)^LABEL (.*)$`).FindString(final)
	for _, key := range []string{"title", "description", "version", "revision", "created", "source", "licenses"} {
		if !strings.Contains(label, "org.opencontainers.image."+key+"=") {
			t.Errorf("the image has no org.opencontainers.image.%s label: %s", key, label)
		}
	}
	for _, m := range regexp.MustCompile(`\$\{(\w+)\}`).FindAllStringSubmatch(label, -1) {
		if !args[m[1]] {
			t.Errorf("the labels use ${%s}, which the runtime stage does not declare with ARG", m[1])
		}
	}
	if !strings.Contains(label, "theta") {
		t.Errorf("the image's description does not name every kind: %s", label)
	}
	if !regexp.MustCompile(`(?m)org\.opencontainers\.image\.licenses="\$\{LICENSES\}"`).MatchString(label) ||
		!regexp.MustCompile(`(?m)^ARG LICENSES=Apache-2\.0$`).MatchString(text) {
		t.Error("the image's licenses label is not Apache-2.0 (ARG LICENSES=Apache-2.0)")
	}
	for _, f := range []string{"LICENSE", "NOTICE"} {
		if _, err := os.Stat("../../" + f); err != nil {
			t.Errorf("the repository has no %s: %v", f, err)
		}
		if !regexp.MustCompile(`(?m)^COPY --from=build /src/LICENSE /src/NOTICE /$`).MatchString(final) {
			t.Errorf("the image does not carry %s", f)
		}
	}
	if !regexp.MustCompile(`(?m)^COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt$`).MatchString(final) {
		t.Error("the runtime stage has no CA certificates at /etc/ssl/certs/ca-certificates.crt")
	}
}

// TestVersionFromLdflags builds sketchd as the Dockerfile does (its
// -ldflags, with VERSION and REVISION filled in, and no VCS stamp, as the
// build context has no .git) and checks that -version prints them; and
// that a build with neither says how to give it a revision.
func TestVersionFromLdflags(t *testing.T) {
	t.Parallel() // it asserts no timing
	if testing.Short() {
		t.Skip("builds the binary twice")
	}
	raw, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`-ldflags="([^"]*)"`).FindStringSubmatch(string(raw))
	if m == nil || !strings.Contains(m[1], "-X main.version=${VERSION}") || !strings.Contains(m[1], "-X main.revision=${REVISION}") {
		t.Fatalf("the Dockerfile's go build sets no main.version and main.revision: %v", m)
	}
	ldflags := strings.NewReplacer("${VERSION}", "v9.8.7", "${REVISION}", "0123abcd").Replace(m[1])
	dir := t.TempDir()
	for _, tt := range []struct {
		name  string
		flags []string
		want  string
	}{
		{"as the Dockerfile builds it", []string{"-ldflags=" + ldflags}, "sketchd v9.8.7 revision 0123abcd go"},
		{"without a stamp", nil, `revision unknown (this build has no VCS stamp: build with go build in a git checkout, or set it with -ldflags "-X main.revision=$(git rev-parse HEAD)")`},
	} {
		bin := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-"))
		args := append([]string{"build", "-buildvcs=false", "-o", bin}, tt.flags...)
		if out, err := exec.Command("go", append(args, ".")...).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", tt.name, err, out)
		}
		out, err := exec.Command(bin, "-version").Output()
		if err != nil {
			t.Fatalf("%s -version: %v", tt.name, err)
		}
		if !strings.Contains(string(out), tt.want) {
			t.Errorf("built %s, -version prints %q, want it to contain %q", tt.name, out, tt.want)
		}
	}
}
