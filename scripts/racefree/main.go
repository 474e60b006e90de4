// Command racefree prints the packages of the module in the current
// directory whose tests run in one goroutine, one import path a line:
// scripts/test runs those in a normal build and the rest under the race
// detector.
//
// The race detector reports two goroutines touching the same memory, one
// of them writing, with nothing ordering them. A test binary whose own
// code starts no second goroutine gives it nothing to find, and runs five
// to ten times slower under it (internal/sketch's tests took 56
// CPU-seconds under it and 6 without). The code of such a package is
// still checked under the race detector wherever it runs concurrently:
// in the tests of the server, the stores and the binary, which link it.
//
// A package is race-free when it has test files and no package of this
// module in its test binary (itself, its test files, and every module
// package they import) does any of:
//
//   - a go statement;
//   - a call of a function or method named Go (sync.WaitGroup.Go,
//     errgroup), Parallel (t.Parallel: tests beside each other),
//     AfterFunc (time, context), or Serve, ServeTLS, ListenAndServe or
//     ListenAndServeTLS (an HTTP server runs its handlers, this module's
//     code, in goroutines of its own);
//   - an import of net/http/httptest (its servers do too) or os/signal
//     (notifications arrive from another goroutine).
//
// Every .go file of a package's folder is read, whatever its build tags.
// Code of other modules and of the standard library is not read: a
// goroutine it starts inside a call (database/sql's connection cleaner,
// os/exec's copying of a command's output) ends in that library's own
// synchronisation, which its authors test.
//
//	racefree [-why] [packages]   (default ./...)
//
// With -why it prints every named package with tests, and for each one
// not race-free the first place that starts a goroutine.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

func main() {
	why := flag.Bool("why", false, "print every package with tests, and why those not race-free are not")
	flag.Parse()
	patterns := flag.Args()
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	pkgs, err := classify(patterns)
	if err != nil {
		fmt.Fprintln(os.Stderr, "racefree:", err)
		os.Exit(2)
	}
	for _, p := range pkgs {
		switch {
		case *why && p.why == "":
			fmt.Printf("%s\trace-free\n", p.path)
		case *why:
			fmt.Printf("%s\t%s\n", p.path, p.why)
		case p.why == "":
			fmt.Println(p.path)
		}
	}
}

// pkg is a package with tests, and where its test binary's module code
// first starts a goroutine ("" for race-free).
type pkg struct{ path, why string }

// classify names each package with tests among patterns, sorted, with
// the reason it is not race-free.
func classify(patterns []string) ([]pkg, error) {
	mod, err := goList("list", "-m")
	if err != nil {
		return nil, err
	}
	module := strings.TrimSpace(string(mod))
	// Every package of the module and its folder, from whatever folder
	// racefree runs in: the packages that patterns name may import any
	// of them, and only theirs are read.
	out, err := goList("list", "-e", "-f", "{{.ImportPath}}\t{{.Dir}}", module+"/...")
	if err != nil {
		return nil, err
	}
	dirs := map[string]string{}
	for _, line := range lines(out) {
		path, dir, ok := strings.Cut(line, "\t")
		if ok {
			dirs[path] = dir
		}
	}
	// Each test binary of the named packages (ImportPath p.test) and the
	// packages linked into it.
	out, err = goList(append([]string{"list", "-e", "-test", "-f", "{{.ImportPath}}\t{{join .Deps \" \"}}"}, patterns...)...)
	if err != nil {
		return nil, err
	}
	// Why a module package's folder starts goroutines ("" where it does
	// not): its code alone, or with its test files.
	type files struct {
		dir   string
		tests bool
	}
	starts := map[files]string{}
	var pkgs []pkg
	for _, line := range lines(out) {
		bin, deps, _ := strings.Cut(line, "\t")
		path, ok := strings.CutSuffix(bin, ".test")
		if !ok || dirs[path] == "" {
			continue
		}
		p := pkg{path: path}
		for _, d := range append(strings.Fields(deps), path) {
			d, _, _ = strings.Cut(d, " ") // "p [p.test]": p built with its tests
			dir := dirs[d]
			if dir == "" {
				continue // the standard library's, or another module's
			}
			// The tested package with its test files; what it imports
			// without theirs.
			key := files{dir, d == path}
			why, seen := starts[key]
			if !seen {
				why, err = startsGoroutines(key.dir, key.tests)
				if err != nil {
					return nil, err
				}
				starts[key] = why
			}
			if why != "" {
				p.why = why
				break
			}
		}
		pkgs = append(pkgs, p)
	}
	slices.SortFunc(pkgs, func(a, b pkg) int { return strings.Compare(a.path, b.path) })
	return slices.CompactFunc(pkgs, func(a, b pkg) bool { return a.path == b.path }), nil
}

// startsGoroutines reads every .go file in dir (but the _test.go files
// unless tests) and says where the first of them starts a goroutine, or
// "" where none does.
func startsGoroutines(dir string, tests bool) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return "", err
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if !tests && strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			return "", err
		}
		if why := fileStarts(fset, f); why != "" {
			return why, nil
		}
	}
	return "", nil
}

// fileStarts says where f starts a goroutine, or "".
func fileStarts(fset *token.FileSet, f *ast.File) string {
	for _, imp := range f.Imports {
		switch path, _ := strconv.Unquote(imp.Path.Value); path {
		case "net/http/httptest", "os/signal":
			return fmt.Sprintf("%s: imports %s", fset.Position(imp.Pos()), path)
		}
	}
	var why string
	ast.Inspect(f, func(n ast.Node) bool {
		if why != "" {
			return false
		}
		switch n := n.(type) {
		case *ast.GoStmt:
			why = fmt.Sprintf("%s: a go statement", fset.Position(n.Pos()))
		case *ast.CallExpr:
			var name string
			switch fn := n.Fun.(type) {
			case *ast.SelectorExpr:
				name = fn.Sel.Name
			case *ast.Ident:
				name = fn.Name
			}
			switch name {
			case "Go", "Parallel", "AfterFunc", "Serve", "ServeTLS", "ListenAndServe", "ListenAndServeTLS":
				why = fmt.Sprintf("%s: calls %s", fset.Position(n.Pos()), name)
			}
		}
		return why == ""
	})
	return why
}

func goList(args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}

func lines(b []byte) []string {
	var ls []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if l := sc.Text(); l != "" {
			ls = append(ls, l)
		}
	}
	return ls
}
