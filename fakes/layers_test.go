package fakes_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/fakes/internal/grpcfront"
)

// The fake's layers, bottom up: the core (what GCS does), the per-call
// layer (log, fault rules, roles, retry tests), the two fronts, and the
// face (this package).
const (
	modPath   = "github.com/objup/objup/fakes"
	corePkg   = modPath + "/internal/core"
	callsPkg  = modPath + "/internal/calls"
	grpcFront = modPath + "/internal/grpcfront"
	httpFront = modPath + "/internal/httpfront"
)

// imports returns the imports of the non-test Go files of the package
// dir, relative to this module's root.
func imports(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range af.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	if len(out) == 0 && len(files) == 0 {
		t.Fatalf("no Go files in %s", dir)
	}
	return out
}

// deps returns pkg's imports, direct and indirect, following only this
// module's packages (those are read from their directories).
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	seen := map[string]bool{}
	var walk func(p string)
	walk = func(p string) {
		for _, im := range imports(t, "."+strings.TrimPrefix(p, modPath)) {
			if seen[im] {
				continue
			}
			seen[im] = true
			if strings.HasPrefix(im, modPath+"/") {
				walk(im)
			}
		}
	}
	walk(pkg)
	var out []string
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// TestLayers fails when a layer of the fake imports one above it or
// beside it: the core imports neither the per-call layer nor a front, nor
// net/http or gRPC's server; the per-call layer imports no front; the
// fronts never import each other (what both need lives below them), and
// neither imports the other's wire library.
func TestLayers(t *testing.T) {
	tests := []struct {
		pkg    string
		deps   []string // never imported, directly or not
		direct []string // never imported by the package's own files
	}{
		{pkg: corePkg, deps: []string{callsPkg, grpcFront, httpFront, modPath}, direct: []string{"net/http", "google.golang.org/grpc", "google.golang.org/grpc/metadata"}},
		{pkg: callsPkg, deps: []string{grpcFront, httpFront, modPath}},
		{pkg: grpcFront, deps: []string{httpFront, modPath}, direct: []string{"net/http"}},
		{pkg: httpFront, deps: []string{grpcFront, modPath}, direct: []string{"google.golang.org/grpc"}},
	}
	for _, tt := range tests {
		t.Run(strings.TrimPrefix(tt.pkg, modPath+"/"), func(t *testing.T) {
			all := deps(t, tt.pkg)
			for _, bad := range tt.deps {
				if slices.Contains(all, bad) {
					t.Errorf("%s imports %s (directly or through another package): a layer imports only the layers below it", tt.pkg, bad)
				}
			}
			own := imports(t, "."+strings.TrimPrefix(tt.pkg, modPath))
			for _, bad := range tt.direct {
				if slices.Contains(own, bad) {
					t.Errorf("%s imports %s", tt.pkg, bad)
				}
			}
		})
	}
}

// TestFilesAreSmall fails when a non-test Go file of the fake, generated
// code aside, is over 400 lines: a file holds one job.
func TestFilesAreSmall(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.HasSuffix(path, ".pb.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if n := strings.Count(string(b), "\n"); n > 400 {
			t.Errorf("%s has %d lines; split it by job (400 at most)", path, n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestMethodNamesAreServed fails when a Method constant of the face names
// no method the gRPC front serves and the fault rules take: the face
// spells the names out for its readers, the front keeps its own.
func TestMethodNamesAreServed(t *testing.T) {
	srv := fakes.NewTest(t)
	for _, m := range []string{
		fakes.MethodWriteObject, fakes.MethodBidiWriteObject, fakes.MethodStartResumableWrite,
		fakes.MethodQueryWriteStatus, fakes.MethodReadObject, fakes.MethodBidiReadObject,
		fakes.MethodGetObject, fakes.MethodListObjects, fakes.MethodDeleteObject,
		fakes.MethodUpdateObject, fakes.MethodComposeObject,
	} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: %v", m, r)
				}
			}()
			srv.Delay(m, 0) // panics on a method the fault rules do not take
		}()
	}
	if got := grpcfront.RPCNamed[fakes.MethodCancelResumableWrite]; got == nil {
		t.Errorf("%s is not served", fakes.MethodCancelResumableWrite)
	}
}
