package web

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/gorilla/mux"
)

// Origin is the public origin a route's URLs are built on. Every public
// route is served on both the base and the API origin (docs/api.md); the
// origin only says which one the URLs faxhub hands out name.
type Origin string

const (
	// OriginBase is {base_url}: the pages people open (console, checkout,
	// upload), the MCP and A2A endpoints and the resources' discovery.
	OriginBase Origin = "base"
	// OriginAPI is {api_url}: /api/v1, the OAuth issuer's endpoints, the
	// Agent Auth endpoints, provider webhooks.
	OriginAPI Origin = "api"
	// OriginMetrics is the metrics listener (--metrics-addr): a listener
	// of its own, never a public origin.
	OriginMetrics Origin = "metrics"
)

// Auth is the credential a route expects (what `faxhub routes` prints).
// A route that takes either of two credentials says both: "a|b".
type Auth string

const (
	AuthNone       Auth = "none"       // nothing: public documents, pages and their assets
	AuthAPIKey     Auth = "api_key"    // Authorization: Bearer <API key>
	AuthBearer     Auth = "bearer"     // an OAuth or agent-registration access token
	AuthSession    Auth = "session"    // the owner's session cookie
	AuthHostJWT    Auth = "host_jwt"   // Agent Auth host+jwt
	AuthAgentJWT   Auth = "agent_jwt"  // Agent Auth agent+jwt
	AuthPayment    Auth = "payment"    // an MPP payment credential (HTTP 402)
	AuthSignature  Auth = "signature"  // a provider's signature over the body (webhooks)
	AuthCapability Auth = "capability" // a capability token in the URL (uploads, signed links)
	AuthClient     Auth = "client"     // an OAuth client's own request (PKCE, assertions, DCR)
)

// Route is one route of a Router.
type Route struct {
	// Name is unique in the router, "adapter.what"; URL builds on it.
	Name string
	// Methods are the methods it serves, space-separated ("GET", "GET
	// POST"). A route that serves GET serves HEAD too.
	Methods string
	// Path is a path template: {name} matches one non-empty segment, whose
	// value the handler reads with r.PathValue(name) (unescaped).
	Path string
	// Prefix makes the route serve Path, which ends in "/", and every path
	// below it.
	Prefix bool
	// OwnMethods hands every method on Path to the handler, which serves
	// Methods and refuses the others itself in its protocol's shape (a
	// JSON-RPC or OAuth error): the router's 405 never answers there.
	OwnMethods bool
	// Adapter is the package that owns the route (rest, oauth, …).
	Adapter string
	// Auth is the credential the route expects.
	Auth Auth
	// Origin is the origin its URLs are built on.
	Origin Origin
}

// MethodList is Methods as a list.
func (rt Route) MethodList() []string {
	return strings.Fields(strings.ReplaceAll(rt.Methods, ",", " "))
}

// Origins are the URLs of a router's origins (scheme, host, optional
// port; no trailing slash).
type Origins map[Origin]string

// Router is faxhub's one HTTP router: gorilla/mux matching over named
// routes, each registered by the adapter that owns it through a Group.
// It answers requests no route serves the way net/http's ServeMux did
// (307 to the canonical path or to the trailing-slash subtree, a plain
// 404, a 405 with Allow), unless an adapter registered a Fallback for the
// path, which answers in its protocol's shape. It builds the absolute URLs
// of named routes on their origins (URL). Register everything before the
// router serves its first request.
type Router struct {
	origins Origins

	mu        sync.Mutex
	entries   []*entry
	byName    map[string]*entry
	fallbacks []*fallback
	built     bool

	once    sync.Once
	mux     *mux.Router
	byRoute map[*mux.Route]*entry
	methods []string // every method some route serves, for Allow
}

type entry struct {
	Route
	methods []string // matched methods (HEAD added to GET)
	handler http.Handler
	group   *Group
}

type fallback struct {
	pattern string
	prefix  bool
	handler http.Handler
}

// NewRouter returns an empty router for the given origins.
func NewRouter(origins Origins) *Router {
	o := Origins{}
	for k, v := range origins {
		o[k] = strings.TrimRight(v, "/")
	}
	return &Router{origins: o, byName: map[string]*entry{}}
}

// Middleware wraps a handler.
type Middleware func(http.Handler) http.Handler

// Group registers one adapter's routes on one origin, each handler (and
// each fallback) wrapped in the group's middleware, outermost first.
type Group struct {
	r       *Router
	adapter string
	origin  Origin
	wrap    []Middleware
}

// Group starts registering the routes of adapter whose URLs are built on
// origin.
func (r *Router) Group(adapter string, origin Origin, wrap ...Middleware) *Group {
	return &Group{r: r, adapter: adapter, origin: origin, wrap: wrap}
}

func (g *Group) wrapped(h http.Handler) http.Handler {
	for i := len(g.wrap) - 1; i >= 0; i-- {
		h = g.wrap[i](h)
	}
	return h
}

// Handle registers rt served by h. The group fills rt's Adapter and Origin
// when they are empty. A malformed or duplicate route panics: it is a
// mistake in the code, found when the process starts.
func (g *Group) Handle(rt Route, h http.Handler) {
	rt.Adapter = cmp.Or(rt.Adapter, g.adapter)
	rt.Origin = cmp.Or(rt.Origin, g.origin)
	g.r.add(rt, g, g.wrapped(h))
}

// HandleFunc is Handle for a function.
func (g *Group) HandleFunc(rt Route, h http.HandlerFunc) { g.Handle(rt, h) }

// Fallback answers the requests under pattern that no route serves: a
// method the path's routes do not take (Allowed lists those they do) or,
// under a subtree, a path none of them has. A pattern ending in "/" is a
// subtree (it also matches itself); any other is one exact path. The
// longest matching pattern wins. A nil h gives the router's own answer
// (NotRouted) inside the group's middleware.
func (g *Group) Fallback(pattern string, h http.Handler) {
	if h == nil {
		h = http.HandlerFunc(NotRouted)
	}
	if !strings.HasPrefix(pattern, "/") {
		panic("web: fallback pattern " + pattern + " is not a path")
	}
	r := g.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.built {
		panic("web: fallback " + pattern + " registered after the router started serving")
	}
	for _, f := range r.fallbacks {
		if f.pattern == pattern {
			panic("web: two fallbacks for " + pattern)
		}
	}
	r.fallbacks = append(r.fallbacks, &fallback{pattern: pattern, prefix: strings.HasSuffix(pattern, "/"), handler: g.wrapped(h)})
}

func (r *Router) add(rt Route, g *Group, h http.Handler) {
	methods := rt.MethodList()
	switch {
	case rt.Name == "":
		panic("web: a route without a name: " + rt.Path)
	case len(methods) == 0:
		panic("web: route " + rt.Name + " has no method")
	case !strings.HasPrefix(rt.Path, "/"):
		panic("web: route " + rt.Name + " has no path")
	case rt.Prefix && !strings.HasSuffix(rt.Path, "/"):
		panic("web: prefix route " + rt.Name + " must end in /")
	case rt.Adapter == "" || rt.Auth == "":
		panic("web: route " + rt.Name + " needs an adapter and an auth")
	}
	if _, ok := r.origins[rt.Origin]; !ok {
		panic(fmt.Sprintf("web: route %s is on origin %q, which this router does not have", rt.Name, rt.Origin))
	}
	for i, m := range methods {
		methods[i] = strings.ToUpper(m)
	}
	if slices.Contains(methods, http.MethodGet) && !slices.Contains(methods, http.MethodHead) {
		methods = append(methods, http.MethodHead)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.built {
		panic("web: route " + rt.Name + " registered after the router started serving")
	}
	if _, dup := r.byName[rt.Name]; dup {
		panic("web: two routes named " + rt.Name)
	}
	for _, e := range r.entries {
		if e.Path == rt.Path && e.Prefix == rt.Prefix && (e.OwnMethods || rt.OwnMethods || slices.ContainsFunc(methods, func(m string) bool { return slices.Contains(e.methods, m) })) {
			panic("web: routes " + e.Name + " and " + rt.Name + " both serve " + rt.Path)
		}
	}
	e := &entry{Route: rt, methods: methods, handler: h, group: g}
	r.entries = append(r.entries, e)
	r.byName[rt.Name] = e
}

// build makes the gorilla router once, the most specific routes first (a
// literal segment before a {wildcard}, an exact path before a subtree), so
// that, as with ServeMux, the order of registration does not decide which
// of two overlapping routes serves a request.
func (r *Router) build() {
	r.once.Do(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.built = true
		order := slices.Clone(r.entries)
		slices.SortStableFunc(order, func(a, b *entry) int { return specificity(a.Route, b.Route) })
		m := mux.NewRouter().UseEncodedPath().SkipClean(true)
		r.byRoute = map[*mux.Route]*entry{}
		seen := map[string]bool{}
		for _, e := range order {
			gr := m.NewRoute().Name(e.Name)
			if e.Prefix {
				gr = gr.PathPrefix(e.Path)
			} else {
				gr = gr.Path(e.Path)
			}
			if !e.OwnMethods {
				gr = gr.Methods(e.methods...)
			}
			gr.Handler(e.handler)
			if err := gr.GetError(); err != nil {
				panic("web: route " + e.Name + ": " + err.Error())
			}
			r.byRoute[gr] = e
			for _, meth := range e.methods {
				seen[meth] = true
			}
		}
		for _, meth := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions} {
			if seen[meth] {
				r.methods = append(r.methods, meth)
				delete(seen, meth)
			}
		}
		var rest []string
		for meth := range seen {
			rest = append(rest, meth)
		}
		slices.Sort(rest)
		r.methods = append(r.methods, rest...)
		r.mux = m
	})
}

// specificity orders a before b (-1) when a is the more specific route:
// at the first segment where they differ in kind, a literal comes before a
// {wildcard}, and both before the rest of a subtree.
func specificity(a, b Route) int {
	sa, sb := segmentRanks(a), segmentRanks(b)
	for i := range min(len(sa), len(sb)) {
		if c := cmp.Compare(sa[i], sb[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(sb), len(sa))
}

// segmentRanks ranks each segment of a route's path: 0 a literal, 1 a
// {wildcard}, 2 the rest of a subtree.
func segmentRanks(rt Route) []int {
	segs := strings.Split(rt.Path, "/")
	ranks := make([]int, len(segs))
	for i, s := range segs {
		if strings.HasPrefix(s, "{") {
			ranks[i] = 1
		}
	}
	if rt.Prefix {
		ranks[len(ranks)-1] = 2
	}
	return ranks
}

// match finds the route serving method on r's path.
func (r *Router) match(req *http.Request, method, path string) *entry {
	probe := req
	if method != req.Method || path != req.URL.EscapedPath() {
		probe = new(http.Request)
		*probe = *req
		u := *req.URL
		if path != req.URL.EscapedPath() {
			u.Path, _ = url.PathUnescape(path)
			u.RawPath = path
		}
		probe.URL, probe.Method = &u, method
	}
	var m mux.RouteMatch
	if !r.mux.Match(probe, &m) || m.MatchErr != nil || m.Route == nil {
		return nil
	}
	return r.byRoute[m.Route]
}

// exact reports whether a route serves method on exactly path (not as a
// path below its subtree).
func (r *Router) exact(req *http.Request, method, path string) *entry {
	e := r.match(req, method, path)
	if e != nil && e.Prefix && e.Path != path {
		return nil
	}
	return e
}

// fallbackFor is the fallback whose pattern matches path, the longest.
func (r *Router) fallbackFor(path string) *fallback {
	var best *fallback
	for _, f := range r.fallbacks {
		if f.pattern == path || (f.prefix && strings.HasPrefix(path, f.pattern)) {
			if best == nil || len(f.pattern) > len(best.pattern) {
				best = f
			}
		}
	}
	return best
}

// ServeHTTP routes a request.
func (r *Router) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.build()
	slot, _ := req.Context().Value(routeSlotKey{}).(*RouteSlot)
	if req.RequestURI == "*" {
		// OPTIONS * asks about the server, not a resource (as ServeMux).
		if req.ProtoAtLeast(1, 1) {
			w.Header().Set("Connection", "close")
		}
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var m mux.RouteMatch
	var e *entry
	if r.mux.Match(req, &m) && m.MatchErr == nil && m.Route != nil {
		e = r.byRoute[m.Route]
	}
	if req.Method != http.MethodConnect {
		escaped := req.URL.EscapedPath()
		clean := cleanPath(escaped)
		served := e != nil && clean == escaped && (!e.Prefix || e.Path == clean)
		// As ServeMux: /tree answers with a redirect to /tree/ when only
		// the subtree exists, then unclean paths redirect to clean ones.
		if !served && !strings.HasSuffix(clean, "/") && r.exact(req, req.Method, clean) == nil && !r.exactFallback(clean) {
			if t := r.exact(req, req.Method, clean+"/"); t != nil || r.exactFallback(clean+"/") {
				slot.record(t, r.fallbackFor(clean+"/"))
				u := &url.URL{Path: cleanPath(req.URL.Path) + "/", RawQuery: req.URL.RawQuery}
				redirect := http.RedirectHandler(u.String(), http.StatusTemporaryRedirect)
				if t != nil {
					// A subtree route redirects inside its group's
					// middleware (as the adapter's own ServeMux did); a
					// fallback's subtree as the router.
					redirect = t.group.wrapped(redirect)
				}
				redirect.ServeHTTP(w, req)
				return
			}
		}
		if clean != escaped {
			t := r.match(req, req.Method, clean)
			var f *fallback
			if t == nil {
				f = r.fallbackFor(clean)
			}
			slot.record(t, f)
			u := &url.URL{Path: clean, RawQuery: req.URL.RawQuery}
			http.RedirectHandler(u.String(), http.StatusTemporaryRedirect).ServeHTTP(w, req)
			return
		}
	}
	if e != nil {
		slot.record(e, nil)
		for k, v := range m.Vars {
			if u, err := url.PathUnescape(v); err == nil {
				v = u
			}
			req.SetPathValue(k, v)
		}
		e.handler.ServeHTTP(w, req)
		return
	}
	r.unrouted(w, req, slot)
}

func (r *Router) exactFallback(path string) bool {
	for _, f := range r.fallbacks {
		if f.pattern == path {
			return true
		}
	}
	return false
}

type allowedKey struct{}

// unrouted answers a request no route serves: its path's fallback, or
// NotRouted.
func (r *Router) unrouted(w http.ResponseWriter, req *http.Request, slot *RouteSlot) {
	var allow []string
	path := req.URL.EscapedPath()
	for _, m := range r.methods {
		if m == req.Method {
			continue
		}
		// As ServeMux, the path with a slash added counts too, but not
		// through routes that take every method.
		if r.match(req, m, path) != nil {
			allow = append(allow, m)
		} else if !strings.HasSuffix(path, "/") {
			if e := r.match(req, m, path+"/"); e != nil && !e.OwnMethods {
				allow = append(allow, m)
			}
		}
	}
	req = req.WithContext(context.WithValue(req.Context(), allowedKey{}, allow))
	f := r.fallbackFor(path)
	slot.record(nil, f)
	if f != nil {
		f.handler.ServeHTTP(w, req)
		return
	}
	NotRouted(w, req)
}

// Allowed lists, in a fallback, the methods the routes of the request's
// path take (GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, then others
// alphabetically); empty when no route has the path.
func Allowed(r *http.Request) []string {
	a, _ := r.Context().Value(allowedKey{}).([]string)
	return a
}

// NotRouted is the router's answer to a request no route serves, as
// net/http's ServeMux gives it: 405 Method Not Allowed with Allow (sorted)
// when other methods are served on the path, else 404 page not found
// (both plain text).
func NotRouted(w http.ResponseWriter, r *http.Request) {
	allow := slices.Sorted(slices.Values(Allowed(r)))
	if len(allow) == 0 {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Allow", strings.Join(allow, ", "))
	http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
}

// RouteSlot is where a Router leaves what served a request, for
// middleware outside it (metrics) to read once the request is answered.
type RouteSlot struct {
	// Name is the route's name; empty for a fallback or nothing.
	Name string
	// Template is the route's path template or the fallback's pattern;
	// empty when neither answered (the router's own 404 or 405).
	Template string
}

type routeSlotKey struct{}

// WithRouteSlot gives r a slot the router fills.
func WithRouteSlot(r *http.Request) (*http.Request, *RouteSlot) {
	s := &RouteSlot{}
	return r.WithContext(context.WithValue(r.Context(), routeSlotKey{}, s)), s
}

func (s *RouteSlot) record(e *entry, f *fallback) {
	switch {
	case s == nil:
	case e != nil:
		s.Name, s.Template = e.Name, e.Path
	case f != nil:
		s.Name, s.Template = "", f.pattern
	}
}

// ErrNoRoute is returned by URL for a name no route has.
var ErrNoRoute = errors.New("web: no route of that name")

// URL is the absolute URL of the named route on its origin, with its
// {variables} given as name, value pairs (each value one path segment,
// escaped here).
func (r *Router) URL(name string, pairs ...string) (string, error) {
	e, p, err := r.path(name, pairs)
	if err != nil {
		return "", err
	}
	return r.origins[e.Origin] + p, nil
}

// Path is the named route's path alone, as URL builds it, for a link or a
// redirect that stays on the origin the request came to.
func (r *Router) Path(name string, pairs ...string) (string, error) {
	_, p, err := r.path(name, pairs)
	return p, err
}

func (r *Router) path(name string, pairs []string) (*entry, string, error) {
	r.build()
	e := r.byName[name]
	if e == nil {
		return nil, "", fmt.Errorf("%w: %q", ErrNoRoute, name)
	}
	if len(pairs)%2 != 0 {
		return nil, "", fmt.Errorf("web: URL(%q): pairs must be name, value pairs", name)
	}
	u, err := r.mux.Get(name).URLPath(pairs...)
	if err != nil {
		return nil, "", fmt.Errorf("web: URL(%q): %w", name, err)
	}
	return e, u.String(), nil
}

// Lookup is the route that would serve method on path (a path template's
// variables filled in), without serving anything.
func (r *Router) Lookup(method, path string) (Route, bool) {
	r.build()
	req, err := http.NewRequest(method, path, nil)
	if err != nil {
		return Route{}, false
	}
	e := r.match(req, method, req.URL.EscapedPath())
	if e == nil {
		return Route{}, false
	}
	return e.Route, true
}

// Origin is the URL of an origin of the router ("" if it has none).
func (r *Router) Origin(o Origin) string { return r.origins[o] }

// RouteInfo is a route as the table lists it.
type RouteInfo struct {
	Route
	// Host is the host (and port) of the route's origin.
	Host string
}

// Routes lists the routes the router serves, in the order it tries them
// (gorilla/mux's Walk).
func (r *Router) Routes() []RouteInfo {
	r.build()
	var out []RouteInfo
	_ = r.mux.Walk(func(gr *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		e := r.byRoute[gr]
		if e == nil {
			return nil
		}
		host := r.origins[e.Origin]
		if u, err := url.Parse(host); err == nil && u.Host != "" {
			host = u.Host
		}
		out = append(out, RouteInfo{Route: e.Route, Host: host})
		return nil
	})
	return out
}

// cleanPath is net/http's: the canonical path for p, with a trailing
// slash kept.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		if len(p) == len(np)+1 && strings.HasPrefix(p, np) {
			np = p
		} else {
			np += "/"
		}
	}
	return np
}
