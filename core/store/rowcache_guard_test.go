package store

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// keptTableWrite matches a statement that changes a row the caches keep
// (rowcache.go): an UPDATE or DELETE of their tables, or an upsert of a
// client. Inserts are not changes of kept rows.
var keptTableWrite = regexp.MustCompile(`(?is)(UPDATE|DELETE FROM)\s+(api_keys|hosts|delegated_agents|oauth_tokens|oauth_grants|oauth_clients|documents|uploads)\b|INSERT INTO oauth_clients\b.*DO UPDATE|oauthClientInsert\s*\+\s*` + "`" + `\s*ON CONFLICT \(id\) DO UPDATE`)

// TestKeptTablesWritesMarkTheirCache reads the store's source: every
// function whose SQL changes a table a cache keeps must mark it (changed,
// changing), update it (a last use), or say why not (a comment naming
// rowcache.go). A write added without one would let SQLite answer a
// revoked credential from its cache.
func TestKeptTablesWritesMarkTheirCache(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			from, to := fset.Position(fn.Pos()).Offset, fset.Position(fn.End()).Offset
			if fn.Doc != nil {
				from = fset.Position(fn.Doc.Pos()).Offset
			}
			text := string(src[from:to])
			if !keptTableWrite.MatchString(text) {
				continue
			}
			checked++
			if !strings.Contains(text, ".changed()") && !strings.Contains(text, "x.changing(") &&
				!strings.Contains(text, ".update(func") && !strings.Contains(text, "rowcache.go") {
				t.Errorf("%s: %s changes a table a cache keeps (rowcache.go) without marking the cache", name, fn.Name.Name)
			}
		}
	}
	t.Logf("%d functions write kept tables", checked)
	if checked < 15 {
		t.Fatalf("found %d functions writing kept tables; the pattern no longer finds them", checked)
	}
}
