// Package oauth is faxhub's OAuth 2.1 authorization server for chat apps
// (MCP and A2A clients), built on ory/fosite: RFC 8414 and RFC 9728
// metadata, RFC 7591 dynamic registration and client ID metadata
// documents, authorization code with PKCE (S256) whose consent is an owner
// Approval, opaque access tokens bound to one resource (RFC 8707),
// rotating refresh tokens, RFC 7009 revocation, OpenID Connect id_tokens
// and the JWKS. It implements core.TokenVerifier and core.GrantDirectory.
//
// See docs/oauth.md for the endpoints and the decisions behind them.
package oauth

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/compose"
	"github.com/ory/fosite/handler/oauth2"
	"github.com/ory/fosite/handler/openid"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/agents"
	"github.com/faxhub/faxhub/core/authstate"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/core/web"
)

// Paths, relative to either origin. The issuer is {api_url}/api/auth.
const (
	IssuerPath               = "/api/auth"
	PathASMetadata           = "/.well-known/oauth-authorization-server"
	PathASMetadataIssuer     = "/.well-known/oauth-authorization-server" + IssuerPath
	PathOIDCMetadataIssuer   = "/.well-known/openid-configuration" + IssuerPath
	PathOIDCMetadataAppended = IssuerPath + "/.well-known/openid-configuration"
	PathProtectedResource    = "/.well-known/oauth-protected-resource"
	PathProtectedResourceMCP = "/.well-known/oauth-protected-resource/mcp"
	PathProtectedResourceA2A = "/.well-known/oauth-protected-resource/a2a"
	PathProtectedResourceAPI = "/.well-known/oauth-protected-resource" + RESTResourcePath
	// RESTResourcePath is the REST API's path on the API origin: the
	// resource {api_url}/api/v1 is the audience of tokens for it.
	RESTResourcePath             = "/api/v1"
	PathRegister                 = IssuerPath + "/oauth2/register"
	PathAuthorize                = IssuerPath + "/oauth2/authorize"
	PathAuthorizeResume          = IssuerPath + "/oauth2/authorize/resume"
	PathToken                    = IssuerPath + "/oauth2/token"
	PathRevoke                   = IssuerPath + "/oauth2/revoke"
	PathJWKS                     = IssuerPath + "/jwks"
	PathAuthGuide                = "/auth.md"
	defaultAccessTokenLifespan   = time.Hour
	defaultRefreshTokenLifespan  = 30 * 24 * time.Hour
	defaultAuthorizeCodeLifespan = 10 * time.Minute
	consentTTL                   = 10 * time.Minute
)

// Scopes beyond the six fax scopes that chat apps may ask for.
const (
	ScopeOpenID        = "openid"
	ScopeProfile       = "profile"
	ScopeEmail         = "email"
	ScopeOfflineAccess = "offline_access"
)

// Options configure a Server.
type Options struct {
	// BaseURL is the main origin ({base_url}: /mcp, /a2a, auth.md);
	// APIURL the API origin (defaults to BaseURL). The issuer is
	// APIURL + "/api/auth". Both without a trailing slash.
	BaseURL string
	APIURL  string
	// MCPOAuth enables dynamic registration and authorization for chat
	// apps (--mcp-oauth). When off, both answer access_denied saying so;
	// metadata, token, revocation and JWKS keep working.
	MCPOAuth bool
	Logger   *slog.Logger
	// HTTPClient fetches client ID metadata documents. The default
	// refuses private, loopback and link-local addresses, redirects,
	// bodies over 5 KB and takes at most 5 s; tests inject their own.
	HTTPClient *http.Client
	// AccessTokenLifespan is at most one hour (the default).
	AccessTokenLifespan time.Duration
	// MetadataCacheTTL is how long a fetched client metadata document is
	// used before it is fetched again (default 5 minutes).
	MetadataCacheTTL time.Duration
	// MetadataFailureTTL is how long a failed metadata document fetch is
	// remembered, per replica, before the URL is fetched again (default 5
	// minutes).
	MetadataFailureTTL time.Duration
	// Now is the clock (tests); defaults to time.Now.
	Now func() time.Time
}

// Server is the authorization server. It is safe for concurrent use.
type Server struct {
	svc      *services.Set
	store    authstate.OAuthStore
	opts     Options
	log      *slog.Logger
	issuer   string
	cfg      *fosite.Config
	provider fosite.OAuth2Provider
	keys     *keyring
	tokens   *oauth2.HMACSHAStrategy
	http     *http.Client
	// failed remembers metadata document fetches that failed.
	failed *failedDocuments
	// decoded keeps access-token rows' decoded requests (tokencache.go).
	decoded *decodedRequests
	// resources are the protected resources a token may be issued for
	// (RFC 8707): the MCP server, the A2A endpoint and the REST API.
	resources []string
	// urls is the router the server's routes are on (Register): it builds
	// the URLs the server hands out.
	urls *web.Router
}

var (
	_ core.TokenVerifier  = (*Server)(nil)
	_ core.GrantDirectory = (*Server)(nil)
)

// New builds the server, creating signing keys on first use.
func New(svc *services.Set, store authstate.OAuthStore, opts Options) (*Server, error) {
	if svc == nil || store == nil {
		return nil, errors.New("oauth: a service and a store are required")
	}
	opts.BaseURL = strings.TrimRight(opts.BaseURL, "/")
	opts.APIURL = strings.TrimRight(cmp.Or(opts.APIURL, opts.BaseURL), "/")
	if opts.BaseURL == "" {
		return nil, errors.New("oauth: BaseURL is required")
	}
	for _, u := range []string{opts.BaseURL, opts.APIURL} {
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
			return nil, fmt.Errorf("oauth: %q is not an http(s) origin", u)
		}
	}
	opts.AccessTokenLifespan = cmp.Or(opts.AccessTokenLifespan, defaultAccessTokenLifespan)
	if opts.AccessTokenLifespan > time.Hour {
		return nil, errors.New("oauth: access tokens live at most one hour")
	}
	opts.MetadataCacheTTL = cmp.Or(opts.MetadataCacheTTL, 5*time.Minute)
	opts.MetadataFailureTTL = cmp.Or(opts.MetadataFailureTTL, 5*time.Minute)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		svc: svc, store: store, opts: opts, log: opts.Logger, issuer: opts.APIURL + IssuerPath,
		http: cmp.Or(opts.HTTPClient, newMetadataClient()), failed: &failedDocuments{},
		decoded:   newDecodedRequests(),
		resources: []string{opts.BaseURL + "/mcp", opts.BaseURL + "/a2a", opts.APIURL + RESTResourcePath},
	}
	ctx := context.Background()
	hmacSecret, err := svc.Kernel.Secret(ctx, "oauth-hmac")
	if err != nil {
		return nil, fmt.Errorf("oauth: %w", err)
	}
	s.keys = &keyring{
		store:  store,
		secret: func(ctx context.Context) ([]byte, error) { return svc.Kernel.Secret(ctx, "oauth-keys") },
		now:    opts.Now,
	}
	if err := s.keys.load(ctx); err != nil {
		return nil, fmt.Errorf("oauth: %w", err)
	}
	if err := s.ensureCLIClient(ctx); err != nil {
		return nil, fmt.Errorf("oauth: %w", err)
	}
	s.cfg = &fosite.Config{
		AccessTokenLifespan:   opts.AccessTokenLifespan,
		RefreshTokenLifespan:  defaultRefreshTokenLifespan,
		AuthorizeCodeLifespan: defaultAuthorizeCodeLifespan,
		IDTokenLifespan:       time.Hour,
		IDTokenIssuer:         s.issuer,
		AccessTokenIssuer:     s.issuer,
		TokenURL:              s.issuer + "/oauth2/token",
		GlobalSecret:          hmacSecret,
		// PKCE S256 for every client; plain is refused.
		EnforcePKCE:                    true,
		EnforcePKCEForPublicClients:    true,
		EnablePKCEPlainChallengeMethod: false,
		// A refresh token only for offline_access.
		RefreshTokenScopes: []string{ScopeOfflineAccess},
		ScopeStrategy:      fosite.ExactScopeStrategy,
		AudienceMatchingStrategy: func(haystack []string, needle []string) error {
			for _, n := range needle {
				if !slices.Contains(haystack, n) {
					return fosite.ErrInvalidRequest.WithHintf("Resource %q is not served here.", n)
				}
			}
			return nil
		},
		SendDebugMessagesToClients: false,
	}
	signer := &fositeSigner{keys: s.keys}
	s.tokens = compose.NewOAuth2HMACStrategy(s.cfg)
	strategy := &compose.CommonStrategy{
		CoreStrategy:               s.tokens,
		OpenIDConnectTokenStrategy: &openid.DefaultStrategy{Signer: signer, Config: s.cfg},
		Signer:                     signer,
	}
	s.provider = compose.Compose(s.cfg, storage{s}, strategy,
		compose.OAuth2AuthorizeExplicitFactory,
		compose.OAuth2RefreshTokenGrantFactory,
		compose.OAuth2PKCEFactory,
		compose.OAuth2TokenRevocationFactory,
		compose.OAuth2TokenIntrospectionFactory,
		compose.OpenIDConnectExplicitFactory,
	)
	return s, nil
}

// Issuer is {api_url}/api/auth.
func (s *Server) Issuer() string { return s.issuer }

// now is the clock at the stores' precision.
func (s *Server) now() time.Time { return s.opts.Now().UTC().Truncate(time.Microsecond) }

// routes are the server's endpoints: name, path, methods, whether
// programs in browsers may call it (CORS), the credential it expects and
// the origin its URLs are built on (the issuer's endpoints and the
// authorization server's metadata on the API origin, the resources'
// metadata and the guide on the base origin). The browser endpoints
// (authorize) and the owner's cookie endpoint (agent manage) get no CORS:
// they are navigated to, or called by our own pages.
func (s *Server) routes() []route {
	meta := http.HandlerFunc(s.serveASMetadata)
	api, base := web.OriginAPI, web.OriginBase
	none, client, session := web.AuthNone, web.AuthClient, web.AuthSession
	return []route{
		{"oauth.metadata", PathASMetadata, meta, true, get, none, api},
		{"oauth.metadataIssuer", PathASMetadataIssuer, meta, true, get, none, api},
		{"oauth.openidConfiguration", PathOIDCMetadataIssuer, meta, true, get, none, api},
		{"oauth.openidConfigurationAppended", PathOIDCMetadataAppended, meta, true, get, none, api},
		{"oauth.protectedResource", PathProtectedResource, s.servePRM(""), true, get, none, base},
		{"oauth.protectedResourceMCP", PathProtectedResourceMCP, s.servePRM("/mcp"), true, get, none, base},
		{"oauth.protectedResourceA2A", PathProtectedResourceA2A, s.servePRM("/a2a"), true, get, none, base},
		{"oauth.protectedResourceAPI", PathProtectedResourceAPI, s.servePRM(RESTResourcePath), true, get, none, api},
		{"oauth.register", PathRegister, http.HandlerFunc(s.register), true, post, client, api},
		{"oauth.authorize", PathAuthorize, http.HandlerFunc(s.authorize), false, []string{http.MethodGet, http.MethodPost}, session, api},
		{"oauth.authorizeResume", PathAuthorizeResume, http.HandlerFunc(s.resume), false, get, session, api},
		{"oauth.token", PathToken, http.HandlerFunc(s.token), true, post, client, api},
		{"oauth.revoke", PathRevoke, http.HandlerFunc(s.revoke), true, post, client, api},
		{"oauth.jwks", PathJWKS, http.HandlerFunc(s.serveJWKS), true, get, none, api},
		{"oauth.guide", PathAuthGuide, http.HandlerFunc(s.serveGuide), false, get, none, base},
		{"oauth.agentManage", PathAgentManage, http.HandlerFunc(s.manage), false, post, session, api},
		{"oauth.agentIdentity", PathAgentIdentity, http.HandlerFunc(s.identity), true, post, client, api},
		{"oauth.agentClaim", PathAgentClaim, http.HandlerFunc(s.claim), true, post, client, api},
		{"oauth.agentRevoke", PathAgentRevoke, http.HandlerFunc(s.revokeIdentity), true, post, client, api},
	}
}

type route struct {
	name    string
	path    string
	handler http.Handler
	cors    bool
	methods []string
	auth    web.Auth
	origin  web.Origin
}

var (
	get  = []string{http.MethodGet}
	post = []string{http.MethodPost}
)

// Register puts the server's endpoints (docs/oauth.md lists them) on r.
// Each takes every method: it refuses the others itself with an OAuth
// error (405 invalid_request), and a CORS endpoint answers preflights.
func (s *Server) Register(r *web.Router) {
	s.urls = r
	for _, rt := range s.routes() {
		h := methods(rt.handler, rt.methods...)
		ms := strings.Join(rt.methods, " ")
		if rt.cors {
			h = cors(h)
			ms += " OPTIONS"
		}
		r.Group("oauth", rt.origin, withClientIP).Handle(web.Route{
			Name: rt.name, Methods: ms, Path: rt.path, OwnMethods: true, Auth: rt.auth,
		}, h)
	}
}

// url is the absolute URL of a named route of the router the server is
// registered on; path is its path alone.
func (s *Server) url(name string, pairs ...string) (string, error) {
	if s.urls == nil {
		return "", errors.New("oauth: the server is not registered on a router")
	}
	return s.urls.URL(name, pairs...)
}

func (s *Server) path(name string, pairs ...string) (string, error) {
	if s.urls == nil {
		return "", errors.New("oauth: the server is not registered on a router")
	}
	return s.urls.Path(name, pairs...)
}

// guideURL is where auth.md is, for the messages that point there (the
// server's own route: once Register ran it is always there).
func (s *Server) guideURL() string {
	u, _ := s.url("oauth.guide")
	return u
}

// cors lets browser-based clients (MCP Inspector, web chat apps) read the
// metadata and call the token endpoints. No credentials: these endpoints
// never use cookies.
func cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		if r.Method == http.MethodOptions {
			h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, MCP-Protocol-Version")
			h.Set("Access-Control-Max-Age", "86400")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// methods answers 405 with an OAuth error for any other method.
func methods(next http.Handler, allowed ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slices.Contains(allowed, r.Method) || (r.Method == http.MethodHead && slices.Contains(allowed, http.MethodGet)) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		web.WriteOAuthError(w, http.StatusMethodNotAllowed, "invalid_request", "method "+r.Method+" is not allowed here")
	})
}

// supportedScopes are the scopes a chat app may request, in the order the
// metadata lists them.
func supportedScopes() []string {
	out := []string{ScopeOpenID, ScopeProfile, ScopeEmail, ScopeOfflineAccess}
	for _, sc := range core.FaxScopes() {
		out = append(out, string(sc))
	}
	return out
}

// defaultScopes are granted when a request names none: read-only, as for
// agent registrations.
func defaultScopes() []string { return agents.DefaultScopes() }
