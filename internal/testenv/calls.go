package testenv

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// EachCall visits every call expression of the module's non-test Go files
// outside the folders skip (relative to the module root, e.g.
// "core/credits"), with the file's path relative to the root: the walk
// that guard tests ("nothing writes X but package Y") share. root is the
// module root as seen from the calling test's folder ("../.." from
// core/credits). It fails the test if fewer than 100 files were read (the
// layout changed and the guard would pass by seeing nothing).
func EachCall(t *testing.T, root string, skip []string, visit func(rel string, call *ast.CallExpr)) {
	t.Helper()
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == ".git" || rel == "node_modules" || strings.HasSuffix(rel, "/node_modules") {
				return filepath.SkipDir
			}
			for _, s := range skip {
				if rel == s {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				visit(rel, call)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("read only %d files under %s; did the layout change?", checked, root)
	}
}
