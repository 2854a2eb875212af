package app_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/faxhub/faxhub"

// goList runs go list -f format on the patterns: one line per package.
func goList(t *testing.T, format string, args ...string) []string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH")
	}
	out, err := exec.Command(goTool, append([]string{"list", "-f", format}, args...)...).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list %v: %v\n%s", args, err, ee.Stderr)
		}
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// TestTestDoublesStayOutOfTheBinary: the Stripe test backend is in the
// binary (test mode serves it), the Tempo stand-in, tests only, is not.
func TestTestDoublesStayOutOfTheBinary(t *testing.T) {
	deps := map[string]bool{}
	for _, p := range goList(t, "{{.ImportPath}}", "-deps", module+"/cmd/faxhub") {
		deps[p] = true
	}
	if !deps[module+"/internal/stripetest"] {
		t.Error("internal/stripetest is not in cmd/faxhub: test mode's built-in Stripe backend is missing")
	}
	for _, p := range []string{module + "/internal/tempotest", module + "/internal/testenv", module + "/conformance/storetest"} {
		if deps[p] {
			t.Errorf("%s is linked into cmd/faxhub", p)
		}
	}
}

// httpServing are the net/http names only a server-side handler needs.
var httpServing = map[string]bool{
	"ResponseWriter": true, "Handler": true, "HandlerFunc": true, "ServeMux": true, "NewServeMux": true,
	"Handle": true, "HandleFunc": true, "ListenAndServe": true, "Server": true, "FileServer": true, "FileServerFS": true,
}

// webRouting are the names of core/web's router: only adapters register
// routes.
var webRouting = map[string]bool{"Router": true, "NewRouter": true, "Group": true, "Route": true, "Middleware": true}

// TestNoHandlerUnderCore: no package under core/ but core/web defines a
// ServeHTTP, uses net/http's server side (a ResponseWriter, a Handler, a
// ServeMux) or registers a route: webhooks, pages and /metrics are
// adapters (docs/architecture.md).
func TestNoHandlerUnderCore(t *testing.T) {
	for _, line := range goList(t, "{{.ImportPath}}|{{.Dir}}|{{join .GoFiles \",\"}}", module+"/core/...") {
		path, rest, _ := strings.Cut(line, "|")
		dir, files, _ := strings.Cut(rest, "|")
		if path == module+"/core/web" || files == "" {
			continue
		}
		for _, f := range strings.Split(files, ",") {
			name := filepath.Join(dir, f)
			file, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			local := map[string]string{} // import name → path, for net/http and core/web
			for _, imp := range file.Imports {
				p := strings.Trim(imp.Path.Value, `"`)
				if p != "net/http" && p != module+"/core/web" {
					continue
				}
				n := filepath.Base(p)
				if imp.Name != nil {
					n = imp.Name.Name
				}
				local[n] = p
			}
			rel := strings.TrimPrefix(path, module+"/") + "/" + f
			ast.Inspect(file, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.FuncDecl:
					if n.Recv != nil && n.Name.Name == "ServeHTTP" {
						t.Errorf("%s: %s defines ServeHTTP", rel, path)
					}
				case *ast.SelectorExpr:
					id, ok := n.X.(*ast.Ident)
					if !ok {
						break
					}
					switch local[id.Name] {
					case "net/http":
						if httpServing[n.Sel.Name] {
							t.Errorf("%s uses http.%s: an HTTP handler under core/", rel, n.Sel.Name)
						}
					case module + "/core/web":
						if webRouting[n.Sel.Name] {
							t.Errorf("%s uses web.%s: routes are registered by adapters", rel, n.Sel.Name)
						}
					}
				}
				return true
			})
		}
	}
}
