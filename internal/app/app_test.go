package app_test

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
	"slices"
	"strings"
	"testing"

	"github.com/descope/virtualwebauthn"
	"golang.org/x/oauth2"

	"github.com/faxhub/faxhub/conformance/storetest"
	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/internal/app"
	"github.com/faxhub/faxhub/internal/passkeytest"
	"github.com/faxhub/faxhub/internal/testenv"
	"github.com/faxhub/faxhub/oauth"
)

// e2e is the whole process (app.Open + Handler) served over real HTTP on
// http://localhost:<port> (WebAuthn refuses IP addresses as RP IDs).
type e2e struct {
	t    *testing.T
	a    *app.App
	base string
	rp   virtualwebauthn.RelyingParty
}

func newE2E(t *testing.T, opts ...func(*app.Options)) *e2e {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	base := fmt.Sprintf("http://localhost:%d", port)
	dsn := ""
	if pg := os.Getenv(testenv.EnvPostgres); pg != "" {
		dsn = storetest.OpenPostgresSchema(t, pg)
	}
	log := slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	o := app.Options{
		BaseURL: base, DataDir: testenv.DataDirFor(t, dsn), Database: dsn,
		Dev: true, MCPOAuth: true, SimTimeScale: 0, InsertOnly: true, Logger: log,
	}
	for _, f := range opts {
		f(&o)
	}
	a, err := app.Open(t.Context(), o)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if err := a.Console.Err(); err != nil {
		t.Fatalf("console disabled: %v", err)
	}
	srv := httptest.NewUnstartedServer(a.Handler())
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return &e2e{t: t, a: a, base: base, rp: virtualwebauthn.RelyingParty{ID: "localhost", Name: "faxhub", Origin: base}}
}

type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

// browser is one cookie jar; it never follows redirects on its own, so
// every hop is checked. Unsafe requests carry the headers a browser sends
// for a same-origin form post.
type browser struct {
	e *e2e
	c *http.Client
}

func (e *e2e) browser() *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return &browser{e: e, c: &http.Client{
		Jar:           jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

type reply struct {
	status int
	header http.Header
	body   string
}

func (r reply) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(r.body), &m); err != nil {
		t.Fatalf("not JSON (%d): %s", r.status, r.body)
	}
	return m
}

func (r reply) location(t *testing.T) *url.URL {
	t.Helper()
	l := r.header.Get("Location")
	if l == "" {
		t.Fatalf("no Location (%d): %s", r.status, r.body)
	}
	u, err := url.Parse(l)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func (b *browser) do(method, target string, body io.Reader, ct string, extra http.Header) reply {
	b.e.t.Helper()
	if strings.HasPrefix(target, "/") {
		target = b.e.base + target
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		b.e.t.Fatal(err)
	}
	if method != http.MethodGet && method != http.MethodHead {
		req.Header.Set("Origin", b.e.base)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	for k, v := range extra {
		req.Header[k] = v
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	res, err := b.c.Do(req)
	if err != nil {
		b.e.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return reply{status: res.StatusCode, header: res.Header, body: string(data)}
}

func (b *browser) get(target string) reply { return b.do(http.MethodGet, target, nil, "", nil) }

func (b *browser) form(path string, v url.Values) reply {
	return b.do(http.MethodPost, path, strings.NewReader(v.Encode()), "application/x-www-form-urlencoded", nil)
}

func (b *browser) postJSON(path string, v any, csrf string) reply {
	raw, err := json.Marshal(v)
	if err != nil {
		b.e.t.Fatal(err)
	}
	hdr := http.Header{}
	if csrf != "" {
		hdr.Set("X-CSRF-Token", csrf)
	}
	return b.do(http.MethodPost, path, bytes.NewReader(raw), "application/json", hdr)
}

var csrfMeta = regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)">`)

// csrfOf reads the form token from a page.
func csrfOf(t *testing.T, r reply) string {
	t.Helper()
	m := csrfMeta.FindStringSubmatch(r.body)
	if m == nil {
		t.Fatalf("no form token on the page (status %d)", r.status)
	}
	return html.UnescapeString(m[1])
}

// device is a software authenticator holding one passkey.
type device = passkeytest.Device

func newDevice() *device { return passkeytest.NewDevice() }

// register runs a registration ceremony on begin/finish.
func (b *browser) register(d *device, begin, finish string, extra map[string]any, csrf string) reply {
	t := b.e.t
	t.Helper()
	opts := b.postJSON(begin, extra, csrf)
	if opts.status != 200 {
		return opts
	}
	if !strings.Contains(opts.body, `"residentKey":"required"`) || !strings.Contains(opts.body, `"userVerification":"required"`) {
		t.Fatalf("registration does not require a resident key and user verification: %s", opts.body)
	}
	ao, err := virtualwebauthn.ParseAttestationOptions(opts.body)
	if err != nil {
		t.Fatalf("parse attestation options: %v\n%s", err, opts.body)
	}
	att := virtualwebauthn.CreateAttestationResponse(b.e.rp, d.Auth, d.Cred, *ao)
	body := map[string]any{"credential": json.RawMessage(att)}
	for k, v := range extra {
		body[k] = v
	}
	r := b.postJSON(finish, body, csrf)
	if r.status == 200 {
		d.Auth.AddCredential(d.Cred)
		d.Auth.Options.UserHandle = []byte(ao.UserID)
	}
	return r
}

// signIn runs the discoverable sign-in ceremony: no username is sent.
func (b *browser) signIn(d *device) reply {
	t := b.e.t
	t.Helper()
	opts := b.postJSON("/signin/begin", nil, "")
	if opts.status != 200 {
		return opts
	}
	if !strings.Contains(opts.body, `"userVerification":"required"`) {
		t.Fatalf("sign-in options do not require user verification: %s", opts.body)
	}
	if strings.Contains(opts.body, `"allowCredentials":[{`) {
		t.Fatalf("sign-in is not discoverable (credentials listed): %s", opts.body)
	}
	ao, err := virtualwebauthn.ParseAssertionOptions(opts.body)
	if err != nil {
		t.Fatalf("parse assertion options: %v\n%s", err, opts.body)
	}
	a := virtualwebauthn.CreateAssertionResponse(b.e.rp, d.Auth, d.Cred, *ao)
	return b.postJSON("/signin/finish", map[string]any{"credential": json.RawMessage(a)}, "")
}

// signUp creates an account through the pages and the dev mailbox and
// returns the signed-in browser and its device.
func (e *e2e) signUp(email, name string) (*browser, *device) {
	t := e.t
	t.Helper()
	b := e.browser()
	wantStatus(t, "sign-up page", b.get("/signup"), 200)
	r := b.form("/signup", url.Values{"email": {email}, "name": {name}})
	if r.status != 200 || !strings.Contains(r.body, "Check your email") {
		t.Fatalf("sign-up: %d %s", r.status, r.body)
	}
	// The dev mailbox page (public, Dev only) shows the link.
	mb := b.get("/console/mailbox")
	wantStatus(t, "dev mailbox", mb, 200)
	linkRe := regexp.MustCompile(`<a href="` + regexp.QuoteMeta(e.base) + `(/verify\?token=[^"]+)">`)
	var link string
	// Mails are listed newest first or last; take the one to this address.
	for _, card := range strings.Split(mb.body, `<li class="card">`) {
		if strings.Contains(card, "To "+html.EscapeString(strings.ToLower(email))) {
			if m := linkRe.FindStringSubmatch(card); m != nil {
				link = html.UnescapeString(m[1])
			}
		}
	}
	if link == "" {
		t.Fatalf("no verification link for %s in the dev mailbox:\n%s", email, mb.body)
	}
	lu, _ := url.Parse(link)
	token := lu.Query().Get("token")
	if r := b.get(link); r.status != 200 || !strings.Contains(r.body, "Create passkey") {
		t.Fatalf("verify page: %d %s", r.status, r.body)
	}
	d := newDevice()
	r = b.register(d, "/verify/begin", "/verify/finish", map[string]any{"token": token, "name": "Laptop"}, "")
	if r.status != 200 || r.json(t)["redirect"] != "/console" {
		t.Fatalf("verify finish: %d %s", r.status, r.body)
	}
	return b, d
}

func wantStatus(t *testing.T, what string, r reply, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: status %d, want %d\n%s", what, r.status, status, r.body)
	}
}

// wantSignedInAs checks the browser's session is the owner's: the
// dashboard answers and the account page names the (verified) email. The
// dashboard itself does not show who is signed in.
func (b *browser) wantSignedInAs(email string) {
	t := b.e.t
	t.Helper()
	r := b.get("/console")
	wantStatus(t, "dashboard", r, 200)
	if !strings.Contains(r.body, "<h1>Dashboard</h1>") {
		t.Fatalf("not the dashboard:\n%s", r.body)
	}
	r = b.get("/console/account")
	wantStatus(t, "account page", r, 200)
	if !strings.Contains(r.body, "<dd>"+email+" <span class=\"tag ok\">verified</span>") {
		t.Fatalf("account page does not show the verified %s:\n%s", email, r.body)
	}
}

func (e *e2e) ownerID(email string) string {
	e.t.Helper()
	o, err := e.a.Svc.Accounts.OwnerByEmail(e.t.Context(), email)
	if err != nil {
		e.t.Fatal(err)
	}
	return o.ID
}

// postForm is a client-side (non-browser) form POST decoding a JSON answer.
func postForm(t *testing.T, target string, v url.Values) (int, map[string]any) {
	t.Helper()
	resp, err := http.PostForm(target, v)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("POST %s: %d %s: not JSON", target, resp.StatusCode, raw)
		}
	}
	return resp.StatusCode, m
}

func getJSON(t *testing.T, target string, v any) {
	t.Helper()
	resp, err := http.Get(target)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		raw, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %s", target, resp.StatusCode, raw)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("decode %s: %v", target, err)
	}
}

const redirectURI = "http://127.0.0.1:53682/callback"

// TestOwnerAndChatAppEndToEnd drives the production wiring the way a new
// owner and a spec-following chat app do: console sign-up with a passkey,
// sign-in, an API key, and the OAuth flow for the MCP resource with the
// owner's consent given in the console.
func TestOwnerAndChatAppEndToEnd(t *testing.T) {
	e := newE2E(t)
	ctx := t.Context()
	const email = "ada@example.com"

	// 1. Sign-up → mail → link → passkey → signed in.
	owner, dev := e.signUp("Ada@Example.com", "Ada Lovelace")
	r := owner.get("/console")
	wantStatus(t, "dashboard", r, 200)
	owner.wantSignedInAs(email)
	ownerID := e.ownerID(email)

	// 2. Sign out; sign in again with the discoverable passkey.
	r = owner.form("/signout", url.Values{"csrf": {csrfOf(t, r)}})
	wantStatus(t, "sign out", r, http.StatusSeeOther)
	r = owner.get("/console")
	wantStatus(t, "console after sign-out", r, http.StatusSeeOther)
	if loc := r.location(t); loc.Path != "/signin" {
		t.Fatalf("signed-out console goes to %s", loc)
	}
	wantStatus(t, "sign-in page", owner.get("/signin"), 200)
	r = owner.signIn(dev)
	wantStatus(t, "sign in", r, 200)
	if r.json(t)["redirect"] != "/console" {
		t.Fatalf("sign-in redirect: %s", r.body)
	}
	wantStatus(t, "dashboard after sign-in", owner.get("/console"), 200)
	owner.wantSignedInAs(email)

	// 3. A test API key, shown once, works on the API.
	keysPage := owner.get("/console/keys")
	wantStatus(t, "keys page", keysPage, 200)
	r = owner.form("/console/keys", url.Values{"csrf": {csrfOf(t, keysPage)}, "mode": {"test"}, "name": {"e2e"}})
	wantStatus(t, "create key", r, 200)
	km := regexp.MustCompile(`value="(fxk_test_[A-Za-z0-9_]+)"`).FindStringSubmatch(r.body)
	if km == nil {
		t.Fatalf("the new key is not shown:\n%s", r.body)
	}
	apiKey := km[1]
	if strings.Contains(owner.get("/console/keys").body, apiKey) {
		t.Fatal("the keys page shows the secret again")
	}
	req, _ := http.NewRequest(http.MethodGet, e.base+"/api/v1/credits", nil)
	req.Header.Set("Authorization", "Bearer "+apiKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /api/v1/credits with the new key: %d %s", resp.StatusCode, raw)
	}

	// 4. A standard OAuth client. /mcp is not served yet: start from the
	// protected resource metadata.
	mcp := e.base + "/mcp"
	var prm oauth.ProtectedResourceMetadata
	getJSON(t, e.base+"/.well-known/oauth-protected-resource/mcp", &prm)
	if prm.Resource != mcp || len(prm.AuthorizationServers) != 1 {
		t.Fatalf("PRM = %+v", prm)
	}
	issuer := prm.AuthorizationServers[0]
	if issuer != e.base+"/api/auth" {
		t.Fatalf("issuer %q", issuer)
	}
	iu, _ := url.Parse(issuer)
	var meta oauth.ASMetadata
	getJSON(t, iu.Scheme+"://"+iu.Host+"/.well-known/oauth-authorization-server"+iu.Path, &meta)
	if meta.Issuer != issuer {
		t.Fatalf("metadata issuer %q, want exactly %q", meta.Issuer, issuer)
	}
	var rootMeta oauth.ASMetadata
	getJSON(t, e.base+"/.well-known/oauth-authorization-server", &rootMeta)
	if rootMeta.Issuer != issuer || rootMeta.TokenEndpoint != meta.TokenEndpoint {
		t.Fatalf("origin metadata %+v differs from the path-inserted one %+v", rootMeta, meta)
	}
	if !slices.Equal(meta.CodeChallengeMethodsSupported, []string{"S256"}) || meta.RegistrationEndpoint == "" || meta.RevocationEndpoint == "" {
		t.Fatalf("metadata = %+v", meta)
	}

	regBody, _ := json.Marshal(map[string]any{"client_name": "E2E Chat", "redirect_uris": []string{redirectURI},
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"}, "token_endpoint_auth_method": "none"})
	resp, err = http.Post(meta.RegistrationEndpoint, "application/json", bytes.NewReader(regBody))
	if err != nil {
		t.Fatal(err)
	}
	var reg map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&reg)
	resp.Body.Close()
	clientID, _ := reg["client_id"].(string)
	if resp.StatusCode != http.StatusCreated || clientID == "" || reg["token_endpoint_auth_method"] != "none" {
		t.Fatalf("register: %d %v", resp.StatusCode, reg)
	}

	requested := []string{"fax:read", "credits:read", "offline_access"}
	cfg := &oauth2.Config{
		ClientID: clientID, RedirectURL: redirectURI, Scopes: requested,
		Endpoint: oauth2.Endpoint{AuthURL: meta.AuthorizationEndpoint, TokenURL: meta.TokenEndpoint, AuthStyle: oauth2.AuthStyleInParams},
	}

	// authorize runs the owner side in the owner's browser and returns the
	// code, checking every hop; narrow is the scope the owner unticks.
	// With a signed-out browser (dev != nil), the owner signs in on the
	// way, as the sign-in page's script does with its next parameter.
	authorizeIn := func(owner *browser, dev *device, narrow string) (code, verifier, approvalPath string) {
		t.Helper()
		verifier = oauth2.GenerateVerifier()
		state := "state-" + core.RandomString(12)
		authURL := cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", mcp))
		r := owner.get(authURL)
		wantStatus(t, "authorize", r, http.StatusSeeOther)
		loc := r.location(t)
		if dev != nil {
			au, _ := url.Parse(authURL)
			next := loc.Query().Get("next")
			if loc.Path != "/signin" || next != au.RequestURI() {
				t.Fatalf("signed-out authorize redirects to %s, want /signin?next=%s", loc, au.RequestURI())
			}
			page := owner.get(loc.String())
			wantStatus(t, "sign-in page with next", page, 200)
			if m := regexp.MustCompile(`data-next="([^"]*)"`).FindStringSubmatch(page.body); m == nil || html.UnescapeString(m[1]) != next {
				t.Fatalf("sign-in page does not carry next %q:\n%s", next, page.body)
			}
			opts := owner.postJSON("/signin/begin", nil, "")
			wantStatus(t, "sign-in begin", opts, 200)
			ao, err := virtualwebauthn.ParseAssertionOptions(opts.body)
			if err != nil {
				t.Fatal(err)
			}
			as := virtualwebauthn.CreateAssertionResponse(e.rp, dev.Auth, dev.Cred, *ao)
			fin := owner.postJSON("/signin/finish", map[string]any{"credential": json.RawMessage(as), "next": next}, "")
			wantStatus(t, "sign-in finish", fin, 200)
			if got := fin.json(t)["redirect"]; got != next {
				t.Fatalf("sign-in sends the browser to %v, want back to %s", got, next)
			}
			r = owner.get(next)
			wantStatus(t, "authorize after sign-in", r, http.StatusSeeOther)
			loc = r.location(t)
		}
		if loc.IsAbs() && loc.Host != iu.Host || !strings.HasPrefix(loc.Path, "/console/approvals/") {
			t.Fatalf("authorize redirects to %s, want the consent page", loc)
		}
		ret := loc.Query().Get("return")
		if !strings.HasPrefix(ret, oauth.PathAuthorizeResume+"?") {
			t.Fatalf("consent return = %q", ret)
		}
		approvalPath = loc.Path
		page := owner.get(loc.String())
		wantStatus(t, "consent page", page, 200)
		for _, want := range []string{"E2E Chat", mcp, "127.0.0.1",
			`name="scope" value="fax:read" checked`, `name="scope" value="credits:read" checked`, `name="scope" value="offline_access" checked`} {
			if !strings.Contains(page.body, want) {
				t.Fatalf("consent page lacks %q:\n%s", want, page.body)
			}
		}
		form := url.Values{"csrf": {csrfOf(t, page)}, "decision": {"approve"}, "return": {ret}}
		for _, name := range []string{"binding"} {
			m := regexp.MustCompile(`name="` + name + `" value="([^"]*)"`).FindStringSubmatch(page.body)
			if m == nil {
				t.Fatalf("consent form lacks %s", name)
			}
			form.Set(name, html.UnescapeString(m[1]))
		}
		if m := regexp.MustCompile(`name="return" value="([^"]*)"`).FindStringSubmatch(page.body); m == nil || html.UnescapeString(m[1]) != ret {
			t.Fatalf("consent form return = %v, want %q", m, ret)
		}
		for _, s := range requested {
			if s != narrow {
				form.Add("scope", s)
			}
		}
		action := regexp.MustCompile(`<form method="post" action="(/console/approvals/[^"]+)" class="decision"`).FindStringSubmatch(page.body)
		if action == nil || action[1] != approvalPath {
			t.Fatalf("consent form action %v, want %s", action, approvalPath)
		}
		r = owner.form(action[1], form)
		wantStatus(t, "approve consent", r, http.StatusSeeOther)
		if got := r.header.Get("Location"); got != ret {
			t.Fatalf("after consent: redirect to %q, want %q", got, ret)
		}
		r = owner.get(ret)
		wantStatus(t, "resume", r, http.StatusSeeOther)
		cb := r.location(t)
		if !strings.HasPrefix(cb.String(), redirectURI+"?") {
			t.Fatalf("resume redirects to %s, want the client", cb)
		}
		q := cb.Query()
		if q.Get("code") == "" || q.Get("state") != state || q.Get("iss") != issuer {
			t.Fatalf("callback = %v", q)
		}
		return q.Get("code"), verifier, approvalPath
	}
	authorize := func(narrow string) (string, string, string) {
		t.Helper()
		return authorizeIn(owner, nil, narrow)
	}
	exchange := func(code, verifier string) *oauth2.Token {
		t.Helper()
		tok, err := cfg.Exchange(ctx, code, oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", mcp))
		if err != nil {
			t.Fatalf("exchange: %v", err)
		}
		return tok
	}
	refresh := func(rt string) (int, map[string]any) {
		t.Helper()
		return postForm(t, meta.TokenEndpoint, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {clientID}})
	}
	wantInactive := func(what, tok string) {
		t.Helper()
		_, err := e.a.OAuth.VerifyAccessToken(ctx, tok, mcp)
		if core.ErrorCode(err) != core.CodeInvalidToken {
			t.Fatalf("%s: VerifyAccessToken = %v, want invalid_token", what, err)
		}
	}
	wantRefused := func(what, rt string) {
		t.Helper()
		code, m := refresh(rt)
		if code != http.StatusBadRequest || m["error"] != "invalid_grant" {
			t.Fatalf("%s: %d %v, want 400 invalid_grant", what, code, m)
		}
	}

	code, verifier, approvalPath := authorize("credits:read")
	tok := exchange(code, verifier)
	if tok.AccessToken == "" || tok.RefreshToken == "" {
		t.Fatalf("token = %+v", tok)
	}
	if got := strings.Fields(fmt.Sprint(tok.Extra("scope"))); !sameSet(got, []string{"fax:read", "offline_access"}) {
		t.Fatalf("granted scope %v, want narrowed to fax:read offline_access", got)
	}
	p, err := e.a.OAuth.VerifyAccessToken(ctx, tok.AccessToken, mcp)
	if err != nil {
		t.Fatalf("VerifyAccessToken: %v", err)
	}
	if p.OwnerID != ownerID || !slices.Equal(p.Scopes, []core.Scope{core.ScopeFaxRead}) || p.ClientID != clientID || p.Audience != mcp {
		t.Fatalf("principal = %+v, want owner %s, scopes [fax:read], client %s, audience %s", p, ownerID, clientID, mcp)
	}
	if _, err := e.a.OAuth.VerifyAccessToken(ctx, tok.AccessToken, e.base+"/a2a"); err == nil {
		t.Fatal("the MCP token is accepted for the A2A resource")
	}
	// Nor by the REST API, whose 401 names its own resource metadata.
	req, _ = http.NewRequest(http.MethodGet, e.base+"/api/v1/faxes", nil)
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if ch := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized ||
		!strings.Contains(ch, `resource_metadata="`+e.base+oauth.PathProtectedResourceAPI+`"`) || !strings.Contains(string(raw), core.CodeInvalidToken) {
		t.Fatalf("the MCP token on /api/v1: %d %q %s", resp.StatusCode, ch, raw)
	}
	var apiPRM oauth.ProtectedResourceMetadata
	getJSON(t, e.base+oauth.PathProtectedResourceAPI, &apiPRM)
	if apiPRM.Resource != e.base+"/api/v1" || !slices.Equal(apiPRM.AuthorizationServers, []string{issuer}) {
		t.Fatalf("REST PRM = %+v", apiPRM)
	}

	// Refresh rotates.
	st, m := refresh(tok.RefreshToken)
	at2, _ := m["access_token"].(string)
	rt2, _ := m["refresh_token"].(string)
	if st != 200 || at2 == "" || rt2 == "" || at2 == tok.AccessToken || rt2 == tok.RefreshToken {
		t.Fatalf("refresh: %d %v", st, m)
	}
	if s := strings.Fields(fmt.Sprint(m["scope"])); !sameSet(s, []string{"fax:read", "offline_access"}) {
		t.Fatalf("refreshed scope %v", s)
	}
	if _, err := e.a.OAuth.VerifyAccessToken(ctx, at2, mcp); err != nil {
		t.Fatalf("refreshed access token: %v", err)
	}
	wantInactive("access token before the refresh", tok.AccessToken)

	// Revocation (RFC 7009) of the refreshed access token, as the spec's
	// revoke call sends it: the token only.
	for i := range 2 {
		st, m := postForm(t, meta.RevocationEndpoint, url.Values{"token": {at2}, "token_type_hint": {"access_token"}})
		if st != 200 {
			t.Fatalf("revoke #%d: %d %v", i, st, m)
		}
	}
	wantInactive("revoked access token", at2)
	// The used refresh token is refused, and so is the chain's newest one
	// (fosite revokes the whole authorization).
	wantRefused("used refresh token", tok.RefreshToken)
	wantRefused("refresh token of the revoked authorization", rt2)

	// 5. Connected apps: a second authorization, refreshed, then revoked
	// from the console.
	code, verifier, _ = authorize("credits:read")
	tok3 := exchange(code, verifier)
	st, m = refresh(tok3.RefreshToken)
	at4, _ := m["access_token"].(string)
	rt4, _ := m["refresh_token"].(string)
	if st != 200 || at4 == "" || rt4 == "" {
		t.Fatalf("second refresh: %d %v", st, m)
	}
	if _, err := e.a.OAuth.VerifyAccessToken(ctx, at4, mcp); err != nil {
		t.Fatalf("refreshed token of the second authorization: %v", err)
	}
	apps := owner.get("/console/apps")
	wantStatus(t, "apps page", apps, 200)
	rm := regexp.MustCompile(`<form method="post" action="(/console/apps/[^"]+/revoke)">`).FindAllStringSubmatch(apps.body, -1)
	if !strings.Contains(apps.body, "E2E Chat") || len(rm) != 1 || !strings.Contains(apps.body, "fax:read") {
		t.Fatalf("apps page does not list the client once:\n%s", apps.body)
	}
	if strings.Contains(apps.body, "<strong>credits:read</strong>") {
		t.Fatal("apps page lists the unticked scope credits:read")
	}
	r = owner.form(rm[0][1], url.Values{"csrf": {csrfOf(t, apps)}})
	wantStatus(t, "revoke app", r, http.StatusSeeOther)
	wantInactive("refreshed token after revoking the app", at4)
	wantRefused("refresh token after revoking the app", rt4)
	if apps := owner.get("/console/apps"); strings.Contains(apps.body, "E2E Chat") {
		t.Fatal("the revoked app is still listed")
	}

	// 6. A second owner sees neither the approval nor the app.
	// The first owner authorizes again from another browser, signed out:
	// the authorization endpoint sends it through sign-in and back.
	code, verifier, approvalPath2 := authorizeIn(e.browser(), dev, "")
	tok5 := exchange(code, verifier)
	if got := strings.Fields(fmt.Sprint(tok5.Extra("scope"))); !sameSet(got, requested) {
		t.Fatalf("scope of the un-narrowed consent %v, want %v", got, requested)
	}
	if p, err := e.a.OAuth.VerifyAccessToken(ctx, tok5.AccessToken, mcp); err != nil || !sameSet(scopeStrings(p.Scopes), []string{"fax:read", "credits:read"}) {
		t.Fatalf("principal of the un-narrowed consent %+v, %v", p, err)
	}
	other, _ := e.signUp("bob@example.com", "Bob")
	for _, path := range []string{approvalPath, approvalPath2} {
		r := other.get(path)
		if r.status != http.StatusNotFound && r.status != http.StatusForbidden {
			t.Fatalf("second owner opens %s: %d\n%s", path, r.status, r.body)
		}
		if strings.Contains(r.body, "E2E Chat") {
			t.Fatalf("second owner's answer names the first owner's client:\n%s", r.body)
		}
	}
	for _, path := range []string{"/console/apps", "/console/approvals", "/console/keys"} {
		r := other.get(path)
		wantStatus(t, "second owner "+path, r, 200)
		if strings.Contains(r.body, "E2E Chat") || strings.Contains(r.body, ">e2e<") {
			t.Fatalf("second owner sees the first owner's data on %s", path)
		}
	}
	if apps := owner.get("/console/apps"); !strings.Contains(apps.body, "E2E Chat") {
		t.Fatal("the first owner's re-authorized app is missing")
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func scopeStrings(s []core.Scope) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = string(v)
	}
	return out
}
