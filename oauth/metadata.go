package oauth

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/faxhub/faxhub/core/web"
)

// writeJSON writes v with the no-store headers every OAuth answer carries.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writePublic writes a public document: cacheable for a few minutes.
func writePublic(w http.ResponseWriter, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "public, max-age="+strconv.Itoa(int(jwksMaxAge.Seconds())))
	_, _ = w.Write(body)
}

// ASMetadata is the RFC 8414 authorization server metadata.
type ASMetadata struct {
	Issuer                                 string    `json:"issuer"`
	AuthorizationEndpoint                  string    `json:"authorization_endpoint"`
	TokenEndpoint                          string    `json:"token_endpoint"`
	RegistrationEndpoint                   string    `json:"registration_endpoint"`
	RevocationEndpoint                     string    `json:"revocation_endpoint"`
	JWKSURI                                string    `json:"jwks_uri"`
	ScopesSupported                        []string  `json:"scopes_supported"`
	ResponseTypesSupported                 []string  `json:"response_types_supported"`
	ResponseModesSupported                 []string  `json:"response_modes_supported"`
	GrantTypesSupported                    []string  `json:"grant_types_supported"`
	CodeChallengeMethodsSupported          []string  `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethodsSupported      []string  `json:"token_endpoint_auth_methods_supported"`
	RevocationEndpointAuthMethodsSupported []string  `json:"revocation_endpoint_auth_methods_supported"`
	ClientIDMetadataDocumentSupported      bool      `json:"client_id_metadata_document_supported"`
	AuthorizationResponseIssParameter      bool      `json:"authorization_response_iss_parameter_supported"`
	SubjectTypesSupported                  []string  `json:"subject_types_supported"`
	IDTokenSigningAlgValuesSupported       []string  `json:"id_token_signing_alg_values_supported"`
	ClaimsSupported                        []string  `json:"claims_supported"`
	ServiceDocumentation                   string    `json:"service_documentation"`
	AgentAuth                              AgentAuth `json:"agent_auth"`
}

// AgentAuth points agents at the guide that explains how to get authority.
type AgentAuth struct {
	Skill string `json:"skill"`
}

// Metadata returns the authorization server metadata. Its endpoints are
// the URLs of the server's routes (Register must have run).
func (s *Server) Metadata() (ASMetadata, error) {
	urls := map[string]string{}
	for _, name := range []string{"oauth.authorize", "oauth.token", "oauth.register", "oauth.revoke", "oauth.jwks", "oauth.guide"} {
		u, err := s.url(name)
		if err != nil {
			return ASMetadata{}, err
		}
		urls[name] = u
	}
	return ASMetadata{
		Issuer:                                 s.issuer,
		AuthorizationEndpoint:                  urls["oauth.authorize"],
		TokenEndpoint:                          urls["oauth.token"],
		RegistrationEndpoint:                   urls["oauth.register"],
		RevocationEndpoint:                     urls["oauth.revoke"],
		JWKSURI:                                urls["oauth.jwks"],
		ScopesSupported:                        supportedScopes(),
		ResponseTypesSupported:                 []string{"code"},
		ResponseModesSupported:                 []string{"query"},
		GrantTypesSupported:                    []string{"authorization_code", "refresh_token", GrantTypeAgentClaim, GrantTypeJWTBearer},
		CodeChallengeMethodsSupported:          []string{"S256"},
		TokenEndpointAuthMethodsSupported:      []string{"none"},
		RevocationEndpointAuthMethodsSupported: []string{"none"},
		ClientIDMetadataDocumentSupported:      true,
		AuthorizationResponseIssParameter:      true,
		SubjectTypesSupported:                  []string{"public"},
		IDTokenSigningAlgValuesSupported:       []string{AlgRS256},
		ClaimsSupported:                        []string{"sub", "iss", "aud", "exp", "iat", "auth_time", "nonce", "name", "email", "email_verified"},
		ServiceDocumentation:                   urls["oauth.guide"],
		AgentAuth:                              AgentAuth{Skill: urls["oauth.guide"]},
	}, nil
}

func (s *Server) serveASMetadata(w http.ResponseWriter, r *http.Request) {
	md, err := s.Metadata()
	if err != nil {
		s.log.ErrorContext(r.Context(), "authorization server metadata", "err", err)
		web.WriteOAuthError(w, http.StatusInternalServerError, "server_error", "the metadata could not be built")
		return
	}
	b, _ := json.Marshal(md)
	writePublic(w, "application/json", b)
}

// ProtectedResourceMetadata is the RFC 9728 document of a resource.
type ProtectedResourceMetadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name,omitempty"`
	ResourceDocumentation  string   `json:"resource_documentation,omitempty"`
}

// prmRoutes name the RFC 9728 document of each resource path.
var prmRoutes = map[string]string{"": "oauth.protectedResource", "/mcp": "oauth.protectedResourceMCP", "/a2a": "oauth.protectedResourceA2A", RESTResourcePath: "oauth.protectedResourceAPI"}

// ProtectedResource returns the metadata of the resource at BaseURL+path
// ("" for the origin, "/mcp", "/a2a"), or APIURL+"/api/v1" for the REST
// API (it lives on the API origin). The resource is an identifier (the
// tokens' audience), BaseURL+path whatever the router says; the
// documentation is the URL of the guide's route.
func (s *Server) ProtectedResource(path string) (ProtectedResourceMetadata, error) {
	name, origin := "faxhub", s.opts.BaseURL
	switch path {
	case RESTResourcePath:
		name, origin = "faxhub REST API", s.opts.APIURL
	case "/mcp":
		name = "faxhub MCP server"
	case "/a2a":
		name = "faxhub A2A agent"
	}
	guide, err := s.url("oauth.guide")
	if err != nil {
		return ProtectedResourceMetadata{}, err
	}
	return ProtectedResourceMetadata{
		Resource:               origin + path,
		AuthorizationServers:   []string{s.issuer},
		ScopesSupported:        supportedScopes(),
		BearerMethodsSupported: []string{"header"},
		ResourceName:           name,
		ResourceDocumentation:  guide,
	}, nil
}

// ResourceMetadataURL is what a 401 from the resource at path names in
// WWW-Authenticate: Bearer resource_metadata="…", the URL of the route
// serving its metadata.
func (s *Server) ResourceMetadataURL(path string) (string, error) {
	name, ok := prmRoutes[path]
	if !ok {
		return "", fmt.Errorf("oauth: no protected resource %q", path)
	}
	return s.url(name)
}

func (s *Server) servePRM(path string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		md, err := s.ProtectedResource(path)
		if err != nil {
			s.log.ErrorContext(r.Context(), "protected resource metadata", "err", err)
			web.WriteOAuthError(w, http.StatusInternalServerError, "server_error", "the metadata could not be built")
			return
		}
		b, _ := json.Marshal(md)
		writePublic(w, "application/json", b)
	})
}

func (s *Server) serveJWKS(w http.ResponseWriter, r *http.Request) {
	set, err := s.keys.jwks(r.Context())
	if err != nil {
		s.log.ErrorContext(r.Context(), "jwks", "err", err)
		web.WriteOAuthError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "the signing keys cannot be read right now")
		return
	}
	b, err := json.Marshal(set)
	if err != nil {
		s.log.ErrorContext(r.Context(), "jwks", "err", err)
		web.WriteOAuthError(w, http.StatusInternalServerError, "server_error", "the signing keys cannot be encoded")
		return
	}
	w.Header().Set("Access-Control-Allow-Origin", "*")
	writePublic(w, "application/jwk-set+json", b)
}

//go:embed auth.md
var authGuide string

// Guide returns auth.md with this deployment's URLs.
func (s *Server) Guide() string {
	return strings.NewReplacer(
		"{base_url}", s.opts.BaseURL,
		"{api_url}", s.opts.APIURL,
		"{issuer}", s.issuer,
		"{mcp_url}", s.opts.BaseURL+"/mcp",
	).Replace(authGuide)
}

func (s *Server) serveGuide(w http.ResponseWriter, r *http.Request) {
	writePublic(w, "text/markdown; charset=utf-8", []byte(s.Guide()))
}
