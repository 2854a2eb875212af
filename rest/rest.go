// Package rest is faxhub's REST adapter: /api/v1 for backends holding an API
// key, the machine-payment endpoints, /openapi.json and /llms.txt. It turns
// HTTP into calls on core.Service with a core.Principal and decides nothing
// about faxes, money or permissions itself.
//
// Every error under /api/v1 is RFC 9457 problem+json with a stable `code`
// (see core/errors.go and the Problem schema in /openapi.json).
package rest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/core/web"
)

// Options configures the adapter.
type Options struct {
	// BaseURL and APIURL are the origins the API is reachable on, without a
	// trailing slash; they are the servers of /openapi.json and the links in
	// /llms.txt. Empty values fall back to the service configuration.
	BaseURL string
	APIURL  string
	// MachineOffers are the payment methods machine payments offer, in
	// the server's order, for the x-payment-info of /openapi.json. Whether
	// machine payments are on is core's (Service.MachineEnabled).
	MachineOffers []MachineOffer
	// StripeTestMintPath, when the built-in Stripe test backend is in use,
	// is the path (on both origins) of its public test SPT mint, which
	// llms.txt explains.
	StripeTestMintPath string
	// TestNumbers are the simulated provider's documented destinations,
	// listed in llms.txt.
	TestNumbers []TestNumber
}

const (
	apiPrefix = "/api/v1"
	// Catch-all patterns turn ServeMux's plain-text 404/405 into problems.
	catchAllRoot    = apiPrefix
	catchAllSubtree = apiPrefix + "/"
)

// route is one registered endpoint; the table is what the OpenAPI drift
// test compares with /openapi.json.
type route struct {
	method, path string
	handler      http.Handler
}

type api struct {
	svc    *services.Set
	opts   Options
	log    *slog.Logger
	mux    *http.ServeMux
	routes []route

	openapi []byte
	llms    []byte
}

// New returns the handler for /api/v1/…, /openapi.json and /llms.txt. Mount
// it on each of those paths (it answers other paths with 404).
func New(svc *services.Set, opts Options, logger *slog.Logger) http.Handler {
	return newAPI(svc, opts, logger)
}

func newAPI(svc *services.Set, opts Options, logger *slog.Logger) *api {
	cfg := svc.Config()
	opts.BaseURL = strings.TrimSuffix(cmp.Or(opts.BaseURL, cfg.BaseURL), "/")
	opts.APIURL = strings.TrimSuffix(cmp.Or(opts.APIURL, cfg.APIURL, opts.BaseURL), "/")
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	a := &api{svc: svc, opts: opts, log: logger, mux: http.NewServeMux()}
	a.routes = a.routeTable()
	for _, rt := range a.routes {
		a.mux.Handle(rt.method+" "+rt.path, rt.handler)
	}
	a.mux.HandleFunc(catchAllRoot, a.notRouted)
	a.mux.HandleFunc(catchAllSubtree, a.notRouted)

	doc, err := json.Marshal(openAPIDocument(opts, cfg, machineLimits{
		maxPDF: cfg.Machine.MaxPDFBytes, maxBody: svc.Machine.MaxBodyBytes(), maxPages: cfg.MaxPages,
		challengeTTL: int(cfg.Machine.ChallengeTTL.Minutes()), statusTTL: int(cfg.Machine.StatusTTL.Hours() / 24),
	}))
	if err != nil {
		// The document is built from literals; failing here is a programming
		// error that the package tests catch.
		panic("rest: encode OpenAPI document: " + err.Error())
	}
	a.openapi = doc
	a.llms = llmsText(opts)
	return a
}

func (a *api) routeTable() []route {
	return []route{
		{"POST", "/api/v1/uploads", a.authed(a.createUpload)},
		{"PUT", "/api/v1/uploads/{token}", a.public(a.putUpload)},
		{"POST", "/api/v1/faxes", a.authed(a.sendFax)},
		{"GET", "/api/v1/faxes", a.authed(a.listFaxes)},
		{"GET", "/api/v1/faxes/{id}", a.authed(a.getFax)},
		{"GET", "/api/v1/faxes/{id}/attempts", a.authed(a.listAttempts)},
		{"POST", "/api/v1/faxes/{id}/cancel", a.authed(a.cancelFax)},
		{"GET", "/api/v1/credits", a.authed(a.getCredits)},
		{"GET", "/api/v1/credits/packs", a.authed(a.listPacks)},
		{"POST", "/api/v1/credits/checkout", a.authed(a.createCheckout)},
		{"POST", "/api/v1/quote", a.authed(a.quote)},
		{"POST", "/api/v1/machine/faxes/validate", a.public(a.validateMachineFax)},
		{"POST", "/api/v1/machine/faxes", a.public(a.createMachineFax)},
		{"GET", "/api/v1/machine/faxes/status/{token}", a.public(a.getMachineFaxStatus)},
		{"GET", "/api/v1/numbers/available", a.authed(a.searchNumbers)},
		{"POST", "/api/v1/numbers", a.authed(a.buyNumber)},
		{"GET", "/api/v1/numbers", a.authed(a.listNumbers)},
		{"GET", "/api/v1/numbers/{id}", a.authed(a.getNumber)},
		{"POST", "/api/v1/numbers/{id}/release", a.authed(a.releaseNumber)},
		{"POST", "/api/v1/numbers/{id}/pay", a.authed(a.payNumber)},
		{"DELETE", "/api/v1/numbers/{id}", a.authed(a.releaseNumber)},
		{"GET", "/api/v1/inbox", a.authed(a.listInbox)},
		{"GET", "/api/v1/inbox/{id}", a.authed(a.getInboxFax)},
		{"POST", "/api/v1/inbox/{id}/download", a.authed(a.inboxDownload)},
		{"GET", core.InboxDownloadPath + "{token}", a.public(a.inboxFile)},
		{"POST", "/api/v1/inbox/simulate", a.authed(a.simulateInbound)},
		{"GET", core.ProviderMediaPath + "{token}", a.public(a.providerMedia)},
		{"GET", "/openapi.json", http.HandlerFunc(a.serveOpenAPI)},
		{"GET", "/llms.txt", http.HandlerFunc(a.serveLLMs)},
	}
}

func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == apiPrefix || strings.HasPrefix(r.URL.Path, apiPrefix+"/") {
		// Set before any handler runs so that errors, replays and bodies
		// carrying upload tokens are never stored by a cache.
		h := w.Header()
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		if name, ok := web.CredentialInQuery(r); ok {
			web.WriteError(w, r, a.log, core.Errorf(core.KindInvalid, core.CodeInvalidRequest,
				"credentials are never accepted in the query string (found %q); send the API key as \"Authorization: Bearer <API key>\", and rotate a key that has appeared in a URL because URLs get logged", name))
			return
		}
	}
	a.mux.ServeHTTP(w, r)
}

// notRouted answers requests that matched no endpoint. The mux itself is
// asked which other methods would have matched, so Allow cannot disagree
// with the routes.
func (a *api) notRouted(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range [...]string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"} {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := a.mux.Handler(probe); pattern != "" && pattern != catchAllRoot && pattern != catchAllSubtree {
			allow = append(allow, m)
		}
	}
	if len(allow) == 0 {
		web.WriteError(w, r, a.log, core.Errorf(core.KindNotFound, core.CodeNotFound,
			"there is no endpoint %s %s; the API is described at %s/openapi.json", r.Method, web.RedactPath(r.URL.Path), a.opts.BaseURL))
		return
	}
	allowed := strings.Join(allow, ", ")
	w.Header().Set("Allow", allowed)
	web.WriteProblem(w, web.Problem{
		Type: web.ProblemType(core.CodeMethodNotAllowed), Title: http.StatusText(http.StatusMethodNotAllowed),
		Status: http.StatusMethodNotAllowed, Code: core.CodeMethodNotAllowed, Instance: r.URL.Path,
		Detail: fmt.Sprintf("%s is not allowed here; use %s", r.Method, allowed),
		Fields: map[string]any{"allow": allow},
	})
}

// handlerFunc is an endpoint that reports failures by returning them, so
// that every error goes through web.WriteError.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// authedFunc is an endpoint that needs an authenticated principal.
type authedFunc func(w http.ResponseWriter, r *http.Request, p core.Principal) error

func (a *api) public(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			web.WriteError(w, r, a.log, err)
		}
	})
}

// wwwAuthenticate is the challenge of every 401 under /api/v1.
const wwwAuthenticate = `Bearer realm="faxhub"`

// authed authenticates the API key of the Authorization header and puts the
// principal in the request context; scopes and ownership are then checked
// by core for each operation.
func (a *api) authed(h authedFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		authz, err := web.ParseAuthorization(r)
		if err != nil {
			web.WriteError(w, r, a.log, err)
			return
		}
		secret, ok := authz.Credentials, authz.IsBearer()
		if !ok {
			w.Header().Set("WWW-Authenticate", wwwAuthenticate)
			web.WriteError(w, r, a.log, core.Errorf(core.KindUnauthenticated, core.CodeUnauthenticated,
				"send your API key as \"Authorization: Bearer <API key>\""))
			return
		}
		p, err := a.svc.Core.AuthenticateAPIKey(r.Context(), secret)
		if err != nil {
			if core.ErrorKind(err) == core.KindUnauthenticated {
				w.Header().Set("WWW-Authenticate", wwwAuthenticate+`, error="invalid_token"`)
			}
			web.WriteError(w, r, a.log, err)
			return
		}
		r = r.WithContext(core.WithPrincipal(r.Context(), p))
		if err := h(w, r, p); err != nil {
			web.WriteError(w, r, a.log, err)
		}
	})
}

func (a *api) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(a.openapi)
}

func (a *api) serveLLMs(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(a.llms)
}
