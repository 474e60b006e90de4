// Package javatest runs the Java side of sketchd's interoperability
// tests: Interop.java (embedded here; its comment lists the requests),
// compiled with javac against pinned jars from the local Maven repository
// and run as one JVM per test binary, which answers one request a line.
//
// Without a JDK or the jars a test skips with a message saying how to
// provide them; with SKETCHD_REQUIRE_JAVA=1 (set by CI) it fails instead.
// The jars are looked up in SKETCHD_MAVEN_REPO, else ~/.m2/repository,
// where `mvn dependency:get -Dartifact=GROUP:ARTIFACT:VERSION` puts them
// (.ci/run fetches every one of Artifacts that way).
package javatest

import (
	"bufio"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

//go:embed Interop.java
var source []byte

// Artifact is a jar in the Maven repository.
type Artifact struct{ Group, Name, Version string }

// String is the artifact's coordinates, as mvn dependency:get takes them.
func (a Artifact) String() string { return a.Group + ":" + a.Name + ":" + a.Version }

// Artifacts are the jars Interop.java is compiled and run against: Apache
// DataSketches' Java library (the version the format issue measured, what
// Druid uses) and its memory library; ZetaSketch (BigQuery's HLL++; Guava
// and protobuf are shaded into its jar) with fastutil, its one runtime
// dependency; airlift's stats library (Trino's HyperLogLog) with slice,
// Guava and JOL, which it runs on. airlift's current releases need Java
// 25, on which DataSketches' memory library 3.0.2 does not run, so the
// one JVM takes stats 240 (Java 17): its io.airlift.stats.cardinality
// sources equal today's but for formatting (docs/formats.md).
var Artifacts = []Artifact{
	{"org.apache.datasketches", "datasketches-java", "6.1.1"},
	{"org.apache.datasketches", "datasketches-memory", "3.0.2"},
	{"com.google.zetasketch", "zetasketch", "0.1.0"},
	{"it.unimi.dsi", "fastutil", "8.2.2"},
	{"io.airlift", "stats", "240"},
	{"io.airlift", "slice", "2.2"},
	{"com.google.guava", "guava", "32.1.3-jre"},
	{"org.openjdk.jol", "jol-core", "0.16"},
}

// JVM is a running Interop: requests are answered one at a time.
type JVM struct {
	mu  sync.Mutex
	in  io.WriteCloser
	out *bufio.Reader
}

// Shared starts one JVM on first use and hands the same one to every
// later caller; a test package keeps one in a package-level variable.
type Shared struct {
	// Optimize starts the JVM with its optimizing compiler, for timings
	// (by default only the quick one runs, which starts faster).
	Optimize bool

	once sync.Once
	jvm  *JVM
	err  error
	skip string
}

// Get returns the shared JVM, starting it on the first call; it skips tb
// (fails it under SKETCHD_REQUIRE_JAVA=1) when Java or the jars are
// missing, and fails it when the JVM cannot start.
func (s *Shared) Get(tb testing.TB) *JVM {
	tb.Helper()
	s.once.Do(func() { s.jvm, s.skip, s.err = start(s.Optimize) })
	if s.skip != "" {
		if os.Getenv("SKETCHD_REQUIRE_JAVA") == "1" {
			tb.Fatalf("SKETCHD_REQUIRE_JAVA=1 but %s", s.skip)
		}
		tb.Skipf("skipping the Java interoperability test: %s (install a JDK and fetch %s with mvn dependency:get)", s.skip, artifactList())
	}
	if s.err != nil {
		tb.Fatalf("javatest: %v", s.err)
	}
	return s.jvm
}

func artifactList() string {
	parts := make([]string, len(Artifacts))
	for i, a := range Artifacts {
		parts[i] = a.String()
	}
	return strings.Join(parts, " ")
}

// repo is the local Maven repository.
func repo() string {
	if r := os.Getenv("SKETCHD_MAVEN_REPO"); r != "" {
		return r
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".m2", "repository")
}

// Jar returns the path of a's jar in the local repository.
func Jar(a Artifact) string {
	return filepath.Join(repo(), filepath.FromSlash(strings.ReplaceAll(a.Group, ".", "/")), a.Name, a.Version, a.Name+"-"+a.Version+".jar")
}

// classpath returns the class path of Artifacts' jars, or what is
// missing: javac, java or a jar.
func classpath() (cp, skip string) {
	for _, tool := range []string{"javac", "java"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", tool + " is not on PATH"
		}
	}
	jars := make([]string, len(Artifacts))
	for i, a := range Artifacts {
		jars[i] = Jar(a)
		if _, err := os.Stat(jars[i]); err != nil {
			return "", fmt.Sprintf("%s is not in the Maven repository (%s)", a, jars[i])
		}
	}
	return strings.Join(jars, string(os.PathListSeparator)), ""
}

// Classpath returns the class path of Artifacts' jars, for a test that
// compiles and runs Java of its own (java and javac are on PATH). It
// skips tb as Shared.Get does (fails it under SKETCHD_REQUIRE_JAVA=1)
// when Java or a jar is missing.
func Classpath(tb testing.TB) string {
	tb.Helper()
	cp, skip := classpath()
	if skip != "" {
		if os.Getenv("SKETCHD_REQUIRE_JAVA") == "1" {
			tb.Fatalf("SKETCHD_REQUIRE_JAVA=1 but %s", skip)
		}
		tb.Skipf("skipping the Java test: %s (install a JDK and fetch %s with mvn dependency:get)", skip, artifactList())
	}
	return cp
}

// start compiles Interop.java (once per source and classpath, cached in
// the user's cache directory) and starts it. skip says what is missing.
func start(optimize bool) (j *JVM, skip string, err error) {
	cp, skip := classpath()
	if skip != "" {
		return nil, skip, nil
	}
	sum := sha256.Sum256(append(append([]byte(nil), source...), cp...))
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "sketchd-javatest", hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(filepath.Join(dir, "Interop.class")); err != nil {
		if err := compile(dir, cp); err != nil {
			return nil, "", err
		}
	}
	args := []string{"-Xshare:auto"}
	if !optimize {
		args = append(args, "-XX:TieredStopAtLevel=1")
	}
	args = append(args, "-cp", dir+string(os.PathListSeparator)+cp, "Interop")
	cmd := exec.Command("java", args...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, "", err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("start java: %w", err)
	}
	// The JVM ends when its stdin closes: when the test binary exits.
	return &JVM{in: in, out: bufio.NewReaderSize(out, 1<<20)}, "", nil
}

// compile writes Interop.java into a fresh directory beside dir, compiles
// it there and renames the directory to dir, so that concurrent test
// binaries never see half a compilation.
func compile(dir, cp string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "Interop.java"), source, 0o644); err != nil {
		return err
	}
	out, err := exec.Command("javac", "-nowarn", "-d", tmp, "-cp", cp, filepath.Join(tmp, "Interop.java")).CombinedOutput()
	if err != nil {
		return fmt.Errorf("javac Interop.java: %v\n%s", err, out)
	}
	if err := os.Rename(tmp, dir); err != nil && !errors.Is(err, os.ErrExist) {
		if _, statErr := os.Stat(filepath.Join(dir, "Interop.class")); statErr == nil {
			return nil // another test binary compiled it first
		}
		return err
	}
	return nil
}

// Try sends one request (tokens joined by spaces) and returns the
// answer's tokens, or the Java exception as an error.
func (j *JVM) Try(tokens ...string) ([]string, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, err := io.WriteString(j.in, strings.Join(tokens, " ")+"\n"); err != nil {
		return nil, fmt.Errorf("javatest: send %s: %w", tokens[0], err)
	}
	line, err := j.out.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("javatest: answer to %s: %w", tokens[0], err)
	}
	f := strings.Fields(line)
	switch {
	case len(f) > 0 && f[0] == "ok":
		return f[1:], nil
	case len(f) > 0 && f[0] == "err":
		return nil, fmt.Errorf("java: %s", strings.TrimSpace(strings.TrimPrefix(line, "err")))
	}
	return nil, fmt.Errorf("javatest: answer to %s: %q", tokens[0], line)
}

// Call is Try that fails tb on an error.
func (j *JVM) Call(tb testing.TB, tokens ...string) []string {
	tb.Helper()
	r, err := j.Try(tokens...)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}
