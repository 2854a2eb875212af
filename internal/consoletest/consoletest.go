// Package consoletest drives a whole faxhub as an account owner in a
// browser would, for the tests of the protocols that owner approves for:
// a console session (cookie), same-origin requests with the form token, a
// software passkey, passkey approvals, the chat-app OAuth flow and agent
// registration. It is test support, like internal/testenv and
// internal/passkeytest: no production code imports it.
package consoletest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/descope/virtualwebauthn"
	"golang.org/x/oauth2"

	"github.com/faxhub/faxhub/conformance/storetest"
	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/web"
	"github.com/faxhub/faxhub/internal/app"
	"github.com/faxhub/faxhub/internal/passkeytest"
	"github.com/faxhub/faxhub/internal/testenv"
	"github.com/faxhub/faxhub/oauth"
)

// RedirectURI is the loopback redirect URI of the OAuth client Token
// registers; nothing listens there, the code is read from the redirect.
const RedirectURI = "http://127.0.0.1:53682/callback"

// Site is a whole faxhub (internal/app's production wiring) served on a
// loopback listener.
type Site struct {
	App *app.App
	// Base is the listener as http://localhost:PORT: passkeys need a host
	// name, so the console is served here.
	Base string
	// RP is the relying party a passkey of Base is made for.
	RP virtualwebauthn.RelyingParty
}

// Start opens the faxhub that options describes and serves it on a fresh
// loopback listener until t ends. options is given the listener's two
// origins: base (http://localhost:PORT) and loopback
// (http://127.0.0.1:PORT), a second origin on the same server.
func Start(t testing.TB, options func(base, loopback string) app.Options) *Site {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	base := fmt.Sprintf("http://localhost:%d", port)
	a, err := app.Open(t.Context(), options(base, fmt.Sprintf("http://127.0.0.1:%d", port)))
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	srv := httptest.NewUnstartedServer(a.Handler())
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return &Site{App: a, Base: base, RP: virtualwebauthn.RelyingParty{ID: "localhost", Name: "faxhub", Origin: base}}
}

// Database is app.Options.Database for a test: "" (SQLite in the data
// directory) or, with FAXHUB_TESTENV_POSTGRES set, a fresh PostgreSQL
// schema of its own.
func Database(t testing.TB) string {
	t.Helper()
	if pg := os.Getenv(testenv.EnvPostgres); pg != "" {
		return storetest.OpenPostgresSchema(t, pg)
	}
	return ""
}

// Logger writes warnings and errors to t's log, so a failing test shows
// what the server complained about.
func Logger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testLog struct{ t testing.TB }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

// Owner is an account with a console session. Its Client carries the
// session cookie and shows redirects instead of following them.
type Owner struct {
	Account *accounts.Owner
	Client  *http.Client
	// Device is the passkey AddPasskey registered (nil before).
	Device *passkeytest.Device
	// ClientName is the client_name of the OAuth client Token registers.
	ClientName string

	site   *Site
	cookie string
}

// Owner creates an account for email, verified, with a console session
// whose cookie is sent to Base and to every origin in alsoAt.
func (s *Site) Owner(t testing.TB, email string, alsoAt ...string) *Owner {
	t.Helper()
	o, err := s.App.Svc.Accounts.CreateOwner(t.Context(), email, "Owner", true)
	if err != nil {
		t.Fatalf("create owner %s: %v", email, err)
	}
	secret, _, err := s.App.Svc.Accounts.CreateSession(t.Context(), o.ID, "test")
	if err != nil {
		t.Fatalf("create session for %s: %v", email, err)
	}
	jar, _ := cookiejar.New(nil)
	for _, origin := range append([]string{s.Base}, alsoAt...) {
		u, err := url.Parse(origin)
		if err != nil {
			t.Fatalf("cookie origin %q: %v", origin, err)
		}
		jar.SetCookies(u, []*http.Cookie{{Name: web.SessionCookieName, Value: secret, Path: "/"}})
	}
	return &Owner{Account: o, ClientName: "Test Agent", site: s,
		cookie: web.SessionCookieName + "=" + secret,
		Client: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// Cookie is the session as a Cookie header value, for a request made
// without Client.
func (w *Owner) Cookie() string { return w.cookie }

// Reply is a whole response.
type Reply struct {
	Status int
	Header http.Header
	Body   string
}

// Do sends a request with the owner's session; a path target is on Base.
// Anything but a GET carries Base's Origin and Sec-Fetch-Site:
// same-origin, as a browser's console form or fetch does.
func (w *Owner) Do(t testing.TB, method, target string, body io.Reader, contentType string, extra http.Header) Reply {
	t.Helper()
	if strings.HasPrefix(target, "/") {
		target = w.site.Base + target
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	if method != http.MethodGet {
		req.Header.Set("Origin", w.site.Base)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range extra {
		req.Header[k] = v
	}
	res, err := w.Client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return Reply{Status: res.StatusCode, Header: res.Header, Body: string(b)}
}

// PostJSON posts v as JSON, with the form token csrf unless it is "".
func (w *Owner) PostJSON(t testing.TB, path string, v any, csrf string) Reply {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode %s body: %v", path, err)
	}
	h := http.Header{}
	if csrf != "" {
		h.Set("X-CSRF-Token", csrf)
	}
	return w.Do(t, http.MethodPost, path, bytes.NewReader(raw), "application/json", h)
}

// Form posts v as an HTML form would.
func (w *Owner) Form(t testing.TB, path string, v url.Values) Reply {
	t.Helper()
	return w.Do(t, http.MethodPost, path, strings.NewReader(v.Encode()), "application/x-www-form-urlencoded", nil)
}

var csrfMeta = regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)">`)

// CSRF is the console's form token, read from the account page as the
// console's scripts read it.
func (w *Owner) CSRF(t testing.TB) string {
	t.Helper()
	r := w.Do(t, http.MethodGet, "/console/account", nil, "", nil)
	m := csrfMeta.FindStringSubmatch(r.Body)
	if r.Status != 200 || m == nil {
		t.Fatalf("no form token (status %d)", r.Status)
	}
	return html.UnescapeString(m[1])
}

// AddPasskey registers a software passkey on the account through the
// console's endpoints and keeps it as Device.
func (w *Owner) AddPasskey(t testing.TB) {
	t.Helper()
	csrf := w.CSRF(t)
	d := passkeytest.NewDevice()
	opts := w.PostJSON(t, "/console/account/passkeys/begin", map[string]any{"name": "Laptop"}, csrf)
	if opts.Status != 200 {
		t.Fatalf("passkey begin: %d %s", opts.Status, opts.Body)
	}
	ao, err := virtualwebauthn.ParseAttestationOptions(opts.Body)
	if err != nil {
		t.Fatalf("attestation options: %v", err)
	}
	att := virtualwebauthn.CreateAttestationResponse(w.site.RP, d.Auth, d.Cred, *ao)
	r := w.PostJSON(t, "/console/account/passkeys/finish", map[string]any{"name": "Laptop", "credential": json.RawMessage(att)}, csrf)
	if r.Status != 200 {
		t.Fatalf("passkey finish: %d %s", r.Status, r.Body)
	}
	d.Auth.AddCredential(d.Cred)
	d.Auth.Options.UserHandle = []byte(ao.UserID)
	w.Device = d
}

// Approve answers an approval with the owner's passkey through the
// console's endpoints; approval is its id or its URL (the id is the last
// path segment). uv false makes the authenticator skip user verification.
// A refused begin is returned as it is; a finish, whatever it says.
func (w *Owner) Approve(t testing.TB, approval string, uv bool) Reply {
	t.Helper()
	if w.Device == nil {
		t.Fatal("approve: the owner has no passkey (AddPasskey first)")
	}
	id := approval[strings.LastIndex(approval, "/")+1:]
	apr, err := w.site.App.Svc.Approvals.Get(t.Context(), w.Account.ID, id)
	if err != nil {
		t.Fatalf("approval %s: %v", id, err)
	}
	csrf := w.CSRF(t)
	opts := w.PostJSON(t, "/console/approvals/"+id+"/passkey/begin", map[string]any{"binding": apr.BindingHash}, csrf)
	if opts.Status != 200 {
		return opts
	}
	ao, err := virtualwebauthn.ParseAssertionOptions(opts.Body)
	if err != nil {
		t.Fatalf("assertion options: %v\n%s", err, opts.Body)
	}
	w.Device.Auth.Options.UserNotVerified = !uv
	defer func() { w.Device.Auth.Options.UserNotVerified = false }()
	as := virtualwebauthn.CreateAssertionResponse(w.site.RP, w.Device.Auth, w.Device.Cred, *ao)
	return w.PostJSON(t, "/console/approvals/"+id+"/passkey/finish", map[string]any{"credential": json.RawMessage(as)}, csrf)
}

// Token runs the chat-app OAuth flow for resource and returns the access
// token: dynamic client registration, authorize with PKCE in the owner's
// session, consent decided in core as the console does, the return to
// authorize, and the code exchange.
func (w *Owner) Token(t testing.TB, scopes []string, resource string) string {
	t.Helper()
	base := w.site.Base
	meta, _ := json.Marshal(map[string]any{"client_name": w.ClientName, "redirect_uris": []string{RedirectURI},
		"grant_types": []string{"authorization_code", "refresh_token"}, "token_endpoint_auth_method": "none"})
	resp, err := http.Post(base+oauth.PathRegister, "application/json", bytes.NewReader(meta))
	if err != nil {
		t.Fatalf("register client: %v", err)
	}
	var reg map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&reg)
	resp.Body.Close()
	clientID, _ := reg["client_id"].(string)
	if clientID == "" {
		t.Fatalf("register: %d %v", resp.StatusCode, reg)
	}
	cfg := &oauth2.Config{ClientID: clientID, RedirectURL: RedirectURI, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: base + oauth.PathAuthorize, TokenURL: base + oauth.PathToken, AuthStyle: oauth2.AuthStyleInParams}}
	return w.Grant(t, cfg, resource).AccessToken
}

// Grant runs the authorization-code flow of the registered client cfg
// for resource in the owner's session: authorize with PKCE, consent
// decided in core as the console does, the return to authorize, and the
// code exchange; it returns the tokens (a refresh token when cfg asks for
// offline_access).
func (w *Owner) Grant(t testing.TB, cfg *oauth2.Config, resource string) *oauth2.Token {
	t.Helper()
	ctx, svc := t.Context(), w.site.App.Svc
	v := oauth2.GenerateVerifier()
	authURL := cfg.AuthCodeURL("state-"+core.RandomString(8), oauth2.S256ChallengeOption(v), oauth2.SetAuthURLParam("resource", resource))
	r := w.Do(t, http.MethodGet, authURL, nil, "", nil)
	loc, _ := url.Parse(r.Header.Get("Location"))
	if r.Status != http.StatusSeeOther || loc == nil || !strings.HasPrefix(loc.Path, "/console/approvals/") {
		t.Fatalf("authorize: %d %v %s", r.Status, loc, r.Body)
	}
	id := strings.TrimPrefix(loc.Path, "/console/approvals/")
	ret := loc.Query().Get("return")
	apr, err := svc.Approvals.Get(ctx, w.Account.ID, id)
	if err != nil {
		t.Fatalf("consent approval %s: %v", id, err)
	}
	if _, err := svc.Approvals.Decide(ctx, w.Account.ID, id, approvals.Decision{Approve: true, BindingHash: apr.BindingHash}); err != nil {
		t.Fatalf("consent: %v", err)
	}
	r = w.Do(t, http.MethodGet, ret, nil, "", nil)
	loc, _ = url.Parse(r.Header.Get("Location"))
	if r.Status != http.StatusSeeOther || loc == nil || loc.Query().Get("code") == "" {
		t.Fatalf("resume: %d %v %s", r.Status, loc, r.Body)
	}
	tok, err := cfg.Exchange(ctx, loc.Query().Get("code"), oauth2.VerifierOption(v), oauth2.SetAuthURLParam("resource", resource))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	return tok
}

// AgentToken registers an agent (service_auth with an enrollment token
// the owner made), approves its claim in core as the console does and
// returns the token the claim grants for resource.
func (w *Owner) AgentToken(t testing.TB, scopes []string, resource string) string {
	t.Helper()
	ctx, svc, base := t.Context(), w.site.App.Svc, w.site.Base
	secret, err := svc.Agents.CreateEnrollment(ctx, w.Account.ID, "A2A bot", scopes)
	if err != nil {
		t.Fatalf("agent enrollment: %v", err)
	}
	post := func(path, ct, body string) (int, string) {
		resp, err := http.Post(base+path, ct, strings.NewReader(body))
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := post(oauth.PathAgentIdentity, "application/json",
		`{"type":"service_auth","enrollment_token":"`+secret.EnrollmentToken+`","login_hint":"`+w.Account.Email+`"}`)
	if code != http.StatusCreated {
		t.Fatalf("register agent: %d %s", code, body)
	}
	var reg struct {
		ClaimToken string `json:"claim_token"`
		Claim      struct {
			UserCode        string `json:"user_code"`
			VerificationURI string `json:"verification_uri"`
		} `json:"claim"`
	}
	_ = json.Unmarshal([]byte(body), &reg)
	_, attempt, _ := strings.Cut(reg.Claim.VerificationURI, core.LinkClaimPage.PathPrefix())
	if err := svc.Agents.DecideClaim(ctx, w.Account.ID, attempt, reg.Claim.UserCode, true, scopes); err != nil {
		t.Fatalf("approve agent claim: %v", err)
	}
	code, body = post(oauth.PathToken, "application/x-www-form-urlencoded", url.Values{"grant_type": {oauth.GrantTypeAgentClaim},
		"claim_token": {reg.ClaimToken}, "resource": {resource}}.Encode())
	if code != 200 {
		t.Fatalf("claim token: %d %s", code, body)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	_ = json.Unmarshal([]byte(body), &tok)
	return tok.AccessToken
}
