package uploader

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestAPIHidesInternalTypes guards the SDK's surface: no exported method or
// field of its types hands out a type of one of objup's internal packages.
// A method of an embedded struct is promoted to the embedding type, so a
// method that the machinery needs on an upload's target (for package
// telemetry, say) would otherwise show up on the Writer.
func TestAPIHidesInternalTypes(t *testing.T) {
	internal := func(typ reflect.Type) bool {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		p := typ.PkgPath()
		return strings.HasPrefix(p, "github.com/objup/objup/") && strings.Contains(p, "/internal/")
	}
	for _, v := range []any{&Writer{}, &Client{}, &Error{}, &ObjectAttrs{}, &Item{}, &Result{}, &ParallelUpload{}, &TenantLimits{}} {
		typ := reflect.TypeOf(v)
		for i := range typ.NumMethod() {
			m := typ.Method(i)
			for j := range m.Type.NumIn() {
				if internal(m.Type.In(j)) {
					t.Errorf("%v.%s takes %v, a type of an internal package", typ, m.Name, m.Type.In(j))
				}
			}
			for j := range m.Type.NumOut() {
				if internal(m.Type.Out(j)) {
					t.Errorf("%v.%s returns %v, a type of an internal package", typ, m.Name, m.Type.Out(j))
				}
			}
		}
		st := typ.Elem()
		for i := range st.NumField() {
			if f := st.Field(i); f.IsExported() && internal(f.Type) {
				t.Errorf("%v.%s is %v, a type of an internal package", st, f.Name, f.Type)
			}
		}
	}
	// The methods package telemetry needs of an upload are not the Writer's.
	for _, name := range []string{"Context", "Names", "Telemetry"} {
		if _, ok := reflect.TypeOf(&Writer{}).MethodByName(name); ok {
			t.Errorf("Writer has a method %s, promoted from its target", name)
		}
	}
}

// maxExported bounds the package's surface: its exported top-level names
// plus the exported methods of its exported types. The machinery's knobs
// live in package experimental. The XML API's multipart upload added five:
// a parallel upload's method (ParallelMethod, ViaMultipart, ViaCompose),
// its handle's kind and the XML endpoint of a gRPC client.
const maxExported = 81

// TestSurfaceIsSmall counts the package's exported names, from its source.
func TestSurfaceIsSmall(t *testing.T) {
	fset := token.NewFileSet()
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	var names []string
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					names = append(names, d.Name.Name)
					continue
				}
				recv := d.Recv.List[0].Type
				if s, ok := recv.(*ast.StarExpr); ok {
					recv = s.X
				}
				if id, ok := recv.(*ast.Ident); ok && id.IsExported() {
					names = append(names, id.Name+"."+d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							names = append(names, s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								names = append(names, n.Name)
							}
						}
					}
				}
			}
		}
	}
	slices.Sort(names)
	if len(names) > maxExported {
		t.Errorf("%d exported names, at most %d: %v", len(names), maxExported, names)
	}
	t.Logf("%d exported names", len(names))
}
