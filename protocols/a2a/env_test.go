package a2a_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/descope/virtualwebauthn"
	"golang.org/x/oauth2"

	"github.com/faxhub/faxhub/conformance/storetest"
	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/web"
	"github.com/faxhub/faxhub/internal/app"
	"github.com/faxhub/faxhub/internal/passkeytest"
	"github.com/faxhub/faxhub/internal/testenv"
	"github.com/faxhub/faxhub/oauth"
)

const redirectURI = "http://127.0.0.1:53682/callback"

// env is a whole faxhub (internal/app's production wiring) on a loopback
// listener named localhost (passkeys need a host name), on SQLite or, with
// FAXHUB_TESTENV_POSTGRES, on PostgreSQL. Its API origin is the same
// listener under 127.0.0.1, so both origins can be asked for the card.
type env struct {
	t        *testing.T
	a        *app.App
	base     string
	api      string
	rp       virtualwebauthn.RelyingParty
	noFollow *http.Client
}

func newEnv(t *testing.T) *env {
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
	a, err := app.Open(t.Context(), app.Options{
		BaseURL: base, APIURL: fmt.Sprintf("http://127.0.0.1:%d", port), DataDir: t.TempDir(), Database: dsn,
		Dev: true, MCPOAuth: true, SimTimeScale: 0, InsertOnly: true,
		Logger: slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
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
	return &env{t: t, a: a, base: base, api: a.Svc.Config().APIURL,
		rp:       virtualwebauthn.RelyingParty{ID: "localhost", Name: "faxhub", Origin: base},
		noFollow: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

// owner is an account with a console session (a cookie jar).
type owner struct {
	e  *env
	o  *core.Owner
	c  *http.Client
	dv *passkeytest.Device
}

func (e *env) owner(email string) *owner {
	e.t.Helper()
	o, err := e.a.Svc.CreateOwner(e.t.Context(), email, "Owner", true)
	if err != nil {
		e.t.Fatal(err)
	}
	secret, _, err := e.a.Svc.CreateSession(e.t.Context(), o.ID, "test")
	if err != nil {
		e.t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	u, _ := url.Parse(e.base)
	jar.SetCookies(u, []*http.Cookie{{Name: web.SessionCookieName, Value: secret, Path: "/"}})
	return &owner{e: e, o: o, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type reply struct {
	status int
	header http.Header
	body   string
}

func (w *owner) do(method, target string, body io.Reader, ct string, extra http.Header) reply {
	t := w.e.t
	t.Helper()
	if strings.HasPrefix(target, "/") {
		target = w.e.base + target
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		t.Fatal(err)
	}
	if method != http.MethodGet {
		req.Header.Set("Origin", w.e.base)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	for k, v := range extra {
		req.Header[k] = v
	}
	res, err := w.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return reply{status: res.StatusCode, header: res.Header, body: string(b)}
}

func (w *owner) postJSON(path string, v any, csrf string) reply {
	raw, _ := json.Marshal(v)
	h := http.Header{}
	if csrf != "" {
		h.Set("X-CSRF-Token", csrf)
	}
	return w.do(http.MethodPost, path, bytes.NewReader(raw), "application/json", h)
}

func (w *owner) form(path string, v url.Values) reply {
	return w.do(http.MethodPost, path, strings.NewReader(v.Encode()), "application/x-www-form-urlencoded", nil)
}

var csrfMeta = regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)">`)

func (w *owner) csrf() string {
	w.e.t.Helper()
	r := w.do(http.MethodGet, "/console/account", nil, "", nil)
	m := csrfMeta.FindStringSubmatch(r.body)
	if r.status != 200 || m == nil {
		w.e.t.Fatalf("no form token (status %d)", r.status)
	}
	return html.UnescapeString(m[1])
}

// addPasskey registers a software passkey on the owner's account.
func (w *owner) addPasskey() {
	t := w.e.t
	t.Helper()
	csrf := w.csrf()
	d := passkeytest.NewDevice()
	opts := w.postJSON("/console/account/passkeys/begin", map[string]any{"name": "Laptop"}, csrf)
	if opts.status != 200 {
		t.Fatalf("passkey begin: %d %s", opts.status, opts.body)
	}
	ao, err := virtualwebauthn.ParseAttestationOptions(opts.body)
	if err != nil {
		t.Fatalf("attestation options: %v", err)
	}
	att := virtualwebauthn.CreateAttestationResponse(w.e.rp, d.Auth, d.Cred, *ao)
	r := w.postJSON("/console/account/passkeys/finish", map[string]any{"name": "Laptop", "credential": json.RawMessage(att)}, csrf)
	if r.status != 200 {
		t.Fatalf("passkey finish: %d %s", r.status, r.body)
	}
	d.Auth.AddCredential(d.Cred)
	d.Auth.Options.UserHandle = []byte(ao.UserID)
	w.dv = d
}

// approve answers the approval at approvalURL with the owner's passkey;
// uv false makes the authenticator skip user verification.
func (w *owner) approve(approvalURL string, uv bool) reply {
	t := w.e.t
	t.Helper()
	id := approvalURL[strings.LastIndex(approvalURL, "/")+1:]
	apr, err := w.e.a.Svc.GetApproval(t.Context(), w.o.ID, id)
	if err != nil {
		t.Fatalf("approval %s: %v", id, err)
	}
	csrf := w.csrf()
	begin, finish := "/console/approvals/"+id+"/passkey/begin", "/console/approvals/"+id+"/passkey/finish"
	opts := w.postJSON(begin, map[string]any{"binding": apr.BindingHash}, csrf)
	if opts.status != 200 {
		return opts
	}
	ao, err := virtualwebauthn.ParseAssertionOptions(opts.body)
	if err != nil {
		t.Fatalf("assertion options: %v\n%s", err, opts.body)
	}
	w.dv.Auth.Options.UserNotVerified = !uv
	defer func() { w.dv.Auth.Options.UserNotVerified = false }()
	as := virtualwebauthn.CreateAssertionResponse(w.e.rp, w.dv.Auth, w.dv.Cred, *ao)
	return w.postJSON(finish, map[string]any{"credential": json.RawMessage(as)}, csrf)
}

// token runs the chat-app OAuth flow (DCR, authorize with PKCE for
// resource, consent decided as the console does, code exchange).
func (w *owner) token(scopes []string, resource string) string {
	e, t := w.e, w.e.t
	t.Helper()
	ctx := t.Context()
	meta, _ := json.Marshal(map[string]any{"client_name": "Test Agent", "redirect_uris": []string{redirectURI},
		"grant_types": []string{"authorization_code", "refresh_token"}, "token_endpoint_auth_method": "none"})
	resp, err := http.Post(e.base+oauth.PathRegister, "application/json", bytes.NewReader(meta))
	if err != nil {
		t.Fatal(err)
	}
	var reg map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&reg)
	resp.Body.Close()
	clientID, _ := reg["client_id"].(string)
	if clientID == "" {
		t.Fatalf("register: %d %v", resp.StatusCode, reg)
	}
	cfg := &oauth2.Config{ClientID: clientID, RedirectURL: redirectURI, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: e.base + oauth.PathAuthorize, TokenURL: e.base + oauth.PathToken, AuthStyle: oauth2.AuthStyleInParams}}
	v := oauth2.GenerateVerifier()
	authURL := cfg.AuthCodeURL("state-"+core.RandomString(8), oauth2.S256ChallengeOption(v), oauth2.SetAuthURLParam("resource", resource))
	r := w.do(http.MethodGet, authURL, nil, "", nil)
	loc, _ := url.Parse(r.header.Get("Location"))
	if r.status != http.StatusSeeOther || loc == nil || !strings.HasPrefix(loc.Path, "/console/approvals/") {
		t.Fatalf("authorize: %d %v %s", r.status, loc, r.body)
	}
	id := strings.TrimPrefix(loc.Path, "/console/approvals/")
	ret := loc.Query().Get("return")
	apr, err := e.a.Svc.GetApproval(ctx, w.o.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.a.Svc.DecideApproval(ctx, w.o.ID, id, core.Decision{Approve: true, BindingHash: apr.BindingHash}); err != nil {
		t.Fatal(err)
	}
	r = w.do(http.MethodGet, ret, nil, "", nil)
	loc, _ = url.Parse(r.header.Get("Location"))
	if r.status != http.StatusSeeOther || loc == nil || loc.Query().Get("code") == "" {
		t.Fatalf("resume: %d %v %s", r.status, loc, r.body)
	}
	tok, err := cfg.Exchange(ctx, loc.Query().Get("code"), oauth2.VerifierOption(v), oauth2.SetAuthURLParam("resource", resource))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	return tok.AccessToken
}

// agentToken registers an agent (service_auth with an enrollment token),
// lets the owner approve its claim and polls a token for resource.
func (w *owner) agentToken(scopes []string, resource string) string {
	e, t := w.e, w.e.t
	t.Helper()
	ctx := t.Context()
	secret, err := e.a.Svc.CreateAgentEnrollment(ctx, w.o.ID, "A2A bot", scopes)
	if err != nil {
		t.Fatal(err)
	}
	post := func(path, ct, body string) (int, string) {
		resp, err := http.Post(e.base+path, ct, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := post(oauth.PathAgentIdentity, "application/json",
		`{"type":"service_auth","enrollment_token":"`+secret.EnrollmentToken+`","login_hint":"`+w.o.Email+`"}`)
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
	_, attempt, _ := strings.Cut(reg.Claim.VerificationURI, core.AgentClaimPagePath)
	if err := e.a.Svc.DecideAgentClaim(ctx, w.o.ID, attempt, reg.Claim.UserCode, true, scopes); err != nil {
		t.Fatal(err)
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

// headers adds fixed headers to every request of an http.Client.
type headers struct {
	h    http.Header
	base http.RoundTripper
}

func (hs headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range hs.h {
		r.Header[k] = v
	}
	return hs.base.RoundTrip(r)
}

// protoJSONCardParser parses a spec-shaped (ProtoJSON) card with a2a-go
// v2.4.0, which expects securityRequirements scopes as a bare list
// (a2aproject/a2a-go#430): it unwraps {"list": […]} and parses the rest
// unchanged.
func protoJSONCardParser(body []byte) (*a2a.AgentCard, error) {
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	unwrap := func(v any) {
		reqs, _ := v.([]any)
		for _, r := range reqs {
			schemes, _ := r.(map[string]any)["schemes"].(map[string]any)
			for k, s := range schemes {
				if l, ok := s.(map[string]any)["list"]; ok {
					schemes[k] = l
				}
			}
		}
	}
	unwrap(m["securityRequirements"])
	skills, _ := m["skills"].([]any)
	for _, s := range skills {
		unwrap(s.(map[string]any)["securityRequirements"])
	}
	b, _ := json.Marshal(m)
	return agentcard.DefaultCardParser(b)
}

// client is a2a-go's own client for the card's 1.0 interface, sending tok
// and the A2A-Extensions given.
func (e *env) client(tok string, extensions ...string) *a2aclient.Client {
	e.t.Helper()
	card, err := (&agentcard.Resolver{Client: http.DefaultClient, CardParser: protoJSONCardParser}).Resolve(e.t.Context(), e.base)
	if err != nil {
		e.t.Fatalf("resolve card: %v", err)
	}
	h := http.Header{}
	if tok != "" {
		h.Set("Authorization", "Bearer "+tok)
	}
	if len(extensions) > 0 {
		h.Set("A2A-Extensions", strings.Join(extensions, ","))
	}
	c, err := a2aclient.NewFromCard(e.t.Context(), card,
		a2aclient.WithJSONRPCTransport(&http.Client{Transport: headers{h: h, base: http.DefaultTransport}}))
	if err != nil {
		e.t.Fatalf("client: %v", err)
	}
	return c
}

// skillMsg is a 1.0 message with one data part calling a skill.
func skillMsg(skill string, args map[string]any) *a2a.SendMessageRequest {
	if args == nil {
		args = map[string]any{}
	}
	return &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart(map[string]any{"skill": skill, "arguments": args}))}
}

// call runs an immediate skill through the a2a-go client and returns the
// data of its answer.
func call(t *testing.T, c *a2aclient.Client, req *a2a.SendMessageRequest) map[string]any {
	t.Helper()
	res, err := c.SendMessage(t.Context(), req)
	return messageData(t, res, err)
}

// messageData returns the data of a Message result's single data part.
func messageData(t *testing.T, res a2a.SendMessageResult, err error) map[string]any {
	t.Helper()
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	m, ok := res.(*a2a.Message)
	if !ok {
		t.Fatalf("result is %T, want a message", res)
	}
	if len(m.Parts) != 1 {
		t.Fatalf("message has %d parts", len(m.Parts))
	}
	d, ok := m.Parts[0].Data().(map[string]any)
	if !ok {
		t.Fatalf("part is not data: %+v", m.Parts[0])
	}
	return d
}

func asTask(t *testing.T, res a2a.SendMessageResult, err error) *a2a.Task {
	t.Helper()
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("result is %T, want a task", res)
	}
	return task
}

// a2aErr checks err is an A2A error of sentinel whose message contains
// want, and returns its details.
func a2aErr(t *testing.T, what string, err error, sentinel error, want string) map[string]any {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error", what)
	}
	var e *a2a.Error
	if !errors.As(err, &e) || !errors.Is(err, sentinel) {
		t.Fatalf("%s: error %v (%T), want %v", what, err, err, sentinel)
	}
	if !strings.Contains(e.Message, want) {
		t.Fatalf("%s: message %q lacks %q", what, e.Message, want)
	}
	return e.Details
}

// rpc posts a raw JSON-RPC body; it returns the status, headers and the
// decoded response.
func (e *env) rpc(auth string, extra http.Header, body string) (int, http.Header, map[string]any) {
	e.t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, e.base+"/a2a", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	for k, v := range extra {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		e.t.Fatalf("response is not JSON (%d): %s", resp.StatusCode, b)
	}
	return resp.StatusCode, resp.Header, m
}

// rpcError returns the code and message of a JSON-RPC error response and
// its first data member (faxhub's details).
func rpcError(t *testing.T, m map[string]any) (int, string, map[string]any) {
	t.Helper()
	e, ok := m["error"].(map[string]any)
	if !ok {
		t.Fatalf("not an error: %v", m)
	}
	code, _ := e["code"].(float64)
	msg, _ := e["message"].(string)
	var details map[string]any
	if data, ok := e["data"].([]any); ok && len(data) > 0 {
		details, _ = data[0].(map[string]any)
	}
	return int(code), msg, details
}
