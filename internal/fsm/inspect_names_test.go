package fsm

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// Every record type a snapshot may hold has a name in `operator snapshot
// inspect`: the autopilot configuration, node pools, variables, service
// registrations and the ACL tables were listed as "Type34", "Type66", ...
// The constants are read from this package's source, so a type added
// later without a name fails here.
func TestEverySnapshotTypeHasAName(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.CONST {
					continue
				}
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "SnapshotType" {
						continue
					}
					for i, name := range vs.Names {
						lit, ok := vs.Values[i].(*ast.BasicLit)
						if !ok {
							t.Fatalf("%s: not a literal", name.Name)
						}
						seen++
						var v int
						for _, c := range lit.Value {
							v = v*10 + int(c-'0')
						}
						if got := SnapshotTableName(SnapshotType(v)); strings.HasPrefix(got, "Type") {
							t.Errorf("%s (%d) has no name: inspect shows %q", name.Name, v, got)
						}
					}
				}
			}
		}
	}
	if seen < 20 {
		t.Fatalf("found only %d SnapshotType constants: the parse missed them", seen)
	}
}
