package core

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestNewIDFormat(t *testing.T) {
	t.Parallel()
	for _, prefix := range []string{PrefixFax, PrefixAttempt, PrefixLedger, PrefixOwner, PrefixDocument, PrefixUpload} {
		id := NewID(prefix)
		rest, ok := strings.CutPrefix(id, prefix)
		if !ok || len(rest) != 26 || !WellFormedID(id) {
			t.Fatalf("NewID(%q) = %q: want the prefix and 26 base32 characters", prefix, id)
		}
		b, err := idEncoding.DecodeString(rest)
		if err != nil || len(b) != 16 {
			t.Fatalf("NewID(%q) = %q does not decode to 16 bytes: %v", prefix, id, err)
		}
	}
}

// Faxes, attempts and ledger entries carry their millisecond first, so later
// ones sort after earlier ones; within a millisecond they differ by 80
// random bits.
func TestOrderedIDs(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	var ids []string
	for i := range 200 {
		ids = append(ids, orderedID(t0.Add(time.Duration(i)*time.Millisecond)))
	}
	if !slices.IsSorted(ids) {
		t.Fatalf("ids of increasing times are not in order: %v", ids[:5])
	}
	if got := idTime(t, "x_"+ids[0]); !got.Equal(t0) {
		t.Errorf("first 48 bits are %s, want %s", got, t0)
	}
	seen := map[string]bool{}
	for range 10000 {
		id := orderedID(t0)
		if seen[id] {
			t.Fatalf("duplicate id %s in one millisecond", id)
		}
		seen[id] = true
	}
}

// The rows written at volume get ordered ids; others stay random: an
// owner's or a key's id says nothing of when it was made.
func TestNewIDOrdersOnlyVolumeRows(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		for _, prefix := range []string{PrefixFax, PrefixAttempt, PrefixLedger} {
			before := NewID(prefix)
			time.Sleep(time.Millisecond)
			if after := NewID(prefix); after <= before {
				t.Errorf("%s made later sorts before %s", after, before)
			}
			if d := time.Until(idTime(t, before)); d < -time.Second || d > time.Second {
				t.Errorf("%s carries a time %s away from now", before, d)
			}
		}
		for _, prefix := range []string{PrefixOwner, PrefixAPIKey, PrefixSession, PrefixUpload} {
			// A random 48-bit prefix lands within an hour of now once in
			// 10^8 draws.
			if d := time.Until(idTime(t, NewID(prefix))); d > -time.Hour && d < time.Hour {
				t.Errorf("a %s id carries the current time", prefix)
			}
		}
	})
}

// idTime reads the time an ordered id would carry.
func idTime(t *testing.T, id string) time.Time {
	t.Helper()
	b, err := idEncoding.DecodeString(id[strings.IndexByte(id, '_')+1:])
	if err != nil {
		t.Fatalf("decode %s: %v", id, err)
	}
	var ms int64
	for _, c := range b[:6] {
		ms = ms<<8 | int64(c)
	}
	return time.UnixMilli(ms)
}

// TestPrefixesLiveInIDsGo: every id and secret prefix is declared once, in
// ids.go, and no two things share one (a pasted id must say what it is).
func TestPrefixesLiveInIDsGo(t *testing.T) {
	seen := map[string]string{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasPrefix(name.Name, "Prefix") && !strings.HasPrefix(name.Name, "Secret") || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					value, _ := strconv.Unquote(lit.Value)
					if !strings.HasSuffix(value, "_") {
						continue
					}
					if filepath.ToSlash(path) != "../core/ids.go" {
						t.Errorf("%s declares the id prefix %s (%q): it belongs in core/ids.go", path, name.Name, value)
					}
					if other, dup := seen[value]; dup {
						t.Errorf("%s and %s share the prefix %q", other, name.Name, value)
					}
					seen[value] = name.Name
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) < 30 {
		t.Fatalf("found only %d prefixes; did ids.go's layout change?", len(seen))
	}
}
