// Package rest is faxhub's REST adapter: /api/v1 for backends holding an API
// key, the machine-payment endpoints, /openapi.json and /llms.txt. It turns
// HTTP into calls on core's feature services with a core.Principal and decides nothing
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
	// machine payments are on is core's (machine.Service.Enabled).
	MachineOffers []MachineOffer
	// StripeTestMintPath, when the built-in Stripe test backend is in use,
	// is the path (on both origins) of its public test SPT mint, which
	// llms.txt explains.
	StripeTestMintPath string
	// TestNumbers are the simulated provider's documented destinations,
	// listed in llms.txt.
	TestNumbers []TestNumber
	// Verifier checks OAuth access tokens presented instead of an API key
	// (tokens for the resource {api_url}/api/v1); nil accepts API keys only.
	Verifier core.TokenVerifier
}

const (
	apiPrefix = "/api/v1"
	// catchAll is the fallback pattern: every path under /api/v1/ that no
	// route serves is answered with a problem (404, or 405 with Allow).
	// /api/v1 itself redirects to /api/v1/, as it always has.
	catchAll = apiPrefix + "/"
)

// route is one registered endpoint; the table is what the OpenAPI drift
// test compares with /openapi.json. name is the OpenAPI operationId (the
// router's name is "rest." + name).
type route struct {
	name, method, path string
	auth               web.Auth
	handler            http.Handler
}

type api struct {
	svc    *services.Set
	opts   Options
	log    *slog.Logger
	routes []route
	// urls is the router the API is registered on (Register).
	urls *web.Router

	openapi []byte
	llms    []byte
}

// API is the REST adapter: /api/v1/…, /openapi.json and /llms.txt.
type API struct{ a *api }

// New builds the adapter; Register puts its routes on the router.
func New(svc *services.Set, opts Options, logger *slog.Logger) *API {
	return &API{newAPI(svc, opts, logger)}
}

// Register puts the adapter's routes on r: /api/v1 on the API origin (no
// caching, no credentials in the query), /openapi.json and /llms.txt on
// the base origin, and the fallback that answers every other request
// under /api/v1/ with a problem (404, or 405 with Allow).
func (x *API) Register(r *web.Router) { x.a.register(r) }

func newAPI(svc *services.Set, opts Options, logger *slog.Logger) *api {
	cfg := svc.Config()
	opts.BaseURL = strings.TrimSuffix(cmp.Or(opts.BaseURL, cfg.BaseURL), "/")
	opts.APIURL = strings.TrimSuffix(cmp.Or(opts.APIURL, cfg.APIURL, opts.BaseURL), "/")
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	a := &api{svc: svc, opts: opts, log: logger}
	a.routes = append(a.routeTable(), a.webhookRoutes()...)
	a.routes = append(a.routes, a.faxProofRoutes()...)
	a.routes = append(a.routes, a.batchRoutes()...)

	doc, err := json.Marshal(openAPIDocument(opts, cfg, machineLimits{
		maxPDF: cfg.Machine.MaxPDFBytes, maxBody: svc.Machine.MaxBodyBytes(), maxPages: cfg.Documents.MaxPages,
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

func (a *api) register(r *web.Router) {
	a.urls = r
	v1 := r.Group("rest", web.OriginAPI, a.v1Headers)
	docs := r.Group("rest", web.OriginBase)
	for _, rt := range a.routes {
		g := docs
		if strings.HasPrefix(rt.path, apiPrefix+"/") {
			g = v1
		}
		g.Handle(web.Route{Name: "rest." + rt.name, Methods: rt.method, Path: rt.path, Auth: rt.auth}, rt.handler)
	}
	v1.Fallback(catchAll, http.HandlerFunc(a.notRouted))
}

func (a *api) routeTable() []route {
	key, capability, payment, none := web.AuthAPIKey, web.AuthCapability, web.AuthPayment, web.AuthNone
	return []route{
		{"createUpload", "POST", "/api/v1/uploads", key, a.authed(a.createUpload)},
		{"putUpload", "PUT", core.LinkUpload.Path(), capability, uploadCORS(a.public(a.putUpload))},
		{"preflightUpload", "OPTIONS", core.LinkUpload.Path(), none, uploadCORS(http.HandlerFunc(noContent))},
		{"sendFax", "POST", "/api/v1/faxes", key, a.authed(a.sendFax)},
		{"listFaxes", "GET", "/api/v1/faxes", key, a.authed(a.listFaxes)},
		{"getFax", "GET", "/api/v1/faxes/{id}", key, a.authed(a.getFax)},
		{"listFaxAttempts", "GET", "/api/v1/faxes/{id}/attempts", key, a.authed(a.listAttempts)},
		{"cancelFax", "POST", "/api/v1/faxes/{id}/cancel", key, a.authed(a.cancelFax)},
		{"getCredits", "GET", "/api/v1/credits", key, a.authed(a.getCredits)},
		{"listCreditPacks", "GET", "/api/v1/credits/packs", key, a.authed(a.listPacks)},
		{"createCreditCheckout", "POST", "/api/v1/credits/checkout", key, a.authed(a.createCheckout)},
		{"quoteFax", "POST", "/api/v1/quote", key, a.authed(a.quote)},
		{"validateMachineFax", "POST", "/api/v1/machine/faxes/validate", none, a.public(a.validateMachineFax)},
		{"createMachineFax", "POST", "/api/v1/machine/faxes", payment, a.public(a.createMachineFax)},
		{"getMachineFaxStatus", "GET", core.LinkMachineStatus.Path(), capability, a.public(a.getMachineFaxStatus)},
		{"searchNumbers", "GET", "/api/v1/numbers/available", key, a.authed(a.searchNumbers)},
		{"buyNumber", "POST", "/api/v1/numbers", key, a.authed(a.buyNumber)},
		{"listNumbers", "GET", "/api/v1/numbers", key, a.authed(a.listNumbers)},
		{"getNumber", "GET", "/api/v1/numbers/{id}", key, a.authed(a.getNumber)},
		{"releaseNumber", "POST", "/api/v1/numbers/{id}/release", key, a.authed(a.releaseNumber)},
		{"payNumber", "POST", "/api/v1/numbers/{id}/pay", key, a.authed(a.payNumber)},
		{"deleteNumber", "DELETE", "/api/v1/numbers/{id}", key, a.authed(a.releaseNumber)},
		{"listInbox", "GET", "/api/v1/inbox", key, a.authed(a.listInbox)},
		{"getInboxFax", "GET", "/api/v1/inbox/{id}", key, a.authed(a.getInboxFax)},
		{"downloadInboxFax", "POST", "/api/v1/inbox/{id}/download", key, a.authed(a.inboxDownload)},
		{"getInboxFile", "GET", core.LinkInboxFile.Path(), capability, a.public(a.inboxFile)},
		{"simulateInboundFax", "POST", "/api/v1/inbox/simulate", key, a.authed(a.simulateInbound)},
		{"getProviderMedia", "GET", core.LinkProviderMedia.Path(), capability, a.public(a.providerMedia)},
		{"getCreditAlert", "GET", "/api/v1/credits/alert", key, a.authed(a.getCreditAlert)},
		{"setCreditAlert", "PUT", "/api/v1/credits/alert", key, a.authed(a.setCreditAlert)},
		{"listEvents", "GET", "/api/v1/events", key, a.authed(a.listEvents)},
		{"getEvent", "GET", "/api/v1/events/{id}", key, a.authed(a.getEvent)},
		{"getOpenAPI", "GET", "/openapi.json", none, http.HandlerFunc(a.serveOpenAPI)},
		{"getLLMsTxt", "GET", "/llms.txt", none, http.HandlerFunc(a.serveLLMs)},
	}
}

// v1Headers comes before every request under /api/v1, routed or not:
// errors, replays and bodies carrying upload tokens are never stored by a
// cache, and a credential in the query string is refused before anything
// reads it.
func (a *api) v1Headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		if name, ok := web.CredentialInQuery(r); ok {
			web.WriteError(w, r, a.log, core.Errorf(core.KindInvalid, core.CodeInvalidRequest,
				"credentials are never accepted in the query string (found %q); send the API key as \"Authorization: Bearer <API key>\", and rotate a key that has appeared in a URL because URLs get logged", name))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// notRouted answers requests under /api/v1 that matched no endpoint. The
// router says which other methods the path takes, so Allow cannot
// disagree with the routes.
func (a *api) notRouted(w http.ResponseWriter, r *http.Request) {
	allow := web.Allowed(r)
	if len(allow) == 0 {
		doc, err := a.urls.URL("rest.getOpenAPI")
		if err != nil {
			web.WriteError(w, r, a.log, err)
			return
		}
		web.WriteError(w, r, a.log, core.Errorf(core.KindNotFound, core.CodeNotFound,
			"there is no endpoint %s %s; the API is described at %s", r.Method, web.RedactPath(r.URL.Path), doc))
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
