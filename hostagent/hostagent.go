// Package hostagent is the delegated host/agent adapter (Agent Auth
// Protocol 1.0-draft; spec, Authentication section 4; docs/hostagent.md):
// discovery, host create/enroll, agent registration with device approval,
// status, revoke, and capability execution. It verifies host and agent JWTs
// (verify.go) and turns HTTP into core calls; every rule about hosts,
// agents, grants, approvals and money is core's (core/hosts).
package hostagent

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/core/web"
)

// The paths this adapter serves (on both origins; the issuer is {api_url}).
const (
	PathConfiguration  = "/.well-known/agent-configuration"
	PathHostCreate     = "/api/auth/host/create"
	PathHostEnroll     = "/api/auth/host/enroll"
	PathRegister       = "/api/auth/agent/register"
	PathStatus         = "/api/auth/agent/status"
	PathDeviceCode     = "/api/auth/agent/device/code"
	PathRevoke         = "/api/auth/agent/revoke"
	PathExecute        = "/api/auth/capability/execute"
	PathCapabilityStat = "/api/auth/capability/status"
)

// Body limits: a small JSON body everywhere, and room for an inline
// document (hosts.MaxInlineDocumentBytes, base64) on execute.
const (
	maxJSONBytes    = 16 << 10
	maxExecuteBytes = 512 << 10
)

// Paths lists every path the adapter serves.
func Paths() []string {
	return []string{PathConfiguration, PathHostCreate, PathHostEnroll, PathRegister, PathStatus, PathDeviceCode, PathRevoke, PathExecute, PathCapabilityStat}
}

// Options configure the adapter.
type Options struct {
	// BaseURL is the owner-facing origin; APIURL the issuer and the only
	// audience of host and agent JWTs (never taken from a request).
	BaseURL, APIURL string
	// ProviderName and Description fill discovery (defaults: faxhub).
	ProviderName, Description string
	Logger                    *slog.Logger
}

// Handler serves the delegated endpoints.
type Handler struct {
	svc    *services.Set
	opts   Options
	log    *slog.Logger
	verify *verifier
	// crossOrigin guards the owner-session endpoints (host create, revoke
	// by the owner) exactly like the other owner endpoints.
	crossOrigin *http.CrossOriginProtection
	caps        []capability
	// urls is the router the adapter is registered on (Register): it
	// builds the URLs the adapter hands out.
	urls *web.Router
}

// New builds the adapter over svc.
func New(svc *services.Set, opts Options) *Handler {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ProviderName == "" {
		opts.ProviderName = "faxhub"
	}
	if opts.Description == "" {
		opts.Description = "faxhub sends faxes for its owners: price a fax, upload a document, send it with the owner's passkey approval, follow its delivery, read and buy credits."
	}
	return &Handler{svc: svc, opts: opts, log: opts.Logger, verify: newVerifier(svc.Hosts, opts.APIURL),
		crossOrigin: http.NewCrossOriginProtection(), caps: capabilityTable(svc.Credits.Packs())}
}

// Register puts the delegated endpoints on r (the API origin, but host
// creation, which the owner's console calls, on the base origin). Any
// other method on one of their paths is 405 in the protocol's error
// shape.
func (h *Handler) Register(r *web.Router) {
	h.urls = r
	api, base := r.Group("hostagent", web.OriginAPI), r.Group("hostagent", web.OriginBase)
	route := func(g *web.Group, name, method, path string, auth web.Auth, f http.HandlerFunc) {
		g.Handle(web.Route{Name: "hostagent." + name, Methods: method, Path: path, Auth: auth}, f)
	}
	route(api, "configuration", "GET", PathConfiguration, web.AuthNone, h.configuration)
	route(api, "configurationPreflight", "OPTIONS", PathConfiguration, web.AuthNone, h.preflight)
	route(base, "hostCreate", "POST", PathHostCreate, web.AuthSession, h.hostCreate)
	route(api, "hostEnroll", "POST", PathHostEnroll, web.AuthCapability, h.hostEnroll)
	route(api, "register", "POST", PathRegister, web.AuthHostJWT, h.register)
	route(api, "status", "GET", PathStatus, web.AuthHostJWT, h.status)
	route(api, "deviceCode", "POST", PathDeviceCode, web.AuthHostJWT, h.deviceCode)
	route(api, "revoke", "POST", PathRevoke, web.AuthHostJWT+"|"+web.AuthSession, h.revoke)
	route(api, "execute", "POST", PathExecute, web.AuthAgentJWT, h.execute)
	route(api, "capabilityStatus", "GET", PathCapabilityStat, web.AuthAgentJWT, h.sendStatus)
	for _, p := range Paths() {
		api.Fallback(p, http.HandlerFunc(h.methodNotAllowed))
	}
}

// url is the absolute URL of a named route of the router the adapter is
// registered on.
func (h *Handler) url(name string, pairs ...string) (string, error) {
	if h.urls == nil {
		return "", errors.New("hostagent: the adapter is not registered on a router")
	}
	return h.urls.URL(name, pairs...)
}

// methodNotAllowed answers a method no route of the path takes.
func (h *Handler) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	e := core.Errorf(core.KindInvalid, core.CodeMethodNotAllowed, "%s is not allowed on %s", r.Method, r.URL.Path)
	writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"error": e.Code, "message": e.Message})
}
