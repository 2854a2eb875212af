package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ory/fosite"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/authstate"
	"github.com/faxhub/faxhub/core/safehttp"
	"github.com/faxhub/faxhub/core/web"
)

const (
	clientIDPrefix = core.PrefixOAuthClient
	// maxMetadataBytes bounds registration bodies and fetched documents.
	maxMetadataBytes = 5 << 10
	metadataTimeout  = 5 * time.Second
)

// clientMetadata is the RFC 7591 / client ID metadata document subset
// faxhub accepts. Anything else is refused by name (see knownMetadata).
type clientMetadata struct {
	ClientID                string   `json:"client_id,omitempty"`
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method,omitempty"`
	GrantTypes              []string `json:"grant_types,omitempty"`
	ResponseTypes           []string `json:"response_types,omitempty"`
	ClientName              string   `json:"client_name,omitempty"`
	ClientURI               string   `json:"client_uri,omitempty"`
	LogoURI                 string   `json:"logo_uri,omitempty"`
	Scope                   string   `json:"scope,omitempty"`
	Contacts                []string `json:"contacts,omitempty"`
	TOSURI                  string   `json:"tos_uri,omitempty"`
	PolicyURI               string   `json:"policy_uri,omitempty"`
	SoftwareID              string   `json:"software_id,omitempty"`
	SoftwareVersion         string   `json:"software_version,omitempty"`
	ApplicationType         string   `json:"application_type,omitempty"`
}

// knownMetadata are the fields of clientMetadata. Security-relevant fields
// faxhub does not support (jwks, jwks_uri, client_secret, request_uris,
// sector_identifier_uri, software_statement, …) and unknown fields are
// refused rather than silently ignored, so a client never believes it
// registered something it did not.
func knownMetadata() []string {
	return []string{"client_id", "redirect_uris", "token_endpoint_auth_method", "grant_types", "response_types",
		"client_name", "client_uri", "logo_uri", "scope", "contacts", "tos_uri", "policy_uri", "software_id",
		"software_version", "application_type"}
}

// metadataError is an RFC 7591 error (invalid_client_metadata or
// invalid_redirect_uri).
type metadataError struct{ code, desc string }

func (e *metadataError) Error() string { return e.code + ": " + e.desc }

func badMetadata(format string, args ...any) error {
	return &metadataError{"invalid_client_metadata", fmt.Sprintf(format, args...)}
}

func badRedirect(format string, args ...any) error {
	return &metadataError{"invalid_redirect_uri", fmt.Sprintf(format, args...)}
}

// parseMetadata decodes and checks a registration request or document.
func (s *Server) parseMetadata(body []byte) (*clientMetadata, error) {
	if p, err := jsonProblem(body); err == nil && p != "" {
		if strings.HasPrefix(p, "the member redirect_uris[") {
			return nil, badRedirect("%s", p)
		}
		return nil, badMetadata("%s", p)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, badMetadata("the body is not a JSON object: %s", decodeProblem(err, nil))
	}
	for k := range raw {
		if !slices.Contains(knownMetadata(), k) {
			return nil, badMetadata("client metadata %q is not supported", k)
		}
	}
	var m clientMetadata
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, badMetadata("client metadata has the wrong type: %s", decodeProblem(err, &m))
	}
	if len(m.RedirectURIs) == 0 {
		return nil, badRedirect("redirect_uris is required")
	}
	if len(m.RedirectURIs) > maxRedirectURIs {
		return nil, badRedirect("at most %d redirect_uris", maxRedirectURIs)
	}
	if err := checkMetadataText(&m); err != nil {
		return nil, err
	}
	for _, u := range m.RedirectURIs {
		if err := checkRedirectURI(u); err != nil {
			return nil, err
		}
	}
	switch m.TokenEndpointAuthMethod {
	case "", "none":
		m.TokenEndpointAuthMethod = "none"
	default:
		return nil, badMetadata("token_endpoint_auth_method must be none: faxhub registers public clients only (PKCE S256)")
	}
	if len(m.GrantTypes) == 0 {
		m.GrantTypes = []string{"authorization_code", "refresh_token"}
	}
	for _, g := range m.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return nil, badMetadata("grant type %q is not supported; use authorization_code and refresh_token", g)
		}
	}
	if !slices.Contains(m.GrantTypes, "authorization_code") {
		return nil, badMetadata("grant_types must include authorization_code")
	}
	if len(m.ResponseTypes) == 0 {
		m.ResponseTypes = []string{"code"}
	}
	if len(m.ResponseTypes) != 1 || m.ResponseTypes[0] != "code" {
		return nil, badMetadata("response_types must be [\"code\"]")
	}
	if m.ApplicationType != "" && m.ApplicationType != "web" && m.ApplicationType != "native" {
		return nil, badMetadata("application_type must be web or native")
	}
	for _, sc := range strings.Fields(m.Scope) {
		if !slices.Contains(supportedScopes(), sc) {
			return nil, badMetadata("scope %q is not supported", sc)
		}
	}
	for name, u := range map[string]string{"client_uri": m.ClientURI, "logo_uri": m.LogoURI, "tos_uri": m.TOSURI, "policy_uri": m.PolicyURI} {
		if u == "" {
			continue
		}
		p, err := url.Parse(u)
		if err != nil || p.Scheme != "https" || p.Host == "" || p.User != nil {
			return nil, badMetadata("%s must be an https URL", name)
		}
		if msg := uriProblem(u, p); msg != "" {
			return nil, badMetadata("%s %s", name, msg)
		}
	}
	return &m, nil
}

// Bounds of client metadata (docs/oauth.md, "Clients"). The whole document
// is at most maxMetadataBytes.
const (
	maxRedirectURIs    = 10
	maxURILength       = 2000
	maxHostLength      = 253 // a DNS name
	maxClientNameRunes = 100
	maxScopeLength     = 1000
	maxContacts        = 10
	maxShortText       = 200 // contacts, software_id, software_version
)

// checkMetadataText bounds every string of client metadata and refuses
// NUL, control and bidirectional formatting characters in any of them.
func checkMetadataText(m *clientMetadata) error {
	if p := web.DisplayTextProblem(m.ClientName); p != "" {
		return badMetadata("client_name %s", p)
	}
	if n := utf8.RuneCountInString(m.ClientName); n > maxClientNameRunes {
		return badMetadata("client_name is longer than %d characters", maxClientNameRunes)
	}
	if len(m.Scope) > maxScopeLength {
		return badMetadata("scope is longer than %d characters", maxScopeLength)
	}
	if len(m.Contacts) > maxContacts {
		return badMetadata("at most %d contacts", maxContacts)
	}
	// In a fixed order, so that a request always names the same problem.
	type field struct{ name, value string }
	short := []field{{"software_id", m.SoftwareID}, {"software_version", m.SoftwareVersion}, {"scope", m.Scope},
		{"token_endpoint_auth_method", m.TokenEndpointAuthMethod}, {"application_type", m.ApplicationType}}
	for i, c := range m.Contacts {
		short = append(short, field{fmt.Sprintf("contacts[%d]", i), c})
	}
	for i, g := range m.GrantTypes {
		short = append(short, field{fmt.Sprintf("grant_types[%d]", i), g})
	}
	for i, rt := range m.ResponseTypes {
		short = append(short, field{fmt.Sprintf("response_types[%d]", i), rt})
	}
	for _, f := range short {
		if p := web.DisplayTextProblem(f.value); p != "" {
			return badMetadata("%s %s", f.name, p)
		}
		if f.name != "scope" && utf8.RuneCountInString(f.value) > maxShortText {
			return badMetadata("%s is longer than %d characters", f.name, maxShortText)
		}
	}
	for _, f := range []field{{"client_id", m.ClientID}, {"client_uri", m.ClientURI}, {"logo_uri", m.LogoURI}, {"tos_uri", m.TOSURI}, {"policy_uri", m.PolicyURI}} {
		if len(f.value) > maxURILength {
			return badMetadata("%s is longer than %d characters", f.name, maxURILength)
		}
		if p := web.DisplayTextProblem(f.value); p != "" {
			return badMetadata("%s %s", f.name, p)
		}
	}
	return nil
}

// uriProblem describes what is wrong with a parsed absolute URI beyond its
// scheme, or returns "": longer than maxURILength, characters outside
// printable ASCII (an IRI's Unicode, including bidirectional controls, must
// be percent-encoded; hosts in punycode), a host longer than a DNS name
// or with an empty or over-long label, or a port outside 1–65535.
func uriProblem(raw string, u *url.URL) string {
	if len(raw) > maxURILength {
		return fmt.Sprintf("is longer than %d characters", maxURILength)
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] <= 0x20 || raw[i] >= 0x7f {
			return "must be printable ASCII (percent-encode other characters, punycode for host names)"
		}
	}
	host := u.Hostname()
	if len(host) > maxHostLength {
		return fmt.Sprintf("has a host longer than %d characters", maxHostLength)
	}
	if !strings.Contains(host, ":") { // not an IPv6 literal
		for _, label := range strings.Split(strings.TrimSuffix(host, "."), ".") {
			if label == "" || len(label) > 63 {
				return "has a host name with an empty label or one longer than 63 characters"
			}
		}
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return fmt.Sprintf("has port %s, which is not between 1 and 65535", p)
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return "has an empty port"
	}
	return ""
}

// checkRedirectURI accepts https URIs and http loopback URIs (RFC 8252:
// 127.0.0.1, [::1] or localhost, any port), without fragments or
// credentials.
func checkRedirectURI(raw string) error {
	if len(raw) > maxURILength {
		return badRedirect("a redirect URI is longer than %d characters", maxURILength)
	}
	if p := web.DisplayTextProblem(raw); p != "" {
		return badRedirect("a redirect URI %s", p)
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return badRedirect("redirect URI %q is not an absolute URL", raw)
	}
	if msg := uriProblem(raw, u); msg != "" {
		return badRedirect("redirect URI %q %s", raw, msg)
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return badRedirect("redirect URI %q must not have a fragment", raw)
	}
	if u.User != nil {
		return badRedirect("redirect URI %q must not carry credentials", raw)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		switch u.Hostname() {
		case "127.0.0.1", "::1", "localhost":
			return nil
		}
		return badRedirect("redirect URI %q: http is allowed only for loopback (127.0.0.1, [::1], localhost)", raw)
	}
	return badRedirect("redirect URI %q must use https (or http on loopback)", raw)
}

// clientResponse is the RFC 7591 registration response.
type clientResponse struct {
	ClientID                string   `json:"client_id"`
	ClientIDIssuedAt        int64    `json:"client_id_issued_at"`
	ClientName              string   `json:"client_name,omitempty"`
	ClientURI               string   `json:"client_uri,omitempty"`
	LogoURI                 string   `json:"logo_uri,omitempty"`
	RedirectURIs            []string `json:"redirect_uris"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	Scope                   string   `json:"scope,omitempty"`
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if !s.opts.MCPOAuth {
		web.WriteOAuthError(w, http.StatusForbidden, "access_denied", "MCP OAuth is disabled on this server (--mcp-oauth off): dynamic client registration is not available; use an API key or agent registration (see "+s.guideURL()+")")
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(strings.ToLower(ct), "application/json") {
		web.WriteOAuthError(w, http.StatusBadRequest, "invalid_client_metadata", "the registration request must be application/json")
		return
	}
	if err := s.svc.Kernel.Allow(ctx, core.LimitOAuthRegister, web.ClientIP(r)); err != nil {
		if e := core.AsError(err); e.Kind == core.KindRateLimited {
			w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfterSeconds))
			web.WriteOAuthError(w, http.StatusTooManyRequests, "rate_limited", "too many client registrations from this address; retry later")
			return
		}
		if ctx.Err() == nil { // else the client hung up: nothing to log
			s.log.ErrorContext(ctx, "register rate limit", "err", err)
		}
		web.WriteOAuthError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "registration is unavailable right now; retry shortly")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxMetadataBytes+1))
	if err != nil {
		web.WriteOAuthError(w, http.StatusBadRequest, "invalid_client_metadata", "the request body could not be read")
		return
	}
	if len(body) > maxMetadataBytes {
		web.WriteOAuthError(w, http.StatusBadRequest, "invalid_client_metadata", "the registration request is larger than 5 KB")
		return
	}
	m, err := s.parseMetadata(body)
	if err == nil && m.ClientID != "" {
		err = badMetadata("client_id is issued by the server; to use your own URL as client_id, publish a client ID metadata document instead of registering")
	}
	var me *metadataError
	if errors.As(err, &me) {
		web.WriteOAuthError(w, http.StatusBadRequest, me.code, me.desc)
		return
	}
	now := s.now()
	c := &authstate.OAuthClient{
		ID: core.NewID(clientIDPrefix), Kind: authstate.OAuthClientDynamic, Name: m.ClientName, URI: m.ClientURI, LogoURI: m.LogoURI,
		RedirectURIs: m.RedirectURIs, GrantTypes: m.GrantTypes, ResponseTypes: m.ResponseTypes, Scope: m.Scope,
		Metadata: body, CreatedAt: now, UpdatedAt: now,
	}
	if err := s.store.CreateOAuthClient(ctx, c); err != nil {
		s.log.ErrorContext(ctx, "register client", "err", err)
		web.WriteOAuthError(w, http.StatusInternalServerError, "server_error", "the client could not be registered")
		return
	}
	writeJSON(w, http.StatusCreated, clientResponse{
		ClientID: c.ID, ClientIDIssuedAt: now.Unix(), ClientName: c.Name, ClientURI: c.URI, LogoURI: c.LogoURI,
		RedirectURIs: c.RedirectURIs, GrantTypes: c.GrantTypes, ResponseTypes: c.ResponseTypes,
		TokenEndpointAuthMethod: "none", Scope: c.Scope,
	})
}

// isMetadataDocumentID reports whether a client_id names a client ID
// metadata document: an https URL.
func isMetadataDocumentID(id string) bool { return strings.HasPrefix(id, "https://") }

// client returns a registered client, or fetches (and caches in the store)
// the metadata document an https client_id names.
func (s *Server) client(ctx context.Context, id string) (*authstate.OAuthClient, error) {
	if !isMetadataDocumentID(id) {
		c, err := s.store.GetOAuthClient(ctx, id)
		if errors.Is(err, core.ErrNoRows) {
			return nil, fosite.ErrNotFound
		}
		return c, err
	}
	c, err := s.store.GetOAuthClient(ctx, id)
	switch {
	case err == nil && s.now().Sub(c.UpdatedAt) < s.opts.MetadataCacheTTL:
		return c, nil
	case err != nil && !errors.Is(err, core.ErrNoRows):
		return nil, err
	}
	stale := c // a copy older than the cache TTL, or nil
	if !s.opts.MCPOAuth {
		// No outbound fetches while chat-app OAuth is off.
		return nil, fosite.ErrNotFound
	}
	if reason, failed := s.failed.get(id, s.now()); failed {
		return nil, fosite.ErrNotFound.WithHintf("The client ID metadata document could not be used (%s); it is not fetched again for a while.", reason)
	}
	if err := s.allowFetch(ctx); err != nil {
		if core.ErrorKind(err) != core.KindRateLimited {
			return nil, err
		}
		if stale != nil {
			// Better the document as it was minutes ago than no client.
			return stale, nil
		}
		return nil, errFetchRateLimited(err)
	}
	m, body, err := s.fetchMetadataDocument(ctx, id)
	if err != nil {
		s.log.InfoContext(ctx, "client metadata document refused", "client_id", id, "err", err)
		now := s.now()
		s.failed.put(id, err.Error(), now.Add(s.opts.MetadataFailureTTL), now)
		return nil, fosite.ErrNotFound.WithWrap(err)
	}
	now := s.now()
	c = &authstate.OAuthClient{
		ID: id, Kind: authstate.OAuthClientMetadataDocument, Name: m.ClientName, URI: m.ClientURI, LogoURI: m.LogoURI,
		RedirectURIs: m.RedirectURIs, GrantTypes: m.GrantTypes, ResponseTypes: m.ResponseTypes, Scope: m.Scope,
		Metadata: body, CreatedAt: now, UpdatedAt: now,
	}
	if err := s.store.PutOAuthClient(ctx, c); err != nil {
		return nil, err
	}
	return c, nil
}

// checkMetadataDocumentURL applies the client ID metadata document rules:
// https, a host, a path, no fragment, credentials or dot segments.
func checkMetadataDocumentURL(id string) error {
	u, err := url.Parse(id)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.Fragment != "" || strings.Contains(id, "#") {
		return errors.New("a metadata document client_id must be an https URL without credentials or fragment")
	}
	if u.Path == "" || u.Path == "/" {
		return errors.New("a metadata document client_id must have a path")
	}
	if msg := uriProblem(id, u); msg != "" {
		return errors.New("a metadata document client_id " + msg)
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == "." || seg == ".." {
			return errors.New("a metadata document client_id must not have dot segments")
		}
	}
	return nil
}

func (s *Server) fetchMetadataDocument(ctx context.Context, id string) (*clientMetadata, []byte, error) {
	if err := checkMetadataDocumentURL(id); err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, metadataTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("fetch: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("fetch: status %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("read: %w", err)
	}
	if len(body) > maxMetadataBytes {
		return nil, nil, errors.New("document larger than 5 KB")
	}
	m, err := s.parseMetadata(body)
	if err != nil {
		return nil, nil, err
	}
	if m.ClientID != id {
		return nil, nil, fmt.Errorf("document client_id %q differs from its URL", m.ClientID)
	}
	return m, bytes.Clone(body), nil
}

// newMetadataClient fetches metadata documents without following
// redirects and refuses to connect to anything but public unicast
// addresses, checked after DNS resolution on the address actually dialed
// (so DNS rebinding cannot reach internal services): core/safehttp, the
// client webhooks deliver with too.
func newMetadataClient() *http.Client {
	return safehttp.NewClient(safehttp.Options{Timeout: metadataTimeout})
}

// fositeClient is a client as fosite sees it: public, PKCE, allowed every
// supported scope (consent decides what is granted) and both resources.
func (s *Server) fositeClient(c *authstate.OAuthClient) fosite.Client {
	return &fosite.DefaultOpenIDConnectClient{
		DefaultClient: &fosite.DefaultClient{
			ID: c.ID, RedirectURIs: c.RedirectURIs, GrantTypes: c.GrantTypes, ResponseTypes: c.ResponseTypes,
			Scopes: supportedScopes(), Audience: s.resources, Public: true,
		},
		TokenEndpointAuthMethod: "none",
	}
}
