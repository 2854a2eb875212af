package web_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core/web"
)

var origins = web.Origins{web.OriginBase: "https://fax.example/", web.OriginAPI: "https://api.fax.example"}

// echo answers with the route's name and its path values.
func echo(name string, vars ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out := name
		for _, v := range vars {
			out += " " + v + "=" + r.PathValue(v)
		}
		_, _ = w.Write([]byte(out))
	})
}

type answer struct {
	status         int
	allow, loc, ct string
	body           string
}

func serve(h http.Handler, method, target string) answer {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	return answer{rec.Code, rec.Header().Get("Allow"), rec.Header().Get("Location"), rec.Header().Get("Content-Type"), rec.Body.String()}
}

// TestLikeServeMux: for the same routes, the router answers every request
// as net/http's ServeMux does (the behaviour faxhub had before it had one
// router): matches, HEAD for GET, wildcards, subtrees, 404, 405 with Allow,
// the trailing-slash and clean-path redirects.
func TestLikeServeMux(t *testing.T) {
	routes := []struct {
		pattern string // ServeMux pattern
		rt      web.Route
		vars    []string
	}{
		{"GET /healthz", web.Route{Name: "t.health", Methods: "GET", Path: "/healthz"}, nil},
		{"GET /{$}", web.Route{Name: "t.home", Methods: "GET", Path: "/"}, nil},
		{"POST /api/v1/faxes", web.Route{Name: "t.send", Methods: "POST", Path: "/api/v1/faxes"}, nil},
		{"GET /api/v1/faxes", web.Route{Name: "t.list", Methods: "GET", Path: "/api/v1/faxes"}, nil},
		{"GET /api/v1/faxes/{id}", web.Route{Name: "t.get", Methods: "GET", Path: "/api/v1/faxes/{id}"}, []string{"id"}},
		{"POST /api/v1/faxes/{id}/cancel", web.Route{Name: "t.cancel", Methods: "POST", Path: "/api/v1/faxes/{id}/cancel"}, []string{"id"}},
		{"GET /api/v1/numbers/{id}", web.Route{Name: "t.number", Methods: "GET", Path: "/api/v1/numbers/{id}"}, []string{"id"}},
		{"GET /api/v1/numbers/available", web.Route{Name: "t.available", Methods: "GET", Path: "/api/v1/numbers/available"}, nil},
		{"DELETE /api/v1/numbers/{id}", web.Route{Name: "t.release", Methods: "DELETE", Path: "/api/v1/numbers/{id}"}, []string{"id"}},
		{"GET /static/", web.Route{Name: "t.static", Methods: "GET", Path: "/static/", Prefix: true}, nil},
		{"/tree/", web.Route{Name: "t.tree", Methods: "GET POST PUT DELETE PATCH OPTIONS", Path: "/tree/", Prefix: true, OwnMethods: true}, nil},
		{"GET /console", web.Route{Name: "t.console", Methods: "GET", Path: "/console"}, nil},
		{"GET /console/{$}", web.Route{Name: "t.consoleSlash", Methods: "GET", Path: "/console/"}, nil},
		{"/mcp", web.Route{Name: "t.mcp", Methods: "POST", Path: "/mcp", OwnMethods: true}, nil},
	}
	sm := http.NewServeMux()
	r := web.NewRouter(origins)
	g := r.Group("t", web.OriginBase)
	for _, c := range routes {
		sm.Handle(c.pattern, echo(c.rt.Name, c.vars...))
		c.rt.Auth = web.AuthNone
		g.Handle(c.rt, echo(c.rt.Name, c.vars...))
	}
	for _, target := range []string{
		"/", "/healthz", "/healthz/", "/nope", "/api/v1/faxes", "/api/v1/faxes/", "/api/v1/faxes/fax_1",
		"/api/v1/faxes/a%2Fb", "/api/v1/faxes/a%20b", "/api/v1/faxes/fax_1/cancel", "/api/v1/numbers/available",
		"/api/v1/numbers/num_1", "/static", "/static/", "/static/app.js", "/static/a/b", "/tree", "/tree/", "/tree/x",
		"/console", "/console/", "/console/x", "/mcp", "/mcp/", "//api/v1/faxes", "/api/v1/./faxes", "/api/v1/faxes/../x",
		"/api/v1/faxes?x=1", "/static?q=1", "/a/../healthz?x=y",
	} {
		for _, m := range []string{"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"} {
			if want, got := serve(sm, m, target), serve(r, m, target); want != got {
				t.Errorf("%s %s: router %+v, ServeMux %+v", m, target, got, want)
			}
		}
	}
}

func TestFallbacks(t *testing.T) {
	r := web.NewRouter(origins)
	tag := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Group", "api")
			next.ServeHTTP(w, r)
		})
	}
	g := r.Group("api", web.OriginAPI, tag)
	g.Handle(web.Route{Name: "api.get", Methods: "GET", Path: "/api/v1/faxes/{id}", Auth: web.AuthAPIKey}, echo("api.get", "id"))
	g.Handle(web.Route{Name: "api.inboxGet", Methods: "GET", Path: "/api/v1/inbox/{id}", Auth: web.AuthAPIKey}, echo("api.inboxGet", "id"))
	g.Handle(web.Route{Name: "api.simulate", Methods: "POST", Path: "/api/v1/inbox/simulate", Auth: web.AuthAPIKey}, echo("api.simulate"))
	family := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "family %s allow=%s", r.URL.Path, strings.Join(web.Allowed(r), ","))
	})
	g.Fallback("/api/v1", family)
	g.Fallback("/api/v1/", family)
	r.Group("page", web.OriginBase, tag).Fallback("/checkout/", nil)
	for _, c := range []struct {
		method, target string
		status         int
		body, group    string
	}{
		{"GET", "/api/v1/faxes/fax_1", 200, "api.get id=fax_1", "api"},
		{"DELETE", "/api/v1/faxes/fax_1", 200, "family /api/v1/faxes/fax_1 allow=GET,HEAD", "api"},
		{"GET", "/api/v1/nope", 200, "family /api/v1/nope allow=", "api"},
		{"GET", "/api/v1", 200, "family /api/v1 allow=", "api"},
		// the wildcard takes GET, the literal POST: both are allowed.
		{"DELETE", "/api/v1/inbox/simulate", 200, "family /api/v1/inbox/simulate allow=GET,HEAD,POST", "api"},
		{"GET", "/api/v2", 404, "404 page not found\n", ""},
		// a nil fallback is the router's answer inside the group.
		{"GET", "/checkout/x", 404, "404 page not found\n", "api"},
		{"GET", "/checkout", 307, "", ""},
	} {
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, httptest.NewRequest(c.method, c.target, nil))
		body := rec.Body.String()
		if c.status == 307 {
			body = ""
		}
		if rec.Code != c.status || body != c.body || rec.Header().Get("X-Group") != c.group {
			t.Errorf("%s %s = %d %q (group %q), want %d %q (group %q)", c.method, c.target, rec.Code, body, rec.Header().Get("X-Group"), c.status, c.body, c.group)
		}
	}
}

// TestMostSpecificFirst: the order of registration does not decide which
// of two overlapping routes serves a request.
func TestMostSpecificFirst(t *testing.T) {
	for _, reversed := range []bool{false, true} {
		r := web.NewRouter(origins)
		g := r.Group("t", web.OriginBase)
		rts := []web.Route{
			{Name: "t.id", Methods: "GET", Path: "/n/{id}", Auth: web.AuthNone},
			{Name: "t.available", Methods: "GET", Path: "/n/available", Auth: web.AuthNone},
			{Name: "t.tree", Methods: "GET", Path: "/n/", Prefix: true, Auth: web.AuthNone},
		}
		if reversed {
			slices.Reverse(rts)
		}
		for _, rt := range rts {
			g.Handle(rt, echo(rt.Name))
		}
		for target, want := range map[string]string{"/n/available": "t.available", "/n/x": "t.id", "/n/x/y": "t.tree", "/n/": "t.tree"} {
			if got := serve(r, "GET", target).body; got != want {
				t.Errorf("reversed=%v GET %s served by %q, want %q", reversed, target, got, want)
			}
		}
	}
}

func TestURL(t *testing.T) {
	r := web.NewRouter(origins)
	r.Group("rest", web.OriginAPI).Handle(web.Route{Name: "rest.getFax", Methods: "GET", Path: "/api/v1/faxes/{id}", Auth: web.AuthAPIKey}, echo(""))
	r.Group("mcp", web.OriginBase).Handle(web.Route{Name: "mcp.upload", Methods: "GET", Path: "/upload", Auth: web.AuthNone}, echo(""))
	for _, c := range []struct {
		name  string
		pairs []string
		want  string
	}{
		{"rest.getFax", []string{"id", "fax_1"}, "https://api.fax.example/api/v1/faxes/fax_1"},
		{"rest.getFax", []string{"id", "a b"}, "https://api.fax.example/api/v1/faxes/a%20b"},
		{"mcp.upload", nil, "https://fax.example/upload"},
	} {
		got, err := r.URL(c.name, c.pairs...)
		if err != nil || got != c.want {
			t.Errorf("URL(%s, %v) = %q, %v; want %q", c.name, c.pairs, got, err, c.want)
		}
	}
	for _, c := range []struct {
		name  string
		pairs []string
	}{{"rest.nope", nil}, {"rest.getFax", nil}, {"rest.getFax", []string{"id"}}, {"rest.getFax", []string{"id", "a/b"}}} {
		if got, err := r.URL(c.name, c.pairs...); err == nil {
			t.Errorf("URL(%s, %v) = %q, want an error", c.name, c.pairs, got)
		}
	}
	if p, err := r.Path("rest.getFax", "id", "fax_1"); err != nil || p != "/api/v1/faxes/fax_1" {
		t.Errorf("Path = %q, %v", p, err)
	}
	// A built URL is served by its route.
	u, _ := r.URL("rest.getFax", "id", "a b")
	if got := serve(r, "GET", strings.TrimPrefix(u, "https://api.fax.example")); got.status != 200 {
		t.Errorf("GET %s = %d", u, got.status)
	}
}

func TestRoutesAndSlot(t *testing.T) {
	r := web.NewRouter(origins)
	r.Group("rest", web.OriginAPI).Handle(web.Route{Name: "rest.getFax", Methods: "GET", Path: "/api/v1/faxes/{id}", Auth: web.AuthAPIKey}, echo(""))
	r.Group("rest", web.OriginAPI).Fallback("/api/v1/", nil)
	r.Group("app", web.OriginBase).Handle(web.Route{Name: "app.health", Methods: "GET", Path: "/healthz", Auth: web.AuthNone}, echo(""))
	if rt, ok := r.Lookup("GET", "/api/v1/faxes/fax_1"); !ok || rt.Name != "rest.getFax" {
		t.Errorf("Lookup = %+v, %v", rt, ok)
	}
	if rt, ok := r.Lookup("POST", "/api/v1/faxes/fax_1"); ok {
		t.Errorf("Lookup of another method = %+v", rt)
	}
	got := r.Routes()
	if len(got) != 2 {
		t.Fatalf("Routes = %+v", got)
	}
	for _, ri := range got {
		want := map[string]string{"rest.getFax": "api.fax.example", "app.health": "fax.example"}[ri.Name]
		if ri.Host != want {
			t.Errorf("%s on %q, want %q", ri.Name, ri.Host, want)
		}
	}
	for target, want := range map[string]web.RouteSlot{
		"/api/v1/faxes/fax_1": {Name: "rest.getFax", Template: "/api/v1/faxes/{id}"},
		"/api/v1/x":           {Template: "/api/v1/"},
		"/nowhere":            {},
		"/healthz":            {Name: "app.health", Template: "/healthz"},
		"//healthz":           {Name: "app.health", Template: "/healthz"},
	} {
		req, slot := web.WithRouteSlot(httptest.NewRequest("GET", target, nil))
		r.ServeHTTP(httptest.NewRecorder(), req)
		if *slot != want {
			t.Errorf("GET %s: slot %+v, want %+v", target, *slot, want)
		}
	}
}

func TestRegistrationMistakesPanic(t *testing.T) {
	for name, f := range map[string]func(g *web.Group){
		"no name":   func(g *web.Group) { g.Handle(web.Route{Methods: "GET", Path: "/a", Auth: web.AuthNone}, echo("")) },
		"no method": func(g *web.Group) { g.Handle(web.Route{Name: "t.a", Path: "/a", Auth: web.AuthNone}, echo("")) },
		"no auth":   func(g *web.Group) { g.Handle(web.Route{Name: "t.a", Methods: "GET", Path: "/a"}, echo("")) },
		"bad prefix": func(g *web.Group) {
			g.Handle(web.Route{Name: "t.a", Methods: "GET", Path: "/a", Prefix: true, Auth: web.AuthNone}, echo(""))
		},
		"no origin": func(g *web.Group) {
			g.Handle(web.Route{Name: "t.a", Methods: "GET", Path: "/a", Auth: web.AuthNone, Origin: web.OriginMetrics}, echo(""))
		},
		"same name": func(g *web.Group) {
			g.Handle(web.Route{Name: "t.a", Methods: "GET", Path: "/a", Auth: web.AuthNone}, echo(""))
			g.Handle(web.Route{Name: "t.a", Methods: "GET", Path: "/b", Auth: web.AuthNone}, echo(""))
		},
		"same route": func(g *web.Group) {
			g.Handle(web.Route{Name: "t.a", Methods: "GET POST", Path: "/a", Auth: web.AuthNone}, echo(""))
			g.Handle(web.Route{Name: "t.b", Methods: "POST", Path: "/a", Auth: web.AuthNone}, echo(""))
		},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			f(web.NewRouter(origins).Group("t", web.OriginBase))
		})
	}
	// Two methods on one path are two routes, not a mistake.
	g := web.NewRouter(origins).Group("t", web.OriginBase)
	g.Handle(web.Route{Name: "t.get", Methods: "GET", Path: "/a", Auth: web.AuthNone}, echo(""))
	g.Handle(web.Route{Name: "t.post", Methods: "POST", Path: "/a", Auth: web.AuthNone}, echo(""))
}
