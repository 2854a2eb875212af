package oauth_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"
	"golang.org/x/oauth2"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/core/web"
	"github.com/faxhub/faxhub/internal/testenv"
	"github.com/faxhub/faxhub/oauth"
	"github.com/faxhub/faxhub/passkeys"
)

const redirectURI = "http://127.0.0.1:53682/callback"

// harness is a real service (testenv), the OAuth server mounted on an
// httptest server that also serves a test-only protected /mcp resource.
type harness struct {
	t    *testing.T
	env  *testenv.Env
	srv  *oauth.Server
	base string
	// noRedirect is a browser that shows redirects instead of following
	// them, so each hop can be checked.
	noRedirect *http.Client
}

// routed is a router with srv's routes and the console's (the server
// sends owners to its sign-in and approval pages), both origins on base.
func routed(srv *oauth.Server, env *testenv.Env, base string) *web.Router {
	r := web.NewRouter(web.Origins{web.OriginBase: base, web.OriginAPI: base})
	srv.Register(r)
	passkeys.New(env.Svc, env.DB, passkeys.Options{BaseURL: base}).Register(r)
	return r
}

func newHarness(t *testing.T, mod func(*oauth.Options), envOpts ...testenv.Option) *harness {
	t.Helper()
	var (
		mu sync.RWMutex
		h  http.Handler = http.NotFoundHandler()
	)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.RLock()
		defer mu.RUnlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	// The service and the server share the origins (the MCP resource, claim
	// links).
	envOpts = append([]testenv.Option{testenv.WithoutWorkers(), testenv.WithConfig(func(c *services.Config) {
		c.BaseURL, c.APIURL = ts.URL, ts.URL
		c.SetLimit(core.LimitOAuthRegister, core.Rate{Burst: 100})
	})}, envOpts...)
	env := testenv.New(t, envOpts...)
	opts := oauth.Options{BaseURL: ts.URL, APIURL: ts.URL, MCPOAuth: true}
	if mod != nil {
		mod(&opts)
	}
	srv, err := oauth.New(env.Svc, env.DB, opts)
	if err != nil {
		t.Fatal(err)
	}
	r := routed(srv, env, ts.URL)
	r.Group("test", web.OriginBase).Handle(web.Route{Name: "test.mcp", Methods: "POST", Path: "/mcp", OwnMethods: true, Auth: web.AuthBearer}, protected(srv, ts.URL))
	mu.Lock()
	h = r
	mu.Unlock()
	return &harness{
		t: t, env: env, srv: srv, base: ts.URL,
		noRedirect: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
	}
}

// protected is a test-only MCP resource: 401 with the RFC 9728 pointer
// without a valid token, the principal as JSON with one.
func protected(srv *oauth.Server, base string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		p, err := srv.VerifyAccessToken(r.Context(), tok, base+"/mcp")
		if err != nil {
			prm, err := srv.ResourceMetadataURL("/mcp")
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+prm+`"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(p)
	})
}

func (h *harness) mcp() string { return h.base + "/mcp" }

func (h *harness) getJSON(url string, v any) *http.Response {
	h.t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	if v != nil {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			h.t.Fatalf("decode %s: %v", url, err)
		}
	}
	return resp
}

// post sends a form or JSON body and decodes a JSON answer.
func (h *harness) post(path, contentType, body string) (int, map[string]any) {
	h.t.Helper()
	resp, err := http.Post(h.base+path, contentType, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if len(bytes.TrimSpace(b)) > 0 {
		if err := json.Unmarshal(b, &m); err != nil {
			h.t.Fatalf("POST %s: %d %s: not JSON: %v", path, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode, m
}

func (h *harness) form(path string, v url.Values) (int, map[string]any) {
	h.t.Helper()
	return h.post(path, "application/x-www-form-urlencoded", v.Encode())
}

func (h *harness) register(meta map[string]any) string {
	h.t.Helper()
	b, _ := json.Marshal(meta)
	code, m := h.post(oauth.PathRegister, "application/json", string(b))
	if code != http.StatusCreated {
		h.t.Fatalf("register: %d %v", code, m)
	}
	return m["client_id"].(string)
}

func (h *harness) registerDefault() string {
	return h.register(map[string]any{"client_name": "Test Chat", "redirect_uris": []string{redirectURI},
		"grant_types": []string{"authorization_code", "refresh_token"}, "token_endpoint_auth_method": "none"})
}

func (h *harness) cookie(owner *accounts.Owner) string {
	h.t.Helper()
	secret, _, err := h.env.Svc.Accounts.CreateSession(context.Background(), owner.ID, "test")
	if err != nil {
		h.t.Fatal(err)
	}
	return web.SessionCookieName + "=" + secret
}

// browse GETs a URL (absolute or a local path) with the session cookie and
// returns the status and Location.
func (h *harness) browse(target, cookie string) (int, *url.URL, string) {
	h.t.Helper()
	if strings.HasPrefix(target, "/") {
		target = h.base + target
	}
	req, _ := http.NewRequest(http.MethodGet, target, nil)
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	resp, err := h.noRedirect.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var loc *url.URL
	if l := resp.Header.Get("Location"); l != "" {
		loc, err = resp.Location()
		if err != nil {
			h.t.Fatal(err)
		}
	}
	return resp.StatusCode, loc, string(b)
}

type authz struct {
	cfg      *oauth2.Config
	verifier string
	state    string
	url      string
}

func (h *harness) authRequest(clientID string, scopes []string, extra ...oauth2.AuthCodeOption) authz {
	cfg := &oauth2.Config{
		ClientID: clientID, RedirectURL: redirectURI, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: h.base + oauth.PathAuthorize, TokenURL: h.base + oauth.PathToken, AuthStyle: oauth2.AuthStyleInParams},
	}
	v := oauth2.GenerateVerifier()
	state := "state-" + core.RandomString(8)
	opts := append([]oauth2.AuthCodeOption{oauth2.S256ChallengeOption(v), oauth2.SetAuthURLParam("resource", h.mcp())}, extra...)
	return authz{cfg: cfg, verifier: v, state: state, url: cfg.AuthCodeURL(state, opts...)}
}

// consent runs authorize with the owner's cookie and returns the approval
// id and the local resume path the console returns to.
func (h *harness) consent(a authz, cookie string) (string, string) {
	h.t.Helper()
	code, loc, body := h.browse(a.url, cookie)
	if code != http.StatusSeeOther || loc == nil || !strings.HasPrefix(loc.Path, "/console/approvals/") {
		h.t.Fatalf("authorize: %d %v %s, want a redirect to the consent approval", code, loc, body)
	}
	id := strings.TrimPrefix(loc.Path, "/console/approvals/")
	ret := loc.Query().Get("return")
	if ret != oauth.PathAuthorizeResume+"?approval="+id {
		h.t.Fatalf("return = %q", ret)
	}
	return id, ret
}

// decide decides the approval exactly as the console does.
func (h *harness) decide(owner *accounts.Owner, id string, approve bool, scopes []string) {
	h.t.Helper()
	ctx := context.Background()
	a, err := h.env.Svc.Approvals.Get(ctx, owner.ID, id)
	if err != nil {
		h.t.Fatal(err)
	}
	d := approvals.Decision{Approve: approve, BindingHash: a.BindingHash}
	if scopes != nil {
		d.Data = approvals.ConsentDecision{Scopes: scopes}
	}
	if _, err := h.env.Svc.Approvals.Decide(ctx, owner.ID, id, d); err != nil {
		h.t.Fatal(err)
	}
}

// callback resumes and returns the redirect to the client.
func (h *harness) callback(ret, cookie string) url.Values {
	h.t.Helper()
	code, loc, body := h.browse(ret, cookie)
	if code != http.StatusSeeOther || loc == nil || !strings.HasPrefix(loc.String(), redirectURI) {
		h.t.Fatalf("resume: %d %v %s, want a redirect to the client", code, loc, body)
	}
	return loc.Query()
}

// authorize runs the whole owner side and returns the code.
func (h *harness) authorize(a authz, owner *accounts.Owner, narrowed []string) string {
	h.t.Helper()
	cookie := h.cookie(owner)
	id, ret := h.consent(a, cookie)
	h.decide(owner, id, true, narrowed)
	q := h.callback(ret, cookie)
	if q.Get("iss") != h.srv.Issuer() || q.Get("state") != a.state || q.Get("code") == "" {
		h.t.Fatalf("callback = %v", q)
	}
	return q.Get("code")
}

func (h *harness) exchange(a authz, code string) *oauth2.Token {
	h.t.Helper()
	tok, err := a.cfg.Exchange(context.Background(), code, oauth2.VerifierOption(a.verifier), oauth2.SetAuthURLParam("resource", h.mcp()))
	if err != nil {
		h.t.Fatalf("exchange: %v", err)
	}
	return tok
}

func wantOAuthError(t *testing.T, what string, status int, m map[string]any, wantStatus int, wantCode string) {
	t.Helper()
	if status != wantStatus || m["error"] != wantCode {
		t.Fatalf("%s: %d %v, want %d %s", what, status, m, wantStatus, wantCode)
	}
}

func (h *harness) wantInactive(tok string) {
	h.t.Helper()
	_, err := h.srv.VerifyAccessToken(context.Background(), tok, h.mcp())
	if core.ErrorCode(err) != core.CodeInvalidToken || core.ErrorKind(err) != core.KindUnauthenticated {
		h.t.Fatalf("VerifyAccessToken of an inactive token: %v, want invalid_token", err)
	}
}

var resourceMetadataRE = regexp.MustCompile(`resource_metadata="([^"]+)"`)

// TestChatAppFlow is the whole flow a chat app runs, as a spec-following
// client (golang.org/x/oauth2) does it.
func TestChatAppFlow(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()

	// 1. Discovery from a 401.
	resp, err := http.Get(h.mcp())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	m := resourceMetadataRE.FindStringSubmatch(resp.Header.Get("WWW-Authenticate"))
	if resp.StatusCode != http.StatusUnauthorized || m == nil {
		t.Fatalf("GET /mcp: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	var prm oauth.ProtectedResourceMetadata
	h.getJSON(m[1], &prm)
	if prm.Resource != h.mcp() || len(prm.AuthorizationServers) != 1 {
		t.Fatalf("PRM = %+v", prm)
	}
	issuer := prm.AuthorizationServers[0]
	iu, _ := url.Parse(issuer)
	var meta oauth.ASMetadata
	h.getJSON(iu.Scheme+"://"+iu.Host+"/.well-known/oauth-authorization-server"+iu.Path, &meta)
	if meta.Issuer != issuer || issuer != h.base+"/api/auth" {
		t.Fatalf("issuer %q from metadata, %q from PRM", meta.Issuer, issuer)
	}

	// 2. Registration.
	b, _ := json.Marshal(map[string]any{"client_name": "Test Chat", "redirect_uris": []string{redirectURI},
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"}, "token_endpoint_auth_method": "none"})
	resp, err = http.Post(meta.RegistrationEndpoint, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var reg map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&reg)
	resp.Body.Close()
	clientID, _ := reg["client_id"].(string)
	if resp.StatusCode != http.StatusCreated || !strings.HasPrefix(clientID, "oac_") || reg["token_endpoint_auth_method"] != "none" {
		t.Fatalf("register: %d %v", resp.StatusCode, reg)
	}

	// 3. Authorization: not signed in → sign-in, then consent.
	cfg := &oauth2.Config{
		ClientID: clientID, RedirectURL: redirectURI,
		Scopes:   []string{"openid", "profile", "email", "offline_access", "fax:read", "fax:draft", "fax:send", "credits:read"},
		Endpoint: oauth2.Endpoint{AuthURL: meta.AuthorizationEndpoint, TokenURL: meta.TokenEndpoint, AuthStyle: oauth2.AuthStyleInParams},
	}
	verifier := oauth2.GenerateVerifier()
	a := authz{cfg: cfg, verifier: verifier, state: "state-0123456789",
		url: cfg.AuthCodeURL("state-0123456789", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", h.mcp()))}
	code, loc, _ := h.browse(a.url, "")
	au, _ := url.Parse(a.url)
	if code != http.StatusSeeOther || loc.Path != "/signin" || loc.Query().Get("next") != au.Path+"?"+au.RawQuery {
		t.Fatalf("authorize without a session: %d %v", code, loc)
	}
	cookieA, cookieB := h.cookie(h.env.OwnerA), h.cookie(h.env.OwnerB)
	id, ret := h.consent(a, cookieA)

	ap, err := h.env.Svc.Approvals.Get(ctx, h.env.OwnerA.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	var details approvals.ConsentDetails
	if err := json.Unmarshal(ap.Details, &details); err != nil {
		t.Fatal(err)
	}
	if ap.Kind != approvals.KindOAuthConsent || details.ClientID != clientID || details.ClientName != "Test Chat" ||
		details.Resource != h.mcp() || details.RedirectURI != redirectURI || !slices.Equal(details.Scopes, cfg.Scopes) {
		t.Fatalf("consent approval = %+v %+v", ap, details)
	}

	// Owner B can neither see, decide nor resume A's consent.
	if _, err := h.env.Svc.Approvals.Get(ctx, h.env.OwnerB.ID, id); core.ErrorKind(err) != core.KindNotFound {
		t.Fatalf("B reads A's approval: %v", err)
	}
	if _, err := h.env.Svc.Approvals.Decide(ctx, h.env.OwnerB.ID, id, approvals.Decision{Approve: true, BindingHash: ap.BindingHash}); core.ErrorKind(err) != core.KindNotFound {
		t.Fatalf("B decides A's approval: %v", err)
	}
	if code, _, body := h.browse(ret, cookieB); code != http.StatusBadRequest || !strings.Contains(body, "invalid_request") {
		t.Fatalf("B resumes A's consent: %d %s", code, body)
	}
	// Resuming before the decision goes back to the inbox.
	if code, loc, _ := h.browse(ret, cookieA); code != http.StatusSeeOther || loc.Path != "/console/approvals/"+id {
		t.Fatalf("resume before the decision: %d %v", code, loc)
	}

	// The owner approves, without fax:send.
	narrowed := []string{"openid", "profile", "email", "offline_access", "fax:read", "fax:draft", "credits:read"}
	h.decide(h.env.OwnerA, id, true, narrowed)
	q := h.callback(ret, cookieA)
	if q.Get("iss") != issuer || q.Get("state") != a.state || q.Get("code") == "" {
		t.Fatalf("callback = %v", q)
	}
	if code, _, _ := h.browse(ret, cookieA); code != http.StatusBadRequest {
		t.Fatalf("second resume: %d, want 400", code)
	}

	// 4. Token.
	tok := h.exchange(a, q.Get("code"))
	if tok.TokenType != "bearer" && tok.TokenType != "Bearer" || tok.RefreshToken == "" || time.Until(tok.Expiry) > time.Hour+time.Minute {
		t.Fatalf("token = %+v", tok)
	}
	if got := strings.Fields(tok.Extra("scope").(string)); !sameSet(got, narrowed) {
		t.Fatalf("granted scope = %v, want %v", got, narrowed)
	}
	p, err := h.srv.VerifyAccessToken(ctx, tok.AccessToken, h.mcp())
	if err != nil {
		t.Fatal(err)
	}
	grants, err := h.srv.ListGrants(ctx, h.env.OwnerA.ID)
	if err != nil || len(grants) != 1 {
		t.Fatalf("ListGrants(A) = %v, %v", grants, err)
	}
	want := core.Principal{OwnerID: h.env.OwnerA.ID, Kind: core.PrincipalOAuthGrant, Mode: core.ModeLive,
		Scopes: []core.Scope{core.ScopeFaxRead, core.ScopeFaxDraft, core.ScopeCreditsRead}, SubjectID: grants[0].ID, ClientID: clientID, ClientName: "Test Chat", Audience: h.mcp()}
	if fmt.Sprint(p) != fmt.Sprint(want) {
		t.Fatalf("principal = %+v\nwant        %+v", p, want)
	}
	if _, err := h.srv.VerifyAccessToken(ctx, tok.AccessToken, h.base+"/a2a"); core.ErrorCode(err) != core.CodeInvalidToken {
		t.Fatalf("token used for another audience: %v", err)
	}
	// The resource accepts it.
	req, _ := http.NewRequest(http.MethodGet, h.mcp(), nil)
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /mcp with the token: %v %v", resp, err)
	}
	if grants[0].LastUsedAt == nil && func() bool {
		g, _ := h.srv.ListGrants(ctx, h.env.OwnerA.ID)
		return g[0].LastUsedAt == nil
	}() {
		t.Fatal("last used not recorded")
	}
	if g, _ := h.srv.ListGrants(ctx, h.env.OwnerB.ID); len(g) != 0 {
		t.Fatalf("B sees grants: %v", g)
	}

	// The id_token is RS256, signed by a published key, with the claims.
	checkIDToken(t, h, tok, clientID, h.env.OwnerA)

	// 5. Refresh rotates: the new pair works, the old access token is gone,
	// and presenting the used refresh token again is refused and ends the
	// authorization (reuse detection).
	code2, m2 := h.form(oauth.PathToken, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}, "client_id": {clientID}})
	if code2 != http.StatusOK || m2["refresh_token"] == nil || m2["refresh_token"] == tok.RefreshToken {
		t.Fatalf("refresh: %d %v", code2, m2)
	}
	at2, rt2 := m2["access_token"].(string), m2["refresh_token"].(string)
	if _, err := h.srv.VerifyAccessToken(ctx, at2, h.mcp()); err != nil {
		t.Fatalf("refreshed token: %v", err)
	}
	h.wantInactive(tok.AccessToken)
	code3, m3 := h.form(oauth.PathToken, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}, "client_id": {clientID}})
	wantOAuthError(t, "reused refresh token", code3, m3, http.StatusBadRequest, "invalid_grant")
	h.wantInactive(at2)
	code4, m4 := h.form(oauth.PathToken, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt2}, "client_id": {clientID}})
	wantOAuthError(t, "refresh token of a reused chain", code4, m4, http.StatusBadRequest, "invalid_grant")

	// 6. Revocation, through a fresh authorization.
	a2 := h.authRequest(clientID, []string{"offline_access", "fax:read"})
	tok2 := h.exchange(a2, h.authorize(a2, h.env.OwnerA, nil))
	if _, err := h.srv.VerifyAccessToken(ctx, tok2.AccessToken, h.mcp()); err != nil {
		t.Fatal(err)
	}
	for i := range 2 { // idempotent
		code, m := h.form(oauth.PathRevoke, url.Values{"token": {tok2.AccessToken}, "token_type_hint": {"access_token"}})
		if code != http.StatusOK {
			t.Fatalf("revoke #%d: %d %v", i, code, m)
		}
	}
	h.wantInactive(tok2.AccessToken)
	code5, m5 := h.form(oauth.PathToken, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok2.RefreshToken}, "client_id": {clientID}})
	wantOAuthError(t, "refresh after revocation", code5, m5, http.StatusBadRequest, "invalid_grant")
	if code, m := h.form(oauth.PathRevoke, url.Values{"token": {"ory_at_unknown.token"}}); code != http.StatusOK {
		t.Fatalf("revoke of an unknown token: %d %v", code, m)
	}

	// 7. Revoking the grant ends every token of it; B cannot revoke it.
	a3 := h.authRequest(clientID, []string{"offline_access", "fax:read"})
	tok3 := h.exchange(a3, h.authorize(a3, h.env.OwnerA, nil))
	grants, _ = h.srv.ListGrants(ctx, h.env.OwnerA.ID)
	if len(grants) != 1 || !slices.Equal(grants[0].Scopes, []string{"offline_access", "fax:read"}) {
		t.Fatalf("grant after a new consent = %+v", grants)
	}
	if err := h.srv.RevokeGrant(ctx, h.env.OwnerB.ID, grants[0].ID); core.ErrorKind(err) != core.KindNotFound {
		t.Fatalf("B revokes A's grant: %v", err)
	}
	if _, err := h.srv.VerifyAccessToken(ctx, tok3.AccessToken, h.mcp()); err != nil {
		t.Fatal(err)
	}
	if err := h.srv.RevokeGrant(ctx, h.env.OwnerA.ID, grants[0].ID); err != nil {
		t.Fatal(err)
	}
	h.wantInactive(tok3.AccessToken)
	code6, m6 := h.form(oauth.PathToken, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok3.RefreshToken}, "client_id": {clientID}})
	wantOAuthError(t, "refresh after grant revocation", code6, m6, http.StatusBadRequest, "invalid_grant")
	if g, _ := h.srv.ListGrants(ctx, h.env.OwnerA.ID); len(g) != 0 {
		t.Fatalf("grants after revocation: %v", g)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func checkIDToken(t *testing.T, h *harness, tok *oauth2.Token, clientID string, owner *accounts.Owner) {
	t.Helper()
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		t.Fatal("no id_token")
	}
	parsed, err := josejwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		t.Fatal(err)
	}
	hdr := parsed.Headers[0]
	if hdr.Algorithm != "RS256" || hdr.KeyID == "" {
		t.Fatalf("id_token header = %+v", hdr)
	}
	var set jose.JSONWebKeySet
	h.getJSON(h.base+oauth.PathJWKS, &set)
	keys := set.Key(hdr.KeyID)
	if len(keys) != 1 {
		t.Fatalf("kid %s not in the JWKS", hdr.KeyID)
	}
	if _, ok := keys[0].Key.(*rsa.PublicKey); !ok {
		t.Fatalf("JWKS key %s is %T", hdr.KeyID, keys[0].Key)
	}
	var std josejwt.Claims
	var extra struct {
		Email         string `json:"email"`
		EmailVerified bool   `json:"email_verified"`
		Name          string `json:"name"`
	}
	if err := parsed.Claims(keys[0].Key, &std, &extra); err != nil {
		t.Fatalf("id_token signature: %v", err)
	}
	if err := std.Validate(josejwt.Expected{Issuer: h.srv.Issuer(), Subject: owner.ID, AnyAudience: josejwt.Audience{clientID}, Time: time.Now()}); err != nil {
		t.Fatalf("id_token claims: %v", err)
	}
	if extra.Email != owner.Email || !extra.EmailVerified || extra.Name != owner.Name {
		t.Fatalf("id_token profile claims = %+v", extra)
	}
}

func TestMetadataDocuments(t *testing.T) {
	h := newHarness(t, nil)
	for _, p := range []string{oauth.PathASMetadata, oauth.PathASMetadataIssuer, oauth.PathOIDCMetadataIssuer} {
		var m map[string]any
		resp := h.getJSON(h.base+p, &m)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", p, resp.StatusCode)
		}
		for k, want := range map[string]any{
			"issuer": h.base + "/api/auth", "authorization_endpoint": h.base + "/api/auth/oauth2/authorize",
			"token_endpoint": h.base + "/api/auth/oauth2/token", "registration_endpoint": h.base + "/api/auth/oauth2/register",
			"revocation_endpoint": h.base + "/api/auth/oauth2/revoke", "jwks_uri": h.base + "/api/auth/jwks",
			"client_id_metadata_document_supported": true, "authorization_response_iss_parameter_supported": true,
		} {
			if m[k] != want {
				t.Fatalf("%s: %s = %v, want %v", p, k, m[k], want)
			}
		}
		for k, want := range map[string][]string{
			"response_types_supported":              {"code"},
			"code_challenge_methods_supported":      {"S256"},
			"token_endpoint_auth_methods_supported": {"none"},
			"grant_types_supported":                 {"authorization_code", "refresh_token", oauth.GrantTypeAgentClaim, oauth.GrantTypeJWTBearer},
			"scopes_supported": {"openid", "profile", "email", "offline_access", "fax:read", "fax:draft", "fax:send",
				"inbox:read", "credits:read", "credits:checkout"},
		} {
			if got := strs(m[k]); !slices.Equal(got, want) {
				t.Fatalf("%s: %s = %v, want %v", p, k, got, want)
			}
		}
		if aa, _ := m["agent_auth"].(map[string]any); aa["skill"] != h.base+"/auth.md" {
			t.Fatalf("agent_auth = %v", m["agent_auth"])
		}
	}
	for path, res := range map[string]string{oauth.PathProtectedResource: h.base, oauth.PathProtectedResourceMCP: h.mcp()} {
		var m map[string]any
		h.getJSON(h.base+path, &m)
		if m["resource"] != res || !slices.Equal(strs(m["authorization_servers"]), []string{h.srv.Issuer()}) ||
			!slices.Equal(strs(m["bearer_methods_supported"]), []string{"header"}) || len(strs(m["scopes_supported"])) != 10 {
			t.Fatalf("%s = %v", path, m)
		}
	}

	var set jose.JSONWebKeySet
	h.getJSON(h.base+oauth.PathJWKS, &set)
	if algs := keyAlgs(set); !slices.Equal(algs, []string{"EdDSA", "RS256"}) {
		t.Fatalf("JWKS algorithms = %v", algs)
	}
	for _, k := range set.Keys {
		if k.KeyID == "" || !k.IsPublic() {
			t.Fatalf("JWKS key %+v: want a public key with a kid", k)
		}
	}

	// CORS preflight on the token endpoint; none on the authorize endpoint.
	for path, want := range map[string]int{oauth.PathToken: http.StatusNoContent, oauth.PathAuthorize: http.StatusMethodNotAllowed} {
		req, _ := http.NewRequest(http.MethodOptions, h.base+path, nil)
		req.Header.Set("Origin", "https://inspector.example")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("OPTIONS %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
	if code, m := h.form(oauth.PathJWKS, url.Values{}); code != http.StatusMethodNotAllowed || m["error"] != "invalid_request" {
		t.Fatalf("POST jwks: %d %v", code, m)
	}

	resp, err := http.Get(h.base + "/auth.md")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/markdown") {
		t.Fatalf("auth.md content type %q", resp.Header.Get("Content-Type"))
	}
	for _, want := range []string{"## 1. API key", "## 2. MCP and A2A OAuth", "## 3. Agent registration", "## 4. Delegated",
		h.base + "/.well-known/oauth-protected-resource/mcp", h.base + "/api/auth/oauth2/register", "S256", "resource=" + h.mcp()} {
		if !strings.Contains(string(body), want) {
			t.Fatalf("auth.md lacks %q", want)
		}
	}
	if strings.Contains(string(body), "{base_url}") {
		t.Fatal("auth.md has an unreplaced placeholder")
	}
}

func strs(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

func keyAlgs(set jose.JSONWebKeySet) []string {
	var algs []string
	for _, k := range set.Keys {
		if !slices.Contains(algs, k.Algorithm) {
			algs = append(algs, k.Algorithm)
		}
	}
	slices.Sort(algs)
	return algs
}

func TestRegistration(t *testing.T) {
	h := newHarness(t, nil, testenv.WithConfig(func(c *services.Config) {
		c.SetLimit(core.LimitOAuthRegister, core.Rate{Interval: time.Hour, Burst: 2})
	}))
	meta := map[string]any{"client_name": "App", "redirect_uris": []string{"https://app.example/cb", "http://localhost:1234/cb", "http://[::1]:9/cb"}}
	b, _ := json.Marshal(meta)
	code, m := h.post(oauth.PathRegister, "application/json", string(b))
	if code != http.StatusCreated || m["client_name"] != "App" || !slices.Equal(strs(m["grant_types"]), []string{"authorization_code", "refresh_token"}) ||
		!slices.Equal(strs(m["response_types"]), []string{"code"}) || m["token_endpoint_auth_method"] != "none" || len(strs(m["redirect_uris"])) != 3 {
		t.Fatalf("register: %d %v", code, m)
	}
	// The limiter: two per address at once, then 429 with Retry-After.
	h.post(oauth.PathRegister, "application/json", string(b))
	resp, err := http.Post(h.base+oauth.PathRegister, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("third registration: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

func TestRegistrationErrors(t *testing.T) {
	h := newHarness(t, nil)
	for name, tc := range map[string]struct {
		meta map[string]any
		code string
	}{
		"http non-loopback":   {map[string]any{"redirect_uris": []string{"http://app.example/cb"}}, "invalid_redirect_uri"},
		"fragment":            {map[string]any{"redirect_uris": []string{"https://app.example/cb#x"}}, "invalid_redirect_uri"},
		"custom scheme":       {map[string]any{"redirect_uris": []string{"javascript://x/cb"}}, "invalid_redirect_uri"},
		"no redirect":         {map[string]any{"client_name": "x"}, "invalid_redirect_uri"},
		"unknown field":       {map[string]any{"redirect_uris": []string{redirectURI}, "jwks_uri": "https://x.example/jwks"}, "invalid_client_metadata"},
		"confidential client": {map[string]any{"redirect_uris": []string{redirectURI}, "token_endpoint_auth_method": "client_secret_basic"}, "invalid_client_metadata"},
		"client credentials":  {map[string]any{"redirect_uris": []string{redirectURI}, "grant_types": []string{"client_credentials"}}, "invalid_client_metadata"},
		"implicit":            {map[string]any{"redirect_uris": []string{redirectURI}, "response_types": []string{"token"}}, "invalid_client_metadata"},
		"unsafe logo":         {map[string]any{"redirect_uris": []string{redirectURI}, "logo_uri": "javascript:alert(1)"}, "invalid_client_metadata"},
		"unknown scope":       {map[string]any{"redirect_uris": []string{redirectURI}, "scope": "admin"}, "invalid_client_metadata"},
		"own client_id":       {map[string]any{"redirect_uris": []string{redirectURI}, "client_id": "mine"}, "invalid_client_metadata"},
	} {
		b, _ := json.Marshal(tc.meta)
		code, m := h.post(oauth.PathRegister, "application/json", string(b))
		wantOAuthError(t, name, code, m, http.StatusBadRequest, tc.code)
	}
	code, m := h.post(oauth.PathRegister, "application/json", "{not json")
	wantOAuthError(t, "malformed JSON", code, m, http.StatusBadRequest, "invalid_client_metadata")
	code, m = h.post(oauth.PathRegister, "text/plain", "{}")
	wantOAuthError(t, "wrong content type", code, m, http.StatusBadRequest, "invalid_client_metadata")
	code, m = h.post(oauth.PathRegister, "application/json", `{"redirect_uris":["`+strings.Repeat("a", 6000)+`"]}`)
	wantOAuthError(t, "oversized", code, m, http.StatusBadRequest, "invalid_client_metadata")
}

func TestAuthorizeErrors(t *testing.T) {
	h := newHarness(t, nil)
	clientID := h.registerDefault()
	cookie := h.cookie(h.env.OwnerA)
	base := func() url.Values {
		return url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirectURI}, "state": {"state-0123456789"},
			"scope": {"fax:read"}, "code_challenge": {oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier())},
			"code_challenge_method": {"S256"}, "resource": {h.mcp()}}
	}
	redirectsWith := func(what string, v url.Values, wantErr string) {
		t.Helper()
		code, loc, body := h.browse(h.base+oauth.PathAuthorize+"?"+v.Encode(), cookie)
		if code != http.StatusSeeOther || loc == nil || !strings.HasPrefix(loc.String(), redirectURI) {
			t.Fatalf("%s: %d %v %s, want a redirect to the client", what, code, loc, body)
		}
		if q := loc.Query(); q.Get("error") != wantErr || q.Get("iss") != h.srv.Issuer() || q.Get("state") != "state-0123456789" {
			t.Fatalf("%s: redirect %v, want error=%s with iss and state", what, q, wantErr)
		}
	}
	v := base()
	v.Set("code_challenge_method", "plain")
	v.Set("code_challenge", strings.Repeat("a", 43))
	redirectsWith("plain PKCE", v, "invalid_request")
	v = base()
	v.Del("code_challenge")
	v.Del("code_challenge_method")
	redirectsWith("missing PKCE", v, "invalid_request")
	v = base()
	v.Set("resource", "https://evil.example/mcp")
	redirectsWith("unknown resource", v, "invalid_target")
	v = base()
	v.Add("resource", h.base+"/a2a")
	redirectsWith("two resources", v, "invalid_target")
	v = base()
	v.Set("scope", "fax:read admin")
	redirectsWith("unknown scope", v, "invalid_scope")
	v = base()
	v.Set("response_type", "token")
	redirectsWith("implicit", v, "unsupported_response_type")

	// Never redirect to an unregistered URI or for an unknown client.
	for what, mod := range map[string]func(url.Values){
		"wrong redirect": func(v url.Values) { v.Set("redirect_uri", "https://evil.example/cb") },
		"unknown client": func(v url.Values) { v.Set("client_id", "oac_unknown") },
	} {
		v := base()
		mod(v)
		code, loc, body := h.browse(h.base+oauth.PathAuthorize+"?"+v.Encode(), cookie)
		if code != http.StatusBadRequest && code != http.StatusUnauthorized || loc != nil || !strings.Contains(body, `"error"`) {
			t.Fatalf("%s: %d %v %s, want a JSON error without redirect", what, code, loc, body)
		}
	}

	// A declined consent answers access_denied.
	a := h.authRequest(clientID, []string{"fax:read"})
	id, ret := h.consent(a, cookie)
	h.decide(h.env.OwnerA, id, false, nil)
	q := h.callback(ret, cookie)
	if q.Get("error") != "access_denied" || q.Get("iss") != h.srv.Issuer() || q.Get("code") != "" {
		t.Fatalf("declined: %v", q)
	}

	// Defaults and credits:checkout: without scope the read-only default;
	// credits:checkout only when named.
	a = h.authRequest(clientID, nil)
	id, _ = h.consent(a, cookie)
	ap, _ := h.env.Svc.Approvals.Get(context.Background(), h.env.OwnerA.ID, id)
	var d approvals.ConsentDetails
	_ = json.Unmarshal(ap.Details, &d)
	if !slices.Equal(d.Scopes, []string{"fax:read", "credits:read"}) {
		t.Fatalf("default scopes = %v", d.Scopes)
	}
	a = h.authRequest(clientID, []string{"fax:read", "credits:checkout"})
	tok := h.exchange(a, h.authorize(a, h.env.OwnerA, []string{"fax:read", "credits:checkout", "fax:send"}))
	p, err := h.srv.VerifyAccessToken(context.Background(), tok.AccessToken, h.mcp())
	if err != nil || !slices.Equal(p.Scopes, []core.Scope{core.ScopeFaxRead, core.ScopeCreditsCheckout}) {
		t.Fatalf("principal %v %v: a decision must never widen the request", p, err)
	}
	if tok.RefreshToken != "" {
		t.Fatal("refresh token issued without offline_access")
	}
}

func TestTokenErrors(t *testing.T) {
	h := newHarness(t, nil)
	clientID := h.registerDefault()
	for _, gt := range []string{"client_credentials", "password", "urn:ietf:params:oauth:grant-type:device_code"} {
		code, m := h.form(oauth.PathToken, url.Values{"grant_type": {gt}, "client_id": {clientID}})
		wantOAuthError(t, gt, code, m, http.StatusBadRequest, "unsupported_grant_type")
	}
	code, m := h.form(oauth.PathToken, url.Values{"client_id": {clientID}})
	wantOAuthError(t, "no grant type", code, m, http.StatusBadRequest, "invalid_request")

	a := h.authRequest(clientID, []string{"fax:read"})
	c := h.authorize(a, h.env.OwnerA, nil)
	exchange := func(verifier, resource, redirect string) (int, map[string]any) {
		v := url.Values{"grant_type": {"authorization_code"}, "code": {c}, "client_id": {clientID}, "redirect_uri": {redirect}, "code_verifier": {verifier}}
		if resource != "" {
			v.Set("resource", resource)
		}
		return h.form(oauth.PathToken, v)
	}
	code, m = exchange(oauth2.GenerateVerifier(), "", redirectURI)
	wantOAuthError(t, "wrong verifier", code, m, http.StatusBadRequest, "invalid_grant")

	a = h.authRequest(clientID, []string{"fax:read"})
	c = h.authorize(a, h.env.OwnerA, nil)
	code, m = exchange(a.verifier, h.base+"/a2a", redirectURI)
	wantOAuthError(t, "other resource", code, m, http.StatusBadRequest, "invalid_target")

	a = h.authRequest(clientID, []string{"fax:read"})
	c = h.authorize(a, h.env.OwnerA, nil)
	code, m = exchange(a.verifier, "", "http://127.0.0.1:1/other")
	wantOAuthError(t, "wrong redirect", code, m, http.StatusBadRequest, "invalid_grant")

	a = h.authRequest(clientID, []string{"fax:read"})
	c = h.authorize(a, h.env.OwnerA, nil)
	code, m = exchange(a.verifier, h.mcp(), redirectURI)
	if code != http.StatusOK {
		t.Fatalf("exchange: %d %v", code, m)
	}
	at := m["access_token"].(string)
	code, m = exchange(a.verifier, h.mcp(), redirectURI)
	wantOAuthError(t, "code reuse", code, m, http.StatusBadRequest, "invalid_grant")
	// Reusing a code revokes what it produced.
	h.wantInactive(at)

	// Another client cannot revoke the token: 200, and it stays active.
	other := h.registerDefault()
	a = h.authRequest(clientID, []string{"fax:read"})
	tok := h.exchange(a, h.authorize(a, h.env.OwnerA, nil))
	if code, m := h.form(oauth.PathRevoke, url.Values{"token": {tok.AccessToken}, "client_id": {other}}); code != http.StatusOK {
		t.Fatalf("revoke by another client: %d %v", code, m)
	}
	if _, err := h.srv.VerifyAccessToken(context.Background(), tok.AccessToken, h.mcp()); err != nil {
		t.Fatalf("another client revoked the token: %v", err)
	}

	code, m = h.form(oauth.PathRevoke, url.Values{})
	wantOAuthError(t, "revoke without token", code, m, http.StatusBadRequest, "invalid_request")
	h.wantInactive("")
	h.wantInactive("ory_at_garbage.garbage")
}

func TestMCPOAuthOff(t *testing.T) {
	h := newHarness(t, func(o *oauth.Options) { o.MCPOAuth = false })
	b, _ := json.Marshal(map[string]any{"redirect_uris": []string{redirectURI}})
	code, m := h.post(oauth.PathRegister, "application/json", string(b))
	wantOAuthError(t, "register", code, m, http.StatusForbidden, "access_denied")
	if !strings.Contains(m["error_description"].(string), "disabled") {
		t.Fatalf("description %q", m["error_description"])
	}
	code, _, body := h.browse(h.base+oauth.PathAuthorize+"?client_id=x&response_type=code", h.cookie(h.env.OwnerA))
	if code != http.StatusForbidden || !strings.Contains(body, "access_denied") || !strings.Contains(body, "disabled") {
		t.Fatalf("authorize: %d %s", code, body)
	}
	// Metadata stays up: clients learn where to go.
	var meta oauth.ASMetadata
	if resp := h.getJSON(h.base+oauth.PathASMetadataIssuer, &meta); resp.StatusCode != http.StatusOK {
		t.Fatal(resp.StatusCode)
	}
}

// docTransport serves client ID metadata documents from memory.
type docTransport map[string]string

func (d docTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	body, ok := d[r.URL.String()]
	status := http.StatusOK
	if !ok {
		status, body = http.StatusNotFound, "not found"
	}
	return &http.Response{StatusCode: status, Body: io.NopCloser(strings.NewReader(body)), Header: http.Header{}, Request: r}, nil
}

func TestClientMetadataDocument(t *testing.T) {
	const id = "https://app.example/oauth/client.json"
	const mismatched = "https://app.example/oauth/other.json"
	const big = "https://app.example/oauth/big.json"
	docs := docTransport{
		id:         `{"client_id":"` + id + `","client_name":"Doc App","redirect_uris":["` + redirectURI + `"],"token_endpoint_auth_method":"none"}`,
		mismatched: `{"client_id":"https://evil.example/x","redirect_uris":["` + redirectURI + `"]}`,
		big:        `{"client_id":"` + big + `","client_name":"` + strings.Repeat("x", 6000) + `","redirect_uris":["` + redirectURI + `"]}`,
	}
	h := newHarness(t, func(o *oauth.Options) { o.HTTPClient = &http.Client{Transport: docs} })
	a := h.authRequest(id, []string{"fax:read", "offline_access"})
	tok := h.exchange(a, h.authorize(a, h.env.OwnerA, nil))
	p, err := h.srv.VerifyAccessToken(context.Background(), tok.AccessToken, h.mcp())
	if err != nil || p.ClientID != id {
		t.Fatalf("principal %+v %v", p, err)
	}
	grants, _ := h.srv.ListGrants(context.Background(), h.env.OwnerA.ID)
	if len(grants) != 1 || grants[0].ClientName != "Doc App" {
		t.Fatalf("grants = %+v", grants)
	}
	for _, bad := range []string{mismatched, big, "https://app.example/missing.json", "https://app.example/"} {
		a := h.authRequest(bad, []string{"fax:read"})
		code, loc, body := h.browse(a.url, h.cookie(h.env.OwnerA))
		if code < 400 || loc != nil || !strings.Contains(body, "invalid_client") {
			t.Fatalf("%s: %d %v %s", bad, code, loc, body)
		}
	}
}

// TestMetadataDocumentSSRF checks the default fetcher refuses internal
// addresses after resolution.
func TestMetadataDocumentSSRF(t *testing.T) {
	internal := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the internal server was reached: %s", r.URL)
	}))
	defer internal.Close()
	h := newHarness(t, nil)
	for _, id := range []string{internal.URL + "/client.json", "https://localhost:1/client.json", "https://169.254.169.254/latest/meta-data"} {
		a := h.authRequest(id, []string{"fax:read"})
		code, loc, body := h.browse(a.url, h.cookie(h.env.OwnerA))
		if code < 400 || loc != nil || !strings.Contains(body, "invalid_client") {
			t.Fatalf("%s: %d %v %s", id, code, loc, body)
		}
	}
}

func TestKeyRotationAndStorage(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	var before jose.JSONWebKeySet
	h.getJSON(h.base+oauth.PathJWKS, &before)
	rotated, err := h.srv.RotateSigningKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var after jose.JSONWebKeySet
	h.getJSON(h.base+oauth.PathJWKS, &after)
	// Token EdDSA, token RS256, receipt EdDSA: three keys, three more.
	if len(before.Keys) != 3 || len(after.Keys) != 6 {
		t.Fatalf("JWKS has %d keys before and %d after rotation, want 3 and 6", len(before.Keys), len(after.Keys))
	}
	for _, k := range before.Keys {
		if len(after.Key(k.KeyID)) != 1 {
			t.Fatalf("old key %s not published after rotation", k.KeyID)
		}
	}
	// An id_token made right after is signed with the old RS256 key: the
	// new one is published first and signs from SignsFrom on
	// (TestKeyRotationOverlap follows a rotation through).
	clientID := h.registerDefault()
	a := h.authRequest(clientID, []string{"openid", "email"})
	tok := h.exchange(a, h.authorize(a, h.env.OwnerA, nil))
	parsed, err := josejwt.ParseSigned(tok.Extra("id_token").(string), []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		t.Fatal(err)
	}
	if kid := parsed.Headers[0].KeyID; len(before.Key(kid)) != 1 || kid == rotated[1].KeyID {
		t.Fatalf("id_token signed with %s right after the rotation, want the old key until %v", kid, rotated[1].SignsFrom)
	}

	// Nothing secret is stored in the clear: private keys are sealed and
	// tokens appear only as hashes of their signatures.
	db := h.env.DB.SQL()
	rows, err := db.QueryContext(ctx, "SELECT sealed_private FROM oauth_keys")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var sealed []byte
		if err := rows.Scan(&sealed); err != nil {
			t.Fatal(err)
		}
		// A sealed key starts with a random nonce, so its first bytes say
		// nothing; what must hold is that it does not parse as a key and
		// carries no published public key material in the clear (a private
		// key's encoding contains its public half).
		if _, err := x509.ParsePKCS8PrivateKey(sealed); err == nil {
			t.Fatal("a private key is stored as plain PKCS #8")
		}
		for _, k := range after.Keys {
			var pub []byte
			switch key := k.Key.(type) {
			case ed25519.PublicKey:
				pub = key
			case *rsa.PublicKey:
				pub = key.N.Bytes()
			}
			if len(pub) > 0 && (bytes.Contains(sealed, pub) || bytes.Contains(sealed, []byte(base64.RawURLEncoding.EncodeToString(pub)))) {
				t.Fatalf("a stored private key carries the public key of %s in the clear", k.KeyID)
			}
		}
	}
	rows.Close()
	_, sig, _ := strings.Cut(tok.AccessToken, ".")
	var dump strings.Builder
	rows, err = db.QueryContext(ctx, "SELECT signature, request FROM oauth_tokens")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		var req []byte
		if err := rows.Scan(&s, &req); err != nil {
			t.Fatal(err)
		}
		dump.WriteString(s)
		dump.Write(req)
	}
	rows.Close()
	if strings.Contains(dump.String(), sig) || strings.Contains(dump.String(), a.verifier) {
		t.Fatal("a token signature or PKCE verifier is stored in the clear")
	}
}

func TestExpiry(t *testing.T) {
	h := newHarness(t, func(o *oauth.Options) { o.AccessTokenLifespan = time.Second })
	ctx := context.Background()
	clientID := h.registerDefault()
	a := h.authRequest(clientID, []string{"fax:read", "offline_access"})
	tok := h.exchange(a, h.authorize(a, h.env.OwnerA, nil))
	if _, err := h.srv.VerifyAccessToken(ctx, tok.AccessToken, h.mcp()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2100 * time.Millisecond)
	h.wantInactive(tok.AccessToken)
	if _, err := h.srv.PurgeExpired(ctx); err != nil {
		t.Fatal(err)
	}
	// The refresh token outlives the access token and still works.
	code, m := h.form(oauth.PathToken, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}, "client_id": {clientID}})
	if code != http.StatusOK {
		t.Fatalf("refresh after expiry and purge: %d %v", code, m)
	}
	if _, err := oauth.New(h.env.Svc, h.env.DB, oauth.Options{BaseURL: h.base, AccessTokenLifespan: 2 * time.Hour}); err == nil {
		t.Fatal("an access token lifespan over one hour was accepted")
	}
}
