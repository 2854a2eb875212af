package passkeys_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/mail"
	"github.com/faxhub/faxhub/core/web"
	"github.com/faxhub/faxhub/internal/testenv"
	"github.com/faxhub/faxhub/oauth"
	"github.com/faxhub/faxhub/passkeys"
)

// newAgentsHarness is newHarness with the real OAuth server as the
// console's agent directory; as is the OAuth server's handler.
func newAgentsHarness(t *testing.T) (*harness, http.Handler) {
	t.Helper()
	env := testenv.New(t)
	srv, err := oauth.New(env.Svc, env.DB, oauth.Options{BaseURL: baseURL})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, env: env, mailbox: mail.NewMailbox(nil, 0), grants: &grantDir{}}
	con := passkeys.New(env.Svc, env.DB, passkeys.Options{
		BaseURL: baseURL, DevMailbox: true, Mailer: h.mailbox, Grants: h.grants,
	})
	if err := con.Err(); err != nil {
		t.Fatal(err)
	}
	mux := routed(con, env.Svc)
	h.srv = httptest.NewTLSServer(mux)
	t.Cleanup(h.srv.Close)
	as := web.NewRouter(web.Origins{web.OriginBase: baseURL, web.OriginAPI: baseURL})
	srv.Register(as)
	return h, as
}

var enrollmentRe = regexp.MustCompile(`fxe_[A-Za-z0-9_-]+`)

// registerAgent registers a service_auth agent with the API and returns
// the claim link's path and the user code.
func registerAgent(t *testing.T, as http.Handler, token, email string) (string, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"type": "service_auth", "enrollment_token": token, "login_hint": email})
	req := httptest.NewRequest(http.MethodPost, oauth.PathAgentIdentity, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	as.ServeHTTP(rec, req)
	if rec.Code != http.StatusCreated {
		t.Fatalf("register: %d %s", rec.Code, rec.Body)
	}
	var m struct {
		Claim struct {
			UserCode        string `json:"user_code"`
			VerificationURI string `json:"verification_uri"`
		} `json:"claim"`
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &m)
	u, _ := url.Parse(m.Claim.VerificationURI)
	return u.Path, m.Claim.UserCode
}

func (b *browser) enroll(name string, scopes ...string) string {
	b.h.t.Helper()
	r := b.form("/console/agents", url.Values{"csrf": {b.csrf()}, "name": {name}, "scope": scopes})
	wantStatus(b.h.t, "create enrollment token", r, http.StatusOK)
	tok := enrollmentRe.FindString(r.body)
	if tok == "" {
		b.h.t.Fatalf("no token shown:\n%s", r.body)
	}
	return tok
}

func TestAgentAccessPageAndClaim(t *testing.T) {
	h, as := newAgentsHarness(t)
	b, _ := h.signUp("ada@example.com", "Ada")
	r := b.get("/console/agents")
	wantStatus(t, "agents page", r, http.StatusOK)
	if !strings.Contains(r.body, "Agent access") || !strings.Contains(r.body, "No unused tokens") {
		t.Fatalf("empty agents page:\n%s", r.body)
	}
	tok := b.enroll("Office bot", "fax:read", "fax:draft")
	if r := b.get("/console/agents"); strings.Contains(r.body, tok) || !strings.Contains(r.body, "Office bot") {
		t.Fatal("the token is shown again, or not listed")
	}
	path, code := registerAgent(t, as, tok, "ada@example.com")
	if !strings.HasPrefix(path, core.LinkClaimPage.PathPrefix()) || strings.Contains(path, code) {
		t.Fatalf("claim link %q", path)
	}
	r = b.get(path)
	wantStatus(t, "claim page", r, http.StatusOK)
	for _, want := range []string{"Office bot", `value="fax:draft" checked`, "Code from the agent"} {
		if !strings.Contains(r.body, want) {
			t.Errorf("claim page lacks %q", want)
		}
	}
	if r.header.Get("Cache-Control") != "no-store" {
		t.Error("claim page is cacheable")
	}
	wrong := "000000"
	if code == wrong {
		wrong = "111111"
	}
	r = b.form(path, url.Values{"csrf": {b.csrf()}, "decision": {"approve"}, "user_code": {wrong}, "scope": {"fax:read"}})
	if r.status != http.StatusBadRequest || !strings.Contains(r.body, "does not match") {
		t.Fatalf("wrong code: %d\n%s", r.status, r.body)
	}
	r = b.form(path, url.Values{"csrf": {b.csrf()}, "decision": {"approve"}, "user_code": {code}, "scope": {"fax:read", "fax:send"}})
	if r.status != http.StatusForbidden || !strings.Contains(r.body, "narrowed") {
		t.Fatalf("widening: %d\n%s", r.status, r.body)
	}
	r = b.form(path, url.Values{"csrf": {b.csrf()}, "decision": {"approve"}, "user_code": {code}, "scope": {"fax:read"}})
	if r.status != http.StatusOK || !strings.Contains(r.body, "Approved") {
		t.Fatalf("approve: %d\n%s", r.status, r.body)
	}
	r = b.get(path)
	if r.status != http.StatusNotFound || !strings.Contains(r.body, "no longer") {
		t.Fatalf("old link: %d\n%s", r.status, r.body)
	}
	// The registration is listed and can be revoked.
	r = b.get("/console/agents")
	m := regexp.MustCompile(`/console/agents/registrations/(agr_[A-Za-z0-9]+)/revoke`).FindStringSubmatch(r.body)
	if m == nil {
		t.Fatalf("registration not listed:\n%s", r.body)
	}
	wantStatus(t, "revoke registration", b.form(m[0], url.Values{"csrf": {b.csrf()}}), http.StatusSeeOther)
	if r := b.get("/console/agents"); !strings.Contains(r.body, "revoked") {
		t.Fatal("registration not shown revoked")
	}
}

func TestAgentClaimWrongAccountAndRevokedToken(t *testing.T) {
	h, as := newAgentsHarness(t)
	ada, _ := h.signUp("ada@example.com", "Ada")
	bob, _ := h.signUp("bob@example.com", "Bob")
	path, _ := registerAgent(t, as, ada.enroll("Bot"), "ada@example.com")
	r := bob.get(path)
	if r.status != http.StatusForbidden || !strings.Contains(r.body, "another account") {
		t.Fatalf("wrong account: %d\n%s", r.status, r.body)
	}
	r = ada.get("/agent/claim/fxt_unknown")
	if r.status != http.StatusNotFound || !strings.Contains(r.body, "no longer valid") {
		t.Fatalf("unknown link: %d\n%s", r.status, r.body)
	}
	// Declining from the page.
	r = ada.form(path, url.Values{"csrf": {ada.csrf()}, "decision": {"decline"}})
	if r.status != http.StatusOK || !strings.Contains(r.body, "Declined") {
		t.Fatalf("decline: %d\n%s", r.status, r.body)
	}
	// Revoking an unused token.
	ada.enroll("Second bot")
	r = ada.get("/console/agents")
	m := regexp.MustCompile(`/console/agents/enrollments/(aen_[A-Za-z0-9]+)/revoke`).FindStringSubmatch(r.body)
	if m == nil {
		t.Fatalf("token not listed:\n%s", r.body)
	}
	wantStatus(t, "revoke token", ada.form(m[0], url.Values{"csrf": {ada.csrf()}}), http.StatusSeeOther)
	if r := ada.get("/console/agents"); !strings.Contains(r.body, "No unused tokens") {
		t.Fatal("revoked token still listed")
	}
}

func TestAgentClaimInInbox(t *testing.T) {
	h, as := newAgentsHarness(t)
	ada, _ := h.signUp("ada@example.com", "Ada")
	path, _ := registerAgent(t, as, ada.enroll("Inbox bot"), "ada@example.com")
	owner := h.ownerID("ada@example.com")
	pend, err := h.env.Svc.Approvals.ListPending(t.Context(), owner)
	if err != nil || len(pend) != 1 {
		t.Fatalf("inbox = %+v, %v", pend, err)
	}
	a := pend[0]
	if r := ada.get("/console/approvals"); !strings.Contains(r.body, "Inbox bot") {
		t.Fatal("the claim is not in the inbox")
	}
	// Approving needs the code at the agent's link.
	r := ada.form("/console/approvals/"+a.ID, url.Values{"csrf": {ada.csrf()}, "decision": {"approve"}, "binding": {a.BindingHash}})
	if r.status != http.StatusBadRequest || !strings.Contains(r.body, "six-digit code") {
		t.Fatalf("inbox approve: %d\n%s", r.status, r.body)
	}
	// Declining in the inbox declines the claim.
	wantStatus(t, "inbox decline", ada.form("/console/approvals/"+a.ID, url.Values{"csrf": {ada.csrf()}, "decision": {"decline"}, "binding": {a.BindingHash}}), http.StatusSeeOther)
	if r := ada.get(path); r.status != http.StatusNotFound {
		t.Fatalf("claim link after inbox decline: %d\n%s", r.status, r.body)
	}
}
