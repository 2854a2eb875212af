package passkeys_test

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/descope/virtualwebauthn"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/mail"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/core/web"
	"github.com/faxhub/faxhub/hostagent"
	"github.com/faxhub/faxhub/internal/passkeytest"
	"github.com/faxhub/faxhub/internal/testenv"
	"github.com/faxhub/faxhub/passkeys"
)

const baseURL = "https://faxhub.test"

var rp = virtualwebauthn.RelyingParty{ID: "faxhub.test", Name: "faxhub", Origin: baseURL}

type harness struct {
	t       *testing.T
	env     *testenv.Env
	srv     *httptest.Server
	console *passkeys.Console
	mailbox *mail.Mailbox
	grants  *grantDir
}

// routed is a router with the console's routes and the delegated hosts'
// (the console hands out their enroll URL).
func routed(con *passkeys.Console, svc *services.Set) *web.Router {
	api := svc.Kernel.Config().APIURL
	r := web.NewRouter(web.Origins{web.OriginBase: baseURL, web.OriginAPI: api})
	con.Register(r)
	hostagent.New(svc, hostagent.Options{BaseURL: baseURL, APIURL: api}).Register(r)
	return r
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	env := testenv.New(t)
	h := &harness{t: t, env: env, mailbox: mail.NewMailbox(nil, 0), grants: &grantDir{}}
	con := passkeys.New(env.Svc, env.DB, passkeys.Options{
		BaseURL: baseURL, DevMailbox: true, Mailer: h.mailbox, Grants: h.grants,
	})
	if err := con.Err(); err != nil {
		t.Fatal(err)
	}
	h.console = con
	mux := routed(con, env.Svc)
	// The console's TLS origin is faxhub.test; the test server listens on
	// 127.0.0.1 with a certificate its client trusts.
	h.srv = httptest.NewTLSServer(mux)
	t.Cleanup(h.srv.Close)
	return h
}

// browser is one cookie jar talking to the console, like a browser tab
// that never follows redirects on its own.
type browser struct {
	h      *harness
	c      *http.Client
	header http.Header // sent with every request
}

func (h *harness) browser() *browser {
	jar, _ := cookiejar.New(nil)
	c := *h.srv.Client() // a copy: each browser has its own jar
	c.Jar = jar
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &browser{h: h, c: &c, header: http.Header{}}
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

func (b *browser) do(method, path string, body io.Reader, ct string, extra http.Header) reply {
	b.h.t.Helper()
	req, err := http.NewRequest(method, b.h.srv.URL+path, body)
	if err != nil {
		b.h.t.Fatal(err)
	}
	for k, v := range b.header {
		req.Header[k] = v
	}
	for k, v := range extra {
		req.Header[k] = v
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	res, err := b.c.Do(req)
	if err != nil {
		b.h.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return reply{status: res.StatusCode, header: res.Header, body: string(data)}
}

func (b *browser) get(path string) reply { return b.do("GET", path, nil, "", nil) }

func (b *browser) form(path string, v url.Values) reply {
	return b.do("POST", path, strings.NewReader(v.Encode()), "application/x-www-form-urlencoded", nil)
}

func (b *browser) postJSON(path string, v any, csrf string) reply {
	raw, err := json.Marshal(v)
	if err != nil {
		b.h.t.Fatal(err)
	}
	hdr := http.Header{}
	if csrf != "" {
		hdr.Set("X-CSRF-Token", csrf)
	}
	return b.do("POST", path, bytes.NewReader(raw), "application/json", hdr)
}

var csrfMeta = regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)">`)

// csrf reads the form token from a console page.
func (b *browser) csrf() string {
	b.h.t.Helper()
	r := b.get("/console/account")
	m := csrfMeta.FindStringSubmatch(r.body)
	if r.status != 200 || m == nil {
		b.h.t.Fatalf("no form token (status %d)", r.status)
	}
	return m[1]
}

// device is a software authenticator holding one passkey.
type device = passkeytest.Device

func newDevice() *device { return passkeytest.NewDevice() }

// register runs a registration ceremony on begin/finish.
func (b *browser) register(d *device, begin, finish string, extra map[string]any, csrf string) reply {
	t := b.h.t
	t.Helper()
	opts := b.postJSON(begin, extra, csrf)
	if opts.status != 200 {
		return opts
	}
	ao, err := virtualwebauthn.ParseAttestationOptions(opts.body)
	if err != nil {
		t.Fatalf("parse attestation options: %v\n%s", err, opts.body)
	}
	if !strings.Contains(opts.body, `"residentKey":"required"`) || !strings.Contains(opts.body, `"userVerification":"required"`) {
		t.Fatalf("registration does not require a resident key and user verification: %s", opts.body)
	}
	att := virtualwebauthn.CreateAttestationResponse(rp, d.Auth, d.Cred, *ao)
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

// assertion asks begin for options and returns the signed response.
func (b *browser) assertion(d *device, begin string, extra map[string]any, csrf string) (json.RawMessage, reply) {
	t := b.h.t
	t.Helper()
	opts := b.postJSON(begin, extra, csrf)
	if opts.status != 200 {
		return nil, opts
	}
	if !strings.Contains(opts.body, `"userVerification":"required"`) {
		t.Fatalf("assertion options do not require user verification: %s", opts.body)
	}
	ao, err := virtualwebauthn.ParseAssertionOptions(opts.body)
	if err != nil {
		t.Fatalf("parse assertion options: %v\n%s", err, opts.body)
	}
	return json.RawMessage(virtualwebauthn.CreateAssertionResponse(rp, d.Auth, d.Cred, *ao)), opts
}

func (b *browser) signIn(d *device) reply {
	b.h.t.Helper()
	a, r := b.assertion(d, "/signin/begin", nil, "")
	if a == nil {
		return r
	}
	return b.postJSON("/signin/finish", map[string]any{"credential": a}, "")
}

var linkRe = regexp.MustCompile(`https://faxhub\.test(/verify\?token=[A-Za-z0-9_%]+)`)

// lastLink is the path of the newest verification or recovery link mailed
// to addr.
func (h *harness) lastLink(addr string) string {
	h.t.Helper()
	for _, m := range h.mailbox.Messages() {
		if m.To == strings.ToLower(addr) {
			if l := linkRe.FindStringSubmatch(m.Text); l != nil {
				return l[1]
			}
		}
	}
	h.t.Fatalf("no link mailed to %s", addr)
	return ""
}

func tokenOf(link string) string {
	u, _ := url.Parse(link)
	return u.Query().Get("token")
}

// signUp creates an account through the pages and returns the signed-in
// browser and its device.
func (h *harness) signUp(email, name string) (*browser, *device) {
	h.t.Helper()
	b := h.browser()
	r := b.form("/signup", url.Values{"email": {email}, "name": {name}})
	if r.status != 200 || !strings.Contains(r.body, "Check your email") {
		h.t.Fatalf("sign-up: %d %s", r.status, r.body)
	}
	link := h.lastLink(email)
	if r := b.get(link); r.status != 200 || !strings.Contains(r.body, "Create passkey") {
		h.t.Fatalf("verify page: %d %s", r.status, r.body)
	}
	d := newDevice()
	r = b.register(d, "/verify/begin", "/verify/finish", map[string]any{"token": tokenOf(link), "name": "Laptop"}, "")
	if r.status != 200 || r.json(h.t)["redirect"] != "/console" {
		h.t.Fatalf("verify finish: %d %s", r.status, r.body)
	}
	return b, d
}

func wantStatus(t *testing.T, what string, r reply, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: status %d, want %d\n%s", what, r.status, status, r.body)
	}
}

func wantCode(t *testing.T, what string, r reply, status int, code string) {
	t.Helper()
	wantStatus(t, what, r, status)
	if got := r.json(t)["code"]; got != code {
		t.Fatalf("%s: code %v, want %s\n%s", what, got, code, r.body)
	}
}

func TestSignUpVerifySignIn(t *testing.T) {
	h := newHarness(t)
	b, d := h.signUp("Ada@Example.com", "Ada Lovelace")

	r := b.get("/console")
	wantStatus(t, "dashboard", r, 200)
	for _, want := range []string{"Dashboard", "Test balance", "Live balance", "No faxes in test mode"} {
		if !strings.Contains(r.body, want) {
			t.Errorf("dashboard lacks %q", want)
		}
	}
	o, err := h.env.Svc.Accounts.OwnerByEmail(t.Context(), "ada@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if o.EmailVerifiedAt == nil || o.Name != "Ada Lovelace" {
		t.Fatalf("owner %+v: want verified, named", o)
	}
	keys, err := h.env.DB.ListPasskeys(t.Context(), o.ID)
	if err != nil || len(keys) != 1 || keys[0].Name != "Laptop" || !keys[0].UserVerified {
		t.Fatalf("passkeys %+v, %v", keys, err)
	}

	// The link is spent.
	link := h.lastLink("ada@example.com")
	wantStatus(t, "used link", b.get(link), http.StatusGone)
	r = h.browser().register(newDevice(), "/verify/begin", "/verify/finish", map[string]any{"token": tokenOf(link)}, "")
	wantCode(t, "register with a used link", r, http.StatusGone, "link_invalid")

	// A fresh browser signs in with the discoverable passkey, no username.
	b2 := h.browser()
	wantStatus(t, "signed-out console", b2.get("/console/keys"), http.StatusSeeOther)
	r = b2.signIn(d)
	wantStatus(t, "sign in", r, 200)
	if r.json(t)["redirect"] != "/console" {
		t.Fatalf("sign-in redirect %s", r.body)
	}
	wantStatus(t, "console after sign-in", b2.get("/console"), 200)

	// next= is honoured for local paths only.
	b3 := h.browser()
	a, _ := b3.assertion(d, "/signin/begin", nil, "")
	r = b3.postJSON("/signin/finish", map[string]any{"credential": a, "next": "/console/approvals"}, "")
	if r.json(t)["redirect"] != "/console/approvals" {
		t.Fatalf("sign-in with next: %s", r.body)
	}

	// A passkey nobody registered is refused.
	r = h.browser().signIn(newDevice())
	wantCode(t, "unknown passkey", r, http.StatusForbidden, "passkey_invalid")
}

func TestSessionCookieAttributes(t *testing.T) {
	h := newHarness(t)
	b := h.browser()
	b.form("/signup", url.Values{"email": {"c@example.com"}})
	link := h.lastLink("c@example.com")
	d := newDevice()
	opts := b.postJSON("/verify/begin", map[string]any{"token": tokenOf(link)}, "")
	ao, err := virtualwebauthn.ParseAttestationOptions(opts.body)
	if err != nil {
		t.Fatal(err)
	}
	att := virtualwebauthn.CreateAttestationResponse(rp, d.Auth, d.Cred, *ao)
	r := b.postJSON("/verify/finish", map[string]any{"token": tokenOf(link), "credential": json.RawMessage(att)}, "")
	wantStatus(t, "finish", r, 200)
	ck := r.header.Get("Set-Cookie")
	for _, want := range []string{web.SessionCookieName + "=fxs_", "Path=/", "HttpOnly", "Secure", "SameSite=Lax"} {
		if !strings.Contains(ck, want) {
			t.Errorf("Set-Cookie %q lacks %q", ck, want)
		}
	}
}

func TestSignUpErrorsAndEnumeration(t *testing.T) {
	h := newHarness(t)
	b := h.browser()
	r := b.form("/signup", url.Values{"email": {"not an address"}})
	wantStatus(t, "bad email", r, http.StatusBadRequest)
	if !strings.Contains(r.body, `aria-invalid="true"`) || !strings.Contains(r.body, "valid email address") {
		t.Fatalf("bad email page lacks a field error:\n%s", r.body)
	}
	// An existing owner gets a recovery mail, and the page is the same.
	r = b.form("/signup", url.Values{"email": {"a@example.com"}})
	wantStatus(t, "existing email", r, 200)
	if !strings.Contains(r.body, "Check your email") {
		t.Fatal("existing email: page differs")
	}
	msgs := h.mailbox.Messages()
	if len(msgs) != 1 || msgs[0].Subject != "Recover your faxhub account" {
		t.Fatalf("mails %+v", msgs)
	}
	// Recovery for an unknown address says the same and sends nothing.
	r = b.form("/recover", url.Values{"email": {"nobody@example.com"}})
	wantStatus(t, "unknown recovery", r, 200)
	if len(h.mailbox.Messages()) != 1 {
		t.Fatal("a mail went to an unknown address")
	}
	// Mails to one address are rate limited.
	for range 2 {
		b.form("/recover", url.Values{"email": {"a@example.com"}})
	}
	r = b.form("/recover", url.Values{"email": {"a@example.com"}})
	wantStatus(t, "fourth mail", r, http.StatusTooManyRequests)
	// Bad and garbled links.
	wantStatus(t, "garbled link", b.get("/verify?token=fxm_nope"), http.StatusNotFound)
	wantStatus(t, "no token", b.get("/verify"), http.StatusNotFound)
	// The dev mailbox shows the links.
	r = b.get("/console/mailbox")
	wantStatus(t, "mailbox", r, 200)
	if !strings.Contains(r.body, `<a href="https://faxhub.test/verify?token=`) {
		t.Fatalf("mailbox lacks the link:\n%s", r.body)
	}
	// Nobody but this machine reads it: the links take over accounts.
	for _, peer := range []string{"203.0.113.9:4000", "[2001:db8::1]:4000", "10.0.0.2:1"} {
		req := httptest.NewRequest("GET", "/console/mailbox", nil)
		req.RemoteAddr = peer
		req.Header.Set("X-Forwarded-For", "127.0.0.1")
		rec := httptest.NewRecorder()
		routed(h.console, h.env.Svc).ServeHTTP(rec, req)
		if rec.Code != http.StatusNotFound || strings.Contains(rec.Body.String(), "verify?token=") {
			t.Fatalf("mailbox from %s: %d\n%s", peer, rec.Code, rec.Body)
		}
	}
}

func TestPasskeyManagement(t *testing.T) {
	h := newHarness(t)
	b, d1 := h.signUp("ada@example.com", "Ada")
	csrf := b.csrf()
	o, _ := h.env.Svc.Accounts.OwnerByEmail(t.Context(), "ada@example.com")

	// The only passkey cannot be removed.
	keys, _ := h.env.DB.ListPasskeys(t.Context(), o.ID)
	r := b.form("/console/account/passkeys/"+keys[0].ID+"/delete", url.Values{"csrf": {csrf}})
	wantStatus(t, "remove last passkey", r, http.StatusConflict)
	if !strings.Contains(r.body, "cannot remove your last passkey") {
		t.Fatalf("no clear error:\n%s", r.body)
	}

	// Add a second one; the first device is excluded from registering twice.
	d2 := newDevice()
	r = b.register(d2, "/console/account/passkeys/begin", "/console/account/passkeys/finish", map[string]any{"name": "Phone"}, csrf)
	wantStatus(t, "add passkey", r, 200)
	if !strings.Contains(b.postJSON("/console/account/passkeys/begin", nil, csrf).body, "excludeCredentials") {
		t.Error("registration options do not exclude the owner's passkeys")
	}
	// Adding without the form token is refused.
	wantCode(t, "add without form token", b.postJSON("/console/account/passkeys/begin", nil, ""), http.StatusForbidden, "csrf_refused")

	keys, _ = h.env.DB.ListPasskeys(t.Context(), o.ID)
	if len(keys) != 2 || keys[1].Name != "Phone" {
		t.Fatalf("passkeys %+v", keys)
	}
	r = b.form("/console/account/passkeys/"+keys[1].ID+"/rename", url.Values{"csrf": {csrf}, "name": {"Pixel phone"}})
	wantStatus(t, "rename", r, http.StatusSeeOther)
	r = b.form("/console/account/passkeys/"+keys[1].ID+"/rename", url.Values{"csrf": {csrf}, "name": {""}})
	wantStatus(t, "rename to nothing", r, http.StatusBadRequest)
	page := b.get("/console/account")
	if !strings.Contains(page.body, "Pixel phone") {
		t.Fatal("account page lacks the renamed passkey")
	}
	// The second device signs in; the first one's passkey is removed and
	// no longer works.
	wantStatus(t, "sign in with new passkey", h.browser().signIn(d2), 200)
	r = b.form("/console/account/passkeys/"+keys[0].ID+"/delete", url.Values{"csrf": {csrf}})
	wantStatus(t, "remove first", r, http.StatusSeeOther)
	wantCode(t, "removed passkey", h.browser().signIn(d1), http.StatusForbidden, "passkey_invalid")
	r = b.form("/console/account/passkeys/"+keys[1].ID+"/delete", url.Values{"csrf": {csrf}})
	wantStatus(t, "remove the remaining one", r, http.StatusConflict)
}

func TestRecoveryRegistersNewPasskeyAndSignsOutEverywhere(t *testing.T) {
	h := newHarness(t)
	old, lost := h.signUp("ada@example.com", "Ada")
	wantStatus(t, "old session", old.get("/console"), 200)

	b := h.browser()
	r := b.form("/recover", url.Values{"email": {"ada@example.com"}})
	wantStatus(t, "recover", r, 200)
	link := h.lastLink("ada@example.com")
	r = b.get(link)
	if r.status != 200 || !strings.Contains(r.body, "Register a new passkey") {
		t.Fatalf("recovery page: %d\n%s", r.status, r.body)
	}
	d := newDevice()
	r = b.register(d, "/verify/begin", "/verify/finish", map[string]any{"token": tokenOf(link), "name": "New phone"}, "")
	wantStatus(t, "recovery passkey", r, 200)
	wantStatus(t, "recovered session", b.get("/console"), 200)
	wantStatus(t, "old session after recovery", old.get("/console"), http.StatusSeeOther)
	wantStatus(t, "new passkey signs in", h.browser().signIn(d), 200)
	wantStatus(t, "old passkey still works", h.browser().signIn(lost), 200)
}

func TestSignOutAndSignOutEverywhere(t *testing.T) {
	h := newHarness(t)
	b1, d := h.signUp("ada@example.com", "Ada")
	b2, b3 := h.browser(), h.browser()
	wantStatus(t, "second sign-in", b2.signIn(d), 200)
	wantStatus(t, "third sign-in", b3.signIn(d), 200)

	// Sign out needs the form token.
	wantStatus(t, "sign out without token", b3.form("/signout", nil), http.StatusForbidden)
	r := b3.form("/signout", url.Values{"csrf": {b3.csrf()}})
	wantStatus(t, "sign out", r, http.StatusSeeOther)
	wantStatus(t, "signed out", b3.get("/console"), http.StatusSeeOther)
	wantStatus(t, "others still in", b2.get("/console"), 200)

	r = b1.form("/console/account/signout-all", url.Values{"csrf": {b1.csrf()}})
	wantStatus(t, "sign out everywhere", r, http.StatusSeeOther)
	if !strings.Contains(r.header.Get("Location"), "/signin") {
		t.Fatalf("redirect to %s", r.header.Get("Location"))
	}
	for i, b := range []*browser{b1, b2} {
		if r := b.get("/console"); r.status != http.StatusSeeOther {
			t.Errorf("browser %d still signed in after sign-out everywhere", i+1)
		}
	}
}

// ---- approvals

func (h *harness) ownerID(email string) string {
	h.t.Helper()
	o, err := h.env.Svc.Accounts.OwnerByEmail(h.t.Context(), email)
	if err != nil {
		h.t.Fatal(err)
	}
	return o.ID
}

func (h *harness) verifiedAction(ownerID string) *approvals.Approval {
	h.t.Helper()
	a, err := h.env.Svc.Approvals.Request(h.t.Context(), approvals.Request{
		OwnerID: ownerID, Kind: approvals.KindVerifiedAction, Requester: "Travel agent bot",
		Summary: "Send a 2-page fax to +1 212 555 0100",
		Details: map[string]any{"to": "+12125550100", "pages": 2, "price": "0.42"},
		Binding: map[string]any{"to": "+12125550100", "document": "doc_x", "nonce": core.RandomString(8)}, RequiresUV: true, TTL: time.Hour,
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return a
}

func (h *harness) status(ownerID, id string) approvals.Status {
	h.t.Helper()
	a, err := h.env.Svc.Approvals.Get(h.t.Context(), ownerID, id)
	if err != nil {
		h.t.Fatal(err)
	}
	return a.Status
}

func approvalPaths(id string) (begin, finish string) {
	return "/console/approvals/" + id + "/passkey/begin", "/console/approvals/" + id + "/passkey/finish"
}

func TestUVApproval(t *testing.T) {
	h := newHarness(t)
	b, d := h.signUp("ada@example.com", "Ada")
	csrf := b.csrf()
	owner := h.ownerID("ada@example.com")
	a := h.verifiedAction(owner)

	// The inbox shows what exactly is asked and offers a passkey prompt.
	r := b.get("/console/approvals")
	r.body = html.UnescapeString(r.body)
	for _, want := range []string{"Send a 2-page fax to +1 212 555 0100", "Travel agent bot", "+12125550100", "needs your passkey", "Approve with passkey"} {
		if !strings.Contains(r.body, want) {
			t.Errorf("inbox lacks %q", want)
		}
	}
	// A form approval without the passkey is refused.
	r = b.form("/console/approvals/"+a.ID, url.Values{"csrf": {csrf}, "decision": {"approve"}, "binding": {a.BindingHash}})
	wantStatus(t, "approve without passkey", r, http.StatusForbidden)

	begin, finish := approvalPaths(a.ID)
	assertion, r := b.assertion(d, begin, map[string]any{"binding": a.BindingHash}, csrf)
	if assertion == nil {
		t.Fatalf("begin: %d %s", r.status, r.body)
	}
	if !strings.Contains(r.body, "allowCredentials") {
		t.Error("approval options do not name the owner's passkeys")
	}
	r = b.postJSON(finish, map[string]any{"credential": assertion, "return": "/console/approvals/" + a.ID}, csrf)
	wantStatus(t, "approve with passkey", r, 200)
	if r.json(t)["redirect"] != "/console/approvals/"+a.ID {
		t.Fatalf("redirect %s", r.body)
	}
	got, _ := h.env.Svc.Approvals.Get(t.Context(), owner, a.ID)
	if got.Status != approvals.Approved {
		t.Fatalf("status %s", got.Status)
	}

	// Replaying the same assertion: refused, on this approval and on another.
	r = b.postJSON(finish, map[string]any{"credential": assertion}, csrf)
	wantCode(t, "replay", r, http.StatusConflict, "webauthn_challenge_used")
	other := h.verifiedAction(owner)
	_, otherFinish := approvalPaths(other.ID)
	r = b.postJSON(otherFinish, map[string]any{"credential": assertion}, csrf)
	wantCode(t, "replay on another approval", r, http.StatusForbidden, "webauthn_challenge_unknown")
	if h.status(owner, other.ID) != approvals.Pending {
		t.Fatal("a replayed assertion decided another approval")
	}
	// A sign-in challenge cannot approve either.
	login, _ := b.assertion(d, "/signin/begin", nil, "")
	r = b.postJSON(otherFinish, map[string]any{"credential": login}, csrf)
	wantCode(t, "sign-in assertion on an approval", r, http.StatusForbidden, "webauthn_challenge_unknown")
}

func TestUVApprovalRefusesNoUVAssertion(t *testing.T) {
	h := newHarness(t)
	b, d := h.signUp("ada@example.com", "Ada")
	csrf := b.csrf()
	owner := h.ownerID("ada@example.com")
	a := h.verifiedAction(owner)
	begin, finish := approvalPaths(a.ID)

	d.Auth.Options.UserNotVerified = true
	assertion, _ := b.assertion(d, begin, map[string]any{"binding": a.BindingHash}, csrf)
	r := b.postJSON(finish, map[string]any{"credential": assertion}, csrf)
	wantCode(t, "no-UV assertion", r, http.StatusForbidden, approvals.CodeUserVerification)
	if !strings.Contains(r.json(t)["detail"].(string), "did not verify you") {
		t.Fatalf("unclear error %s", r.body)
	}
	if h.status(owner, a.ID) != approvals.Pending {
		t.Fatal("approved without user verification")
	}
	// The challenge is spent: the same prompt cannot be retried with UV.
	d.Auth.Options.UserNotVerified = false
	r = b.postJSON(finish, map[string]any{"credential": assertion}, csrf)
	wantCode(t, "retry of a spent challenge", r, http.StatusConflict, "webauthn_challenge_used")
	// A new prompt with UV works.
	assertion, _ = b.assertion(d, begin, map[string]any{"binding": a.BindingHash}, csrf)
	wantStatus(t, "approve with UV", b.postJSON(finish, map[string]any{"credential": assertion}, csrf), 200)

	// Sign-in without UV is refused too.
	d.Auth.Options.UserNotVerified = true
	wantCode(t, "no-UV sign-in", h.browser().signIn(d), http.StatusForbidden, approvals.CodeUserVerification)
}

func TestUVApprovalBindingHash(t *testing.T) {
	h := newHarness(t)
	b, d := h.signUp("ada@example.com", "Ada")
	csrf := b.csrf()
	owner := h.ownerID("ada@example.com")
	a := h.verifiedAction(owner)
	begin, finish := approvalPaths(a.ID)

	// A prompt for a binding hash the approval does not have.
	r := b.postJSON(begin, map[string]any{"binding": approvals.BindingHash("something else")}, csrf)
	wantCode(t, "begin with another hash", r, http.StatusConflict, approvals.CodeApprovalBinding)

	// The approval changes between the prompt and the answer.
	assertion, _ := b.assertion(d, begin, map[string]any{"binding": a.BindingHash}, csrf)
	if _, err := h.env.DB.SQL().ExecContext(t.Context(), rebind(h, "UPDATE approvals SET binding_hash = ? WHERE id = ?"),
		approvals.BindingHash(map[string]any{"to": "+19005550100"}), a.ID); err != nil {
		t.Fatal(err)
	}
	r = b.postJSON(finish, map[string]any{"credential": assertion}, csrf)
	wantCode(t, "approval bound to a different hash", r, http.StatusConflict, approvals.CodeApprovalBinding)
	if h.status(owner, a.ID) != approvals.Pending {
		t.Fatal("approved a changed request")
	}
}

// rebind turns ? placeholders into $n on PostgreSQL.
func rebind(h *harness, q string) string {
	if h.env.DB.Dialect() != "postgres" {
		return q
	}
	n := 0
	return regexp.MustCompile(`\?`).ReplaceAllStringFunc(q, func(string) string {
		n++
		return "$" + string(rune('0'+n))
	})
}

func (h *harness) consent(ownerID string, uv bool) *approvals.Approval {
	h.t.Helper()
	d := approvals.ConsentDetails{
		ClientID: "https://chat.example/client.json", ClientName: "Example Chat", ClientURI: "https://chat.example",
		RedirectURI: "https://chat.example/oauth/callback", Scopes: []string{"fax:read", "fax:send", "offline_access"},
		Resource: "https://faxhub.test/mcp",
	}
	a, err := h.env.Svc.Approvals.Request(h.t.Context(), approvals.Request{
		OwnerID: ownerID, Kind: approvals.KindOAuthConsent, Requester: d.ClientName, Summary: "Example Chat wants access to faxhub",
		Details: d, Binding: d, RequiresUV: uv, TTL: time.Hour,
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return a
}

func decisionOf(t *testing.T, h *harness, owner, id string) approvals.ConsentDecision {
	t.Helper()
	a, err := h.env.Svc.Approvals.Get(t.Context(), owner, id)
	if err != nil {
		t.Fatal(err)
	}
	var d approvals.ConsentDecision
	if err := json.Unmarshal(a.Decision, &d); err != nil {
		t.Fatalf("decision %s: %v", a.Decision, err)
	}
	return d
}

func TestConsentApprovalNarrowsScopes(t *testing.T) {
	h := newHarness(t)
	b, d := h.signUp("ada@example.com", "Ada")
	csrf := b.csrf()
	owner := h.ownerID("ada@example.com")
	a := h.consent(owner, false)

	ret := "/api/auth/oauth2/authorize/continue?approval=" + a.ID
	r := b.get("/console/approvals/" + a.ID + "?return=" + url.QueryEscape(ret))
	wantStatus(t, "consent page", r, 200)
	for _, want := range []string{"Example Chat", "https://chat.example", "chat.example", "https://faxhub.test/mcp",
		"See your faxes and whether they were delivered", "Send faxes, paid from your credits", `name="scope" value="fax:send" checked`} {
		if !strings.Contains(r.body, want) {
			t.Errorf("consent page lacks %q", want)
		}
	}
	// Widening is refused.
	r = b.form("/console/approvals/"+a.ID, url.Values{"csrf": {csrf}, "decision": {"approve"}, "binding": {a.BindingHash},
		"scope": {"fax:read", "credits:checkout"}, "return": {ret}})
	wantStatus(t, "widen scopes", r, http.StatusBadRequest)
	if !strings.Contains(r.body, "never widen") || h.status(owner, a.ID) != approvals.Pending {
		t.Fatalf("widening not refused clearly:\n%s", r.body)
	}
	// Narrowing is recorded and the owner goes back to the OAuth server.
	r = b.form("/console/approvals/"+a.ID, url.Values{"csrf": {csrf}, "decision": {"approve"}, "binding": {a.BindingHash},
		"scope": {"fax:read", "offline_access"}, "return": {ret}})
	wantStatus(t, "narrowed consent", r, http.StatusSeeOther)
	if loc := r.header.Get("Location"); loc != ret {
		t.Fatalf("redirect to %s, want %s", loc, ret)
	}
	if got := decisionOf(t, h, owner, a.ID); strings.Join(got.Scopes, " ") != "fax:read offline_access" {
		t.Fatalf("granted %v", got.Scopes)
	}

	// A consent that requires UV, approved with the passkey, narrowed.
	uv := h.consent(owner, true)
	begin, finish := approvalPaths(uv.ID)
	assertion, _ := b.assertion(d, begin, map[string]any{"binding": uv.BindingHash}, csrf)
	r = b.postJSON(finish, map[string]any{"credential": assertion, "scopes": []string{"fax:read", "fax:admin"}}, csrf)
	wantStatus(t, "widened UV consent", r, http.StatusBadRequest)
	assertion, _ = b.assertion(d, begin, map[string]any{"binding": uv.BindingHash}, csrf)
	r = b.postJSON(finish, map[string]any{"credential": assertion, "scopes": []string{"fax:send"}, "return": "https://evil.example/"}, csrf)
	wantStatus(t, "UV consent", r, 200)
	if r.json(t)["redirect"] != "/console/approvals?done=approved" {
		t.Fatalf("off-site return honoured: %s", r.body)
	}
	if got := decisionOf(t, h, owner, uv.ID); strings.Join(got.Scopes, " ") != "fax:send" {
		t.Fatalf("granted %v", got.Scopes)
	}

	// Declining needs no passkey and records no scopes.
	dec := h.consent(owner, true)
	r = b.form("/console/approvals/"+dec.ID, url.Values{"csrf": {csrf}, "decision": {"decline"}, "binding": {dec.BindingHash}})
	wantStatus(t, "decline", r, http.StatusSeeOther)
	if h.status(owner, dec.ID) != approvals.Declined {
		t.Fatal("not declined")
	}
}

func TestOpenRedirectsRefused(t *testing.T) {
	h := newHarness(t)
	b, d := h.signUp("ada@example.com", "Ada")
	csrf := b.csrf()
	owner := h.ownerID("ada@example.com")
	bad := []string{
		"https://evil.example/", "//evil.example/x", "/\\evil.example", "/%2f%2fevil.example", "javascript:alert(1)",
		"/console/../api/auth/x", "/api/authx", "/elsewhere", "/console/./x", " /console/", "/api/auth/\r\nLocation: x",
	}
	for _, ret := range bad {
		a := h.consent(owner, false)
		r := b.form("/console/approvals/"+a.ID, url.Values{"csrf": {csrf}, "decision": {"decline"}, "binding": {a.BindingHash}, "return": {ret}})
		if loc := r.header.Get("Location"); loc != "/console/approvals?done=declined" {
			t.Errorf("return %q: redirected to %q", ret, loc)
		}
		// The page does not carry it into its forms either.
		page := b.get("/console/approvals/" + h.consent(owner, false).ID + "?return=" + url.QueryEscape(ret))
		if strings.Contains(page.body, "evil.example") {
			t.Errorf("return %q echoed into the page", ret)
		}
	}
	for _, next := range []string{"https://evil.example/", "//evil.example", "/\\evil.example", "javascript:alert(1)"} {
		a, _ := h.browser().assertion(d, "/signin/begin", nil, "")
		r := h.browser().postJSON("/signin/finish", map[string]any{"credential": a, "next": next}, "")
		if got := r.json(t)["redirect"]; got != "/console" {
			t.Errorf("next %q: redirect %v", next, got)
		}
		if r := h.browser().get("/signin?next=" + url.QueryEscape(next)); strings.Contains(r.body, "evil.example") {
			t.Errorf("next %q echoed into the sign-in page", next)
		}
	}
	// A signed-out page visit comes back to where it was.
	r := h.browser().get("/console/keys?x=1")
	if loc := r.header.Get("Location"); loc != "/signin?next=%2Fconsole%2Fkeys%3Fx%3D1" {
		t.Fatalf("signed-out redirect %q", loc)
	}
}

func TestCrossOriginRequestsRefused(t *testing.T) {
	h := newHarness(t)
	b, _ := h.signUp("ada@example.com", "Ada")
	csrf := b.csrf()
	keysBefore, _ := h.env.Svc.Accounts.ListAPIKeys(t.Context(), h.ownerID("ada@example.com"))
	form := url.Values{"csrf": {csrf}, "mode": {"live"}, "name": {"x"}}.Encode()
	for name, hdr := range map[string]http.Header{
		"Sec-Fetch-Site cross-site": {"Sec-Fetch-Site": {"cross-site"}},
		"Sec-Fetch-Site same-site":  {"Sec-Fetch-Site": {"same-site"}},
		"foreign Origin":            {"Origin": {"https://evil.example"}},
	} {
		r := b.do("POST", "/console/keys", strings.NewReader(form), "application/x-www-form-urlencoded", hdr)
		wantStatus(t, name, r, http.StatusForbidden)
		r = b.do("POST", "/signup", strings.NewReader("email=x%40example.com"), "application/x-www-form-urlencoded", hdr)
		wantStatus(t, name+" (sign-up)", r, http.StatusForbidden)
	}
	// The console's own origin passes (behind a proxy Host differs).
	r := b.do("POST", "/console/keys", strings.NewReader(form), "application/x-www-form-urlencoded", http.Header{"Origin": {baseURL}, "Sec-Fetch-Site": {"same-origin"}})
	wantStatus(t, "same origin", r, 200)
	// Without the form token (an old browser that sends neither header).
	r = b.do("POST", "/console/keys", strings.NewReader("mode=live"), "application/x-www-form-urlencoded", nil)
	wantStatus(t, "no form token", r, http.StatusForbidden)
	r = b.do("POST", "/console/keys", strings.NewReader("mode=live&csrf=forged"), "application/x-www-form-urlencoded", nil)
	wantStatus(t, "forged form token", r, http.StatusForbidden)
	// Ceremony endpoints take JSON only, which cross-site forms cannot send.
	r = b.do("POST", "/signin/begin", strings.NewReader("{}"), "text/plain", nil)
	wantStatus(t, "text/plain ceremony", r, http.StatusUnsupportedMediaType)
	keysAfter, _ := h.env.Svc.Accounts.ListAPIKeys(t.Context(), h.ownerID("ada@example.com"))
	if len(keysAfter) != len(keysBefore)+1 {
		t.Fatalf("keys %d → %d, want exactly one created (the same-origin one)", len(keysBefore), len(keysAfter))
	}
}

func TestAPIKeysAndDashboard(t *testing.T) {
	h := newHarness(t)
	b, _ := h.signUp("ada@example.com", "Ada")
	csrf := b.csrf()
	owner := h.ownerID("ada@example.com")
	r := b.form("/console/keys", url.Values{"csrf": {csrf}, "mode": {"test"}, "name": {"Billing backend"}})
	wantStatus(t, "create key", r, 200)
	m := regexp.MustCompile(`value="(fxk_test_[a-z0-9]+)"`).FindStringSubmatch(r.body)
	if m == nil {
		t.Fatalf("secret not shown:\n%s", r.body)
	}
	p, err := h.env.Svc.Accounts.AuthenticateAPIKey(t.Context(), m[1])
	if err != nil || p.OwnerID != owner {
		t.Fatalf("created key: %+v %v", p, err)
	}
	page := b.get("/console/keys")
	if strings.Contains(page.body, m[1]) || !strings.Contains(page.body, "Billing backend") {
		t.Fatal("keys page shows the secret again or lacks the key")
	}
	wantStatus(t, "bad mode", b.form("/console/keys", url.Values{"csrf": {csrf}, "mode": {"prod"}}), http.StatusBadRequest)
	keys, _ := h.env.Svc.Accounts.ListAPIKeys(t.Context(), owner)
	wantStatus(t, "revoke", b.form("/console/keys/"+keys[0].ID+"/revoke", url.Values{"csrf": {csrf}}), http.StatusSeeOther)
	if _, err := h.env.Svc.Accounts.AuthenticateAPIKey(t.Context(), m[1]); err == nil {
		t.Fatal("revoked key still works")
	}

	// Balances per mode and recent faxes with their state.
	if _, err := h.env.Svc.Credits.Grant(t.Context(), owner, core.ModeTest, 12_340_000, "test"); err != nil {
		t.Fatal(err)
	}
	fax := h.fax(owner, core.ModeTest, faxes.Delivered)
	r = b.get("/console?mode=test")
	r.body = html.UnescapeString(r.body)
	for _, want := range []string{"$12.34", fax.ID, "state-delivered", "+14155550123"} {
		if !strings.Contains(r.body, want) {
			t.Errorf("dashboard lacks %q", want)
		}
	}
	r = b.get("/console?mode=live")
	if strings.Contains(r.body, fax.ID) {
		t.Error("a test fax shows in live mode")
	}
	wantStatus(t, "bad mode", b.get("/console?mode=prod"), http.StatusBadRequest)
}

// fax stores a fax directly, as the send path would have.
func (h *harness) fax(ownerID string, mode core.Mode, status faxes.Status) *faxes.Fax {
	h.t.Helper()
	ctx := h.t.Context()
	now := time.Now().UTC().Truncate(time.Microsecond)
	doc := &documents.Document{ID: core.NewID(core.PrefixDocument), OwnerID: ownerID, Mode: mode, SourceType: "application/pdf",
		SourceBytes: 100, SourceKey: "k", PDFKey: "k", PDFBytes: 100, Pages: 2, SHA256: "00", CreatedAt: now}
	if err := h.env.Store.CreateDocument(ctx, doc); err != nil {
		h.t.Fatal(err)
	}
	o := &faxes.Fax{ID: core.NewID(core.PrefixFax), OwnerID: ownerID, Mode: mode, Status: status, To: "+14155550123",
		DocumentID: doc.ID, Pages: 2, PriceMicros: 420_000, Currency: core.Currency, PaymentMethod: faxes.PayCredits,
		CreatedAt: now, UpdatedAt: now}
	if err := h.env.Store.CreateFax(ctx, o); err != nil {
		h.t.Fatal(err)
	}
	return o
}

func TestOwnersAreIsolated(t *testing.T) {
	h := newHarness(t)
	alice, aliceDev := h.signUp("alice@example.com", "Alice")
	bob, _ := h.signUp("bob@example.com", "Bob")
	aliceID, bobID := h.ownerID("alice@example.com"), h.ownerID("bob@example.com")
	bobCSRF := bob.csrf()

	apr := h.verifiedAction(aliceID)
	con := h.consent(aliceID, false)
	fax := h.fax(aliceID, core.ModeTest, faxes.Queued)
	alice.form("/console/keys", url.Values{"csrf": {alice.csrf()}, "mode": {"live"}, "name": {"alice-secret-key"}})
	aliceKeys, _ := h.env.Svc.Accounts.ListAPIKeys(t.Context(), aliceID)
	h.grants.add(core.Grant{ID: "grt_alice", OwnerID: aliceID, ClientName: "Alice's Chat", Scopes: []string{"fax:read"}})
	h.grants.add(core.Grant{ID: "grt_bob", OwnerID: bobID, ClientName: "Bob's Chat", Scopes: []string{"fax:read"}})

	// Bob sees none of it.
	for path, secret := range map[string]string{
		"/console/approvals": apr.ID, "/console?mode=test": fax.ID, "/console/keys": "alice-secret-key", "/console/apps": "Alice's Chat",
	} {
		r := bob.get(path)
		wantStatus(t, "bob "+path, r, 200)
		if strings.Contains(r.body, secret) || strings.Contains(r.body, strings.ReplaceAll(secret, "'", "&#39;")) {
			t.Errorf("bob sees %q on %s", secret, path)
		}
	}
	if r := bob.get("/console/apps"); !strings.Contains(r.body, "Bob&#39;s Chat") {
		t.Errorf("bob's own grant is missing:\n%s", r.body)
	}
	wantStatus(t, "bob opens alice's approval", bob.get("/console/approvals/"+apr.ID), http.StatusNotFound)

	// Bob cannot decide Alice's approvals, by form or by passkey.
	r := bob.form("/console/approvals/"+con.ID, url.Values{"csrf": {bobCSRF}, "decision": {"approve"}, "binding": {con.BindingHash}, "scope": {"fax:read"}})
	wantStatus(t, "bob approves alice's consent", r, http.StatusNotFound)
	r = bob.form("/console/approvals/"+apr.ID, url.Values{"csrf": {bobCSRF}, "decision": {"decline"}, "binding": {apr.BindingHash}})
	wantStatus(t, "bob declines alice's approval", r, http.StatusNotFound)
	begin, finish := approvalPaths(apr.ID)
	wantStatus(t, "bob asks for alice's approval prompt", bob.postJSON(begin, map[string]any{"binding": apr.BindingHash}, bobCSRF), http.StatusNotFound)
	// Even with a prompt Alice got, Bob's session cannot use it.
	aliceCSRF := alice.csrf()
	assertion, _ := alice.assertion(aliceDev, begin, map[string]any{"binding": apr.BindingHash}, aliceCSRF)
	r = bob.postJSON(finish, map[string]any{"credential": assertion}, bobCSRF)
	wantStatus(t, "bob finishes alice's prompt", r, http.StatusForbidden)
	// Nor can Alice's passkey approve for Bob's account: it is not his.
	bobApr := h.verifiedAction(bobID)
	bBegin, bFinish := approvalPaths(bobApr.ID)
	opts := bob.postJSON(bBegin, map[string]any{"binding": bobApr.BindingHash}, bobCSRF)
	ao, err := virtualwebauthn.ParseAssertionOptions(opts.body)
	if err != nil {
		t.Fatal(err)
	}
	forged := virtualwebauthn.CreateAssertionResponse(rp, aliceDev.Auth, aliceDev.Cred, *ao)
	r = bob.postJSON(bFinish, map[string]any{"credential": json.RawMessage(forged)}, bobCSRF)
	wantCode(t, "alice's passkey on bob's approval", r, http.StatusForbidden, "passkey_invalid")
	for _, id := range []string{apr.ID, con.ID} {
		if h.status(aliceID, id) != approvals.Pending {
			t.Errorf("bob decided alice's approval %s", id)
		}
	}
	if h.status(bobID, bobApr.ID) != approvals.Pending {
		t.Error("alice's passkey approved bob's request")
	}

	// Keys and grants.
	wantStatus(t, "bob revokes alice's key", bob.form("/console/keys/"+aliceKeys[0].ID+"/revoke", url.Values{"csrf": {bobCSRF}}), http.StatusNotFound)
	wantStatus(t, "bob revokes alice's grant", bob.form("/console/apps/grt_alice/revoke", url.Values{"csrf": {bobCSRF}}), http.StatusNotFound)
	if ks, _ := h.env.Svc.Accounts.ListAPIKeys(t.Context(), aliceID); ks[0].RevokedAt != nil {
		t.Error("bob revoked alice's key")
	}
	if !h.grants.has("grt_alice") {
		t.Error("bob revoked alice's grant")
	}
	// Bob's passkeys are his own to manage.
	aliceKeysPK, _ := h.env.DB.ListPasskeys(t.Context(), aliceID)
	wantStatus(t, "bob renames alice's passkey", bob.form("/console/account/passkeys/"+aliceKeysPK[0].ID+"/rename", url.Values{"csrf": {bobCSRF}, "name": {"mine"}}), http.StatusNotFound)
	wantStatus(t, "bob's form token on alice's session", alice.form("/console/account/signout-all", url.Values{"csrf": {bobCSRF}}), http.StatusForbidden)
}

func TestAppsPage(t *testing.T) {
	h := newHarness(t)
	b, _ := h.signUp("ada@example.com", "Ada")
	owner := h.ownerID("ada@example.com")
	r := b.get("/console/apps")
	if !strings.Contains(r.body, "No apps are connected") {
		t.Fatal("empty apps page")
	}
	used := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	h.grants.add(core.Grant{ID: "grt_1", OwnerID: owner, ClientName: "Example Chat", ClientURI: "https://chat.example",
		Scopes: []string{"fax:read", "offline_access"}, CreatedAt: used, LastUsedAt: &used})
	r = b.get("/console/apps")
	for _, want := range []string{"Example Chat", "See your faxes and whether they were delivered", "Stay connected", "1 May 2026, 10:00 UTC"} {
		if !strings.Contains(r.body, want) {
			t.Errorf("apps page lacks %q", want)
		}
	}
	wantStatus(t, "revoke", b.form("/console/apps/grt_1/revoke", url.Values{"csrf": {b.csrf()}}), http.StatusSeeOther)
	if h.grants.has("grt_1") {
		t.Fatal("not revoked")
	}
}

func TestPagesAreAccessibleAndSafe(t *testing.T) {
	h := newHarness(t)
	b, _ := h.signUp("ada@example.com", "Ada")
	for _, p := range []string{"/console", "/console/keys", "/console/apps", "/console/approvals", "/console/account", "/console/hosts", "/console/device", "/console/numbers", "/console/inbox", "/console/fax-settings", "/console/send"} {
		r := b.get(p)
		wantStatus(t, p, r, 200)
		for _, want := range []string{`<html lang="en">`, `name="viewport"`, "<h1", `<main id="main"`, `aria-current="page"`} {
			if !strings.Contains(r.body, want) {
				t.Errorf("%s lacks %s", p, want)
			}
		}
		if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s CSP %q", p, csp)
		}
	}
	anon := h.browser()
	for _, p := range []string{"/signin", "/signup", "/recover", "/console/static/console.css", "/console/static/webauthn.js", "/console/static/send.js", "/console/static/fax.js"} {
		wantStatus(t, p, anon.get(p), 200)
	}
	wantStatus(t, "unknown page", anon.get("/console/nope"), http.StatusNotFound)
	wantStatus(t, "unknown top page", anon.get("/signup/nope"), http.StatusNotFound)
}

// grantDir is an in-memory GrantDirectory standing in for the OAuth
// server, which scopes grants by owner the same way.
type grantDir struct {
	mu     sync.Mutex
	grants []core.Grant
}

func (g *grantDir) add(gr core.Grant) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.grants = append(g.grants, gr)
}

func (g *grantDir) has(id string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, gr := range g.grants {
		if gr.ID == id {
			return true
		}
	}
	return false
}

func (g *grantDir) ListGrants(_ context.Context, ownerID string) ([]core.Grant, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []core.Grant
	for _, gr := range g.grants {
		if gr.OwnerID == ownerID {
			out = append(out, gr)
		}
	}
	return out, nil
}

func (g *grantDir) RevokeGrant(_ context.Context, ownerID, id string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, gr := range g.grants {
		if gr.ID == id && gr.OwnerID == ownerID {
			g.grants = append(g.grants[:i], g.grants[i+1:]...)
			return nil
		}
	}
	return core.Errorf(core.KindNotFound, core.CodeNotFound, "grant not found")
}
