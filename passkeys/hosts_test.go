package passkeys_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/hosts"
	"github.com/faxhub/faxhub/core/mail"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/internal/testenv"
	"github.com/faxhub/faxhub/passkeys"
)

// clock is an injected core clock the test moves by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Now().UTC().Truncate(time.Second)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// newHostsHarness is newHarness on a test environment with options (a
// clock, the agent mode).
func newHostsHarness(t *testing.T, opts ...testenv.Option) *harness {
	t.Helper()
	env := testenv.New(t, opts...)
	h := &harness{t: t, env: env, mailbox: mail.NewMailbox(nil, 0), grants: &grantDir{}}
	con := passkeys.New(env.Svc, env.DB, passkeys.Options{BaseURL: baseURL, DevMailbox: true, Mailer: h.mailbox, Grants: h.grants})
	if err := con.Err(); err != nil {
		t.Fatal(err)
	}
	h.console = con
	mux := routed(con, env.Svc)
	h.srv = httptest.NewTLSServer(mux)
	t.Cleanup(h.srv.Close)
	return h
}

// publicJWK is a fresh Ed25519 public JWK, as a host would paste it.
func publicJWK(t *testing.T) string {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return `{"kty":"OKP","crv":"Ed25519","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}`
}

func parsedJWK(t *testing.T) hosts.PublicJWK {
	t.Helper()
	k, err := hosts.ParsePublicJWK(json.RawMessage(publicJWK(t)))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// addHost creates a host through the Hosts form and returns the page.
func (b *browser) addHost(name, key string, caps ...hosts.Capability) reply {
	b.h.t.Helper()
	v := url.Values{"csrf": {b.csrf()}, "name": {name}, "public_key": {key}}
	for _, c := range caps {
		v.Add("capability", string(c))
	}
	return b.form("/console/hosts", v)
}

// hostNamed is the owner's host called name, with its agents.
func (h *harness) hostNamed(owner, name string) hosts.WithAgents {
	h.t.Helper()
	hs, err := h.env.Svc.Hosts.List(h.t.Context(), owner)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, x := range hs {
		if x.Host.Name == name {
			return x
		}
	}
	h.t.Fatalf("no host %q in %+v", name, hs)
	return hosts.WithAgents{}
}

// keyedHost creates a host with a key through the page and returns it as
// the verifier would find it.
func (h *harness) keyedHost(b *browser, owner, name string, caps ...hosts.Capability) *hosts.Host {
	h.t.Helper()
	wantStatus(h.t, "create host "+name, b.addHost(name, publicJWK(h.t), caps...), http.StatusOK)
	host, err := h.env.Svc.Hosts.HostForJWT(h.t.Context(), h.hostNamed(owner, name).Host.ID)
	if err != nil {
		h.t.Fatal(err)
	}
	return host
}

func (h *harness) registerDelegated(host *hosts.Host, name string, caps ...hosts.Capability) *hosts.AgentView {
	h.t.Helper()
	v, err := h.env.Svc.Hosts.RegisterAgent(h.t.Context(), host, hosts.AgentRequest{
		Name: name, Mode: "delegated", PreferredMethod: "device_authorization", Capabilities: caps, AgentKey: parsedJWK(h.t),
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return v
}

func (h *harness) delegatedAgent(owner, hostName, id string) hosts.Agent {
	h.t.Helper()
	for _, a := range h.hostNamed(owner, hostName).Agents {
		if a.ID == id {
			return a
		}
	}
	h.t.Fatalf("no agent %s under %s", id, hostName)
	return hosts.Agent{}
}

// localURL is the path and query of an absolute link.
func localURL(t *testing.T, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	return u.RequestURI()
}

func TestHostsPageCreateAndList(t *testing.T) {
	h := newHostsHarness(t)
	b, _ := h.signUp("ada@example.com", "Ada")
	owner := h.ownerID("ada@example.com")

	r := b.get("/console/hosts")
	wantStatus(t, "hosts page", r, http.StatusOK)
	for _, want := range []string{"<h1>Hosts</h1>", `href="/console/hosts" aria-current="page"`, "No hosts yet", `name="public_key"`, "every fax asks for your passkey"} {
		if !strings.Contains(r.body, want) {
			t.Errorf("hosts page lacks %q", want)
		}
	}
	for _, c := range hosts.Capabilities() {
		if !strings.Contains(r.body, `value="`+string(c)+`" >`) {
			t.Errorf("capability %s missing or ticked by default", c)
		}
	}

	// With a key: the host id, then listed with its thumbprint.
	key := publicJWK(t)
	r = b.addHost("Office server", key, hosts.CapGetCredits)
	wantStatus(t, "create with key", r, http.StatusOK)
	hw := h.hostNamed(owner, "Office server")
	if hw.Host.Status != hosts.Active || hw.Host.Thumbprint == nil || !strings.Contains(r.body, hw.Host.ID) {
		t.Fatalf("host %+v; page:\n%s", hw.Host, r.body)
	}
	if !slices.Equal(hw.Host.DefaultCapabilities, []hosts.Capability{hosts.CapGetCredits}) {
		t.Errorf("defaults %v", hw.Host.DefaultCapabilities)
	}
	r = b.get("/console/hosts")
	for _, want := range []string{"Office server", hw.Host.ID, *hw.Host.Thumbprint, "active", "get_credits", "Revoke host Office server"} {
		if !strings.Contains(r.body, want) {
			t.Errorf("list lacks %q", want)
		}
	}

	// Without a key: the enrollment token once, with the enroll call.
	r = b.addHost("Laptop", "")
	wantStatus(t, "create without key", r, http.StatusOK)
	tok := regexp.MustCompile(regexp.QuoteMeta(core.SecretHostEnrollment) + `[A-Za-z0-9_-]+`).FindString(r.body)
	if tok == "" {
		t.Fatalf("no enrollment token shown:\n%s", r.body)
	}
	body := html.UnescapeString(r.body)
	for _, want := range []string{"curl -sS -X POST 'http://faxhub.test/api/auth/host/enroll'", `"token":"` + tok + `"`, `"name":"Laptop"`, "expires"} {
		if !strings.Contains(body, want) {
			t.Errorf("enroll instructions lack %q", want)
		}
	}
	lap := h.hostNamed(owner, "Laptop").Host
	if lap.Status != hosts.PendingEnrollment || lap.EnrollmentHash == nil || strings.Contains(*lap.EnrollmentHash, tok) || strings.Contains(*lap.EnrollmentHash, strings.TrimPrefix(tok, core.SecretHostEnrollment)) {
		t.Fatalf("token not stored hashed: %+v", lap)
	}
	r = b.get("/console/hosts")
	if strings.Contains(r.body, tok) || !strings.Contains(r.body, "waiting for enrollment") {
		t.Fatal("the enrollment token is shown again, or the host is not listed as waiting")
	}
	if _, err := h.env.Svc.Hosts.Enroll(t.Context(), tok, json.RawMessage(publicJWK(t)), "Laptop"); err != nil {
		t.Fatalf("enroll with the shown token: %v", err)
	}
	if r := b.get("/console/hosts"); strings.Contains(r.body, "waiting for enrollment") {
		t.Error("the enrolled host still reads as waiting")
	}

	// Revoking a host that waits for enrollment kills its token.
	r = b.addHost("Spare", "")
	spareTok := regexp.MustCompile(regexp.QuoteMeta(core.SecretHostEnrollment) + `[A-Za-z0-9_-]+`).FindString(r.body)
	spare := h.hostNamed(owner, "Spare").Host
	wantStatus(t, "revoke pending host", b.form("/console/hosts/"+spare.ID+"/revoke", url.Values{"csrf": {b.csrf()}, "confirm": {"yes"}}), http.StatusSeeOther)
	if _, err := h.env.Svc.Hosts.Enroll(t.Context(), spareTok, json.RawMessage(publicJWK(t)), "Spare"); err == nil {
		t.Fatal("the token of a revoked host still enrolls")
	}
}

func TestHostsPageErrors(t *testing.T) {
	h := newHostsHarness(t)
	b, _ := h.signUp("ada@example.com", "Ada")
	owner := h.ownerID("ada@example.com")
	key := publicJWK(t)
	wantStatus(t, "first host", b.addHost("One", key), http.StatusOK)

	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	private := `{"kty":"OKP","crv":"Ed25519","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `","d":"` + base64.RawURLEncoding.EncodeToString(priv.Seed()) + `"}`
	for _, tc := range []struct {
		name, host, key string
		status          int
		want            string
	}{
		{"not JSON", "Two", "ssh-ed25519 AAAA", http.StatusBadRequest, "not JSON"},
		{"RSA key", "Two", `{"kty":"RSA","n":"AQAB","e":"AQAB"}`, http.StatusBadRequest, "Ed25519 public JWK"},
		{"private key", "Two", private, http.StatusBadRequest, "never its private key"},
		{"key in use", "Two", key, http.StatusConflict, "key pair of its own"},
		{"no name", "", publicJWK(t), http.StatusBadRequest, "Give the host a name"},
		{"control characters", "Two\x07", publicJWK(t), http.StatusBadRequest, "plain text"},
		{"huge key", "Two", strings.Repeat("x", 5000), http.StatusBadRequest, "too long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := b.addHost(tc.host, tc.key, hosts.CapValidateFax)
			wantStatus(t, tc.name, r, tc.status)
			if body := html.UnescapeString(r.body); !strings.Contains(body, tc.want) || !strings.Contains(body, `role="alert"`) {
				t.Fatalf("%s: lacks %q:\n%s", tc.name, tc.want, r.body)
			}
			if tc.host != "" && !strings.Contains(r.body, `value="validate_fax" checked`) {
				t.Error("the form lost what was ticked")
			}
		})
	}
	if hs, _ := h.env.Svc.Hosts.List(t.Context(), owner); len(hs) != 1 {
		t.Fatalf("a refused form created a host: %d hosts", len(hs))
	}

	// No form token: refused, nothing created.
	r := b.form("/console/hosts", url.Values{"name": {"Sneaky"}})
	wantStatus(t, "no csrf", r, http.StatusForbidden)
	r = b.form("/console/hosts", url.Values{"name": {"Sneaky"}, "csrf": {"forged"}})
	wantStatus(t, "forged csrf", r, http.StatusForbidden)
	if hs, _ := h.env.Svc.Hosts.List(t.Context(), owner); len(hs) != 1 {
		t.Fatal("a form without its token created a host")
	}
	// Signed out: refused.
	wantStatus(t, "signed out", h.browser().form("/console/hosts", url.Values{"name": {"X"}}), http.StatusUnauthorized)
}

func TestHostRevokeStopsAgents(t *testing.T) {
	h := newHostsHarness(t)
	b, _ := h.signUp("ada@example.com", "Ada")
	bob, _ := h.signUp("bob@example.com", "Bob")
	owner := h.ownerID("ada@example.com")
	host := h.keyedHost(b, owner, "Server", hosts.CapGetCredits, hosts.CapValidateFax)
	one := h.registerDelegated(host, "Reader", hosts.CapGetCredits)
	two := h.registerDelegated(host, "Checker", hosts.CapValidateFax)
	three := h.registerDelegated(host, "Asker", hosts.CapSendFax) // waits for the owner
	if one.Agent.Status != hosts.AgentActive || three.Agent.Status != hosts.AgentPending {
		t.Fatalf("statuses %s %s", one.Agent.Status, three.Agent.Status)
	}
	r := b.get("/console/hosts")
	for _, want := range []string{"Reader", one.Agent.ID, "Checker", "Asker", "waiting for your approval", "All its agents stop (3 now)"} {
		if !strings.Contains(r.body, want) {
			t.Errorf("hosts page lacks %q", want)
		}
	}

	// Another owner cannot revoke them.
	wantStatus(t, "bob revokes ada's agent", bob.form("/console/hosts/agents/"+one.Agent.ID+"/revoke", url.Values{"csrf": {bob.csrf()}}), http.StatusNotFound)
	wantStatus(t, "bob revokes ada's host", bob.form("/console/hosts/"+host.ID+"/revoke", url.Values{"csrf": {bob.csrf()}, "confirm": {"yes"}}), http.StatusNotFound)

	// One agent.
	r = b.form("/console/hosts/agents/"+one.Agent.ID+"/revoke", url.Values{"csrf": {b.csrf()}})
	wantStatus(t, "revoke agent", r, http.StatusSeeOther)
	if got := h.delegatedAgent(owner, "Server", one.Agent.ID); got.Status != hosts.AgentRevoked {
		t.Fatalf("agent %s", got.Status)
	}
	if got := h.delegatedAgent(owner, "Server", two.Agent.ID); got.Status != hosts.AgentActive {
		t.Fatalf("the other agent %s", got.Status)
	}
	if _, err := h.env.Svc.Hosts.DelegatedAgentForJWT(t.Context(), host, one.Agent.ID); core.ErrorCode(err) != hosts.CodeAgentRevoked {
		t.Fatalf("revoked agent still usable: %v", err)
	}
	if r := b.get(r.header.Get("Location")); !strings.Contains(r.body, "Agent revoked") {
		t.Error("no notice after revoking an agent")
	}

	// The host: only with the confirmation, then every agent stops.
	r = b.form("/console/hosts/"+host.ID+"/revoke", url.Values{"csrf": {b.csrf()}})
	wantStatus(t, "revoke host unconfirmed", r, http.StatusBadRequest)
	if h.hostNamed(owner, "Server").Host.Status != hosts.Active {
		t.Fatal("revoked without confirmation")
	}
	r = b.form("/console/hosts/"+host.ID+"/revoke", url.Values{"csrf": {b.csrf()}, "confirm": {"yes"}})
	wantStatus(t, "revoke host", r, http.StatusSeeOther)
	hw := h.hostNamed(owner, "Server")
	if hw.Host.Status != hosts.Revoked {
		t.Fatalf("host %s", hw.Host.Status)
	}
	for _, a := range hw.Agents {
		if a.Status != hosts.AgentRevoked {
			t.Errorf("agent %s is %s after its host was revoked", a.Name, a.Status)
		}
	}
	if _, err := h.env.Svc.Hosts.HostForJWT(t.Context(), host.ID); core.ErrorCode(err) != hosts.CodeHostRevoked {
		t.Fatalf("revoked host still found: %v", err)
	}
	r = b.get("/console/hosts")
	if strings.Contains(r.body, "/console/hosts/"+host.ID+"/revoke") || strings.Contains(r.body, "/console/hosts/agents/"+two.Agent.ID+"/revoke") {
		t.Error("revoke buttons remain on a revoked host")
	}
}

// devicePage is the path of an agent's verification_uri_complete.
func devicePage(t *testing.T, v *hosts.AgentView) string {
	t.Helper()
	if v.Approval == nil {
		t.Fatalf("agent %s has no device approval", v.Agent.ID)
	}
	p := localURL(t, v.Approval.VerificationURIComplete)
	if !strings.HasPrefix(p, core.LinkDevicePage.Path()+"?") {
		t.Fatalf("verification_uri_complete %q", v.Approval.VerificationURIComplete)
	}
	return p
}

func wrongCode(code string) string {
	if code == "BCDF-GHJK" {
		return "CDFG-HJKL"
	}
	return "BCDF-GHJK"
}

func TestDevicePageApproveNarrowed(t *testing.T) {
	h := newHostsHarness(t)
	ada, _ := h.signUp("ada@example.com", "Ada")
	bob, _ := h.signUp("bob@example.com", "Bob")
	owner := h.ownerID("ada@example.com")
	host := h.keyedHost(ada, owner, "Studio")
	v := h.registerDelegated(host, "Fax helper", hosts.CapValidateFax, hosts.CapGetCredits, hosts.CapSendFax)
	page := devicePage(t, v)

	// Signed out: to sign-in and back.
	r := h.browser().get(page)
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/signin?next="+url.QueryEscape(page) {
		t.Fatalf("signed out: %d %s", r.status, r.header.Get("Location"))
	}
	// Another account: not found, nothing shown.
	r = bob.get(page)
	if r.status != http.StatusNotFound || strings.Contains(r.body, "Fax helper") {
		t.Fatalf("bob: %d\n%s", r.status, r.body)
	}
	r = bob.form(core.LinkDevicePage.Path(), url.Values{"csrf": {bob.csrf()}, "agent_id": {v.Agent.ID}, "user_code": {v.Approval.UserCode}, "decision": {"approve"}, "capability": {"validate_fax"}})
	wantStatus(t, "bob approves", r, http.StatusNotFound)
	// Without agent_id: asks for the full link.
	if r := ada.get(core.LinkDevicePage.Path()); r.status != http.StatusOK || !strings.Contains(r.body, "full link") {
		t.Fatalf("bare verification_uri: %d\n%s", r.status, r.body)
	}

	r = ada.get(page)
	wantStatus(t, "device page", r, http.StatusOK)
	for _, want := range []string{"Studio", "Fax helper", `value="validate_fax" checked`, `value="send_fax" checked`, `value="` + v.Approval.UserCode + `"`, "with your passkey", "5 tries left"} {
		if !strings.Contains(r.body, want) {
			t.Errorf("device page lacks %q", want)
		}
	}
	if strings.Contains(r.body, `value="create_upload"`) {
		t.Error("the page offers a capability the agent did not ask for")
	}

	form := func(code string, caps ...hosts.Capability) url.Values {
		f := url.Values{"csrf": {ada.csrf()}, "agent_id": {v.Agent.ID}, "user_code": {code}, "decision": {"approve"}}
		for _, c := range caps {
			f.Add("capability", string(c))
		}
		return f
	}
	// A wrong code: the page again, one try fewer.
	r = ada.form(core.LinkDevicePage.Path(), form(wrongCode(v.Approval.UserCode), hosts.CapValidateFax))
	if r.status != http.StatusBadRequest || !strings.Contains(r.body, "4 tries left") || !strings.Contains(r.body, `role="alert"`) {
		t.Fatalf("wrong code: %d\n%s", r.status, r.body)
	}
	// Widening is refused; nothing ticked is refused.
	r = ada.form(core.LinkDevicePage.Path(), form(v.Approval.UserCode, hosts.CapValidateFax, hosts.CapCreateUpload))
	if r.status < 400 || r.status >= 500 {
		t.Fatalf("widen: %d\n%s", r.status, r.body)
	}
	wantStatus(t, "nothing ticked", ada.form(core.LinkDevicePage.Path(), form(v.Approval.UserCode)), http.StatusBadRequest)
	wantStatus(t, "no csrf", ada.form(core.LinkDevicePage.Path(), url.Values{"agent_id": {v.Agent.ID}, "user_code": {v.Approval.UserCode}, "decision": {"approve"}, "capability": {"validate_fax"}}), http.StatusForbidden)

	// Approve, narrowed to two of three.
	r = ada.form(core.LinkDevicePage.Path(), form(v.Approval.UserCode, hosts.CapValidateFax, hosts.CapSendFax))
	if r.status != http.StatusOK || !strings.Contains(r.body, "Approved") {
		t.Fatalf("approve: %d\n%s", r.status, r.body)
	}
	got := h.delegatedAgent(owner, "Studio", v.Agent.ID)
	if got.Status != hosts.AgentActive || !slices.Equal(sortedCaps(got.Granted), sortedCaps([]hosts.Capability{hosts.CapValidateFax, hosts.CapSendFax})) {
		t.Fatalf("agent %s granted %v", got.Status, got.Granted)
	}
	// The link is spent.
	if r := ada.get(page); r.status < 400 || r.status >= 500 || strings.Contains(r.body, "Approve</button>") {
		t.Fatalf("old link: %d\n%s", r.status, r.body)
	}
	if r := ada.get("/console/hosts"); !strings.Contains(r.body, "send_fax validate_fax") && !strings.Contains(r.body, "validate_fax send_fax") {
		t.Errorf("grants not listed:\n%s", r.body)
	}
}

func sortedCaps(c []hosts.Capability) []hosts.Capability {
	out := slices.Clone(c)
	slices.Sort(out)
	return out
}

func TestDevicePageTriesDeclineExpiry(t *testing.T) {
	clk := newClock()
	h := newHostsHarness(t, testenv.WithConfig(func(c *services.Config) { c.Now = clk.Now }))
	ada, _ := h.signUp("ada@example.com", "Ada")
	owner := h.ownerID("ada@example.com")
	host := h.keyedHost(ada, owner, "Box")

	// Too many wrong codes end the code.
	v := h.registerDelegated(host, "Guesser", hosts.CapGetCredits)
	page := devicePage(t, v)
	var r reply
	for i := range hosts.DeviceMaxTries {
		r = ada.form(core.LinkDevicePage.Path(), url.Values{"csrf": {ada.csrf()}, "agent_id": {v.Agent.ID}, "user_code": {wrongCode(v.Approval.UserCode)}, "decision": {"approve"}, "capability": {"get_credits"}})
		if i < hosts.DeviceMaxTries-1 && r.status != http.StatusBadRequest {
			t.Fatalf("try %d: %d\n%s", i, r.status, r.body)
		}
	}
	if r.status < 400 || r.status >= 500 || !strings.Contains(strings.ToLower(html.UnescapeString(r.body)), "new code") {
		t.Fatalf("last wrong try: %d\n%s", r.status, r.body)
	}
	r = ada.form(core.LinkDevicePage.Path(), url.Values{"csrf": {ada.csrf()}, "agent_id": {v.Agent.ID}, "user_code": {v.Approval.UserCode}, "decision": {"approve"}, "capability": {"get_credits"}})
	if r.status < 400 || h.delegatedAgent(owner, "Box", v.Agent.ID).Status == hosts.AgentActive {
		t.Fatalf("the right code after too many tries: %d", r.status)
	}
	_ = page

	// Decline from the page.
	d := h.registerDelegated(host, "Declined one", hosts.CapGetCredits)
	r = ada.form(core.LinkDevicePage.Path(), url.Values{"csrf": {ada.csrf()}, "agent_id": {d.Agent.ID}, "decision": {"decline"}})
	if r.status != http.StatusOK || !strings.Contains(r.body, "Declined") {
		t.Fatalf("decline: %d\n%s", r.status, r.body)
	}
	if got := h.delegatedAgent(owner, "Box", d.Agent.ID); got.Status != hosts.AgentRejected {
		t.Fatalf("declined agent is %s", got.Status)
	}

	// Expired: the page says so and approving does nothing.
	e := h.registerDelegated(host, "Late one", hosts.CapGetCredits)
	clk.Add(hosts.DeviceApprovalTTL + time.Minute)
	r = ada.get(devicePage(t, e))
	if r.status < 400 || r.status >= 500 || !strings.Contains(r.body, "expired") {
		t.Fatalf("expired: %d\n%s", r.status, r.body)
	}
	r = ada.form(core.LinkDevicePage.Path(), url.Values{"csrf": {ada.csrf()}, "agent_id": {e.Agent.ID}, "user_code": {e.Approval.UserCode}, "decision": {"approve"}, "capability": {"get_credits"}})
	if r.status < 400 || h.delegatedAgent(owner, "Box", e.Agent.ID).Status == hosts.AgentActive {
		t.Fatalf("approved an expired code: %d", r.status)
	}
	if r := ada.get("/console/hosts"); !strings.Contains(r.body, "approval code expired") {
		t.Error("the hosts page does not show the lapsed code")
	}
}

func TestDeviceApprovalInInbox(t *testing.T) {
	h := newHostsHarness(t)
	ada, _ := h.signUp("ada@example.com", "Ada")
	owner := h.ownerID("ada@example.com")
	host := h.keyedHost(ada, owner, "Desk")
	v := h.registerDelegated(host, "Inbox agent", hosts.CapGetFaxStatus)
	pend, err := h.env.Svc.Approvals.ListPending(t.Context(), owner)
	if err != nil || len(pend) != 1 || pend[0].Kind != approvals.KindDevice {
		t.Fatalf("inbox = %+v, %v", pend, err)
	}
	a := pend[0]
	r := ada.get("/console/approvals")
	for _, want := range []string{"Agent device approval", "Inbox agent", `href="/console/device?agent_id=` + v.Agent.ID + `"`, "Open to approve"} {
		if !strings.Contains(html.UnescapeString(r.body), want) {
			t.Errorf("inbox lacks %q", want)
		}
	}
	// Approving needs the code on the device page.
	r = ada.form("/console/approvals/"+a.ID, url.Values{"csrf": {ada.csrf()}, "decision": {"approve"}, "binding": {a.BindingHash}})
	if r.status != http.StatusBadRequest || !strings.Contains(r.body, "device page") {
		t.Fatalf("inbox approve: %d\n%s", r.status, r.body)
	}
	// Declining in the inbox declines the agent.
	r = ada.form("/console/approvals/"+a.ID, url.Values{"csrf": {ada.csrf()}, "decision": {"decline"}, "binding": {a.BindingHash}})
	wantStatus(t, "inbox decline", r, http.StatusSeeOther)
	if got := h.delegatedAgent(owner, "Desk", v.Agent.ID); got.Status != hosts.AgentRejected {
		t.Fatalf("agent %s after inbox decline", got.Status)
	}
	if h.status(owner, a.ID) == approvals.Pending {
		t.Fatal("the inbox approval is still pending")
	}
}

func TestHostsPageRateLimitAndExpiredToken(t *testing.T) {
	clk := newClock()
	h := newHostsHarness(t, testenv.WithConfig(func(c *services.Config) { c.Now = clk.Now }))
	b, _ := h.signUp("ada@example.com", "Ada")
	wantStatus(t, "first host", b.addHost("Pending one", ""), http.StatusOK)

	// An enrollment token past its hour reads as expired.
	clk.Add(hosts.EnrollmentTTL + time.Minute)
	if r := b.get("/console/hosts"); !strings.Contains(r.body, "enrollment token expired") {
		t.Fatalf("expired token not shown:\n%s", r.body)
	}

	// Core's rate limit re-renders the form with its message and Retry-After.
	var r reply
	for i := range 30 {
		r = b.addHost("Host "+string(rune('A'+i)), "")
		if r.status != http.StatusOK {
			break
		}
	}
	if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" || !strings.Contains(r.body, `role="alert"`) || !strings.Contains(r.body, "too many hosts created") {
		t.Fatalf("rate limit: %d Retry-After %q\n%s", r.status, r.header.Get("Retry-After"), r.body)
	}
	// MaxHostsPerOwner live hosts: the form says to revoke one first.
	owner := h.ownerID("ada@example.com")
	for range hosts.MaxHostsPerOwner { // bounded: each round adds up to ten
		hs, err := h.env.Svc.Hosts.List(t.Context(), owner)
		if err != nil {
			t.Fatal(err)
		}
		if len(hs) >= hosts.MaxHostsPerOwner {
			break
		}
		clk.Add(10 * time.Minute)
		for range 10 {
			if _, err := h.env.Svc.Hosts.Create(t.Context(), owner, hosts.CreateRequest{Name: "Filler"}); err != nil {
				break
			}
		}
	}
	clk.Add(10 * time.Minute)
	r = b.addHost("One too many", publicJWK(t))
	if r.status != http.StatusConflict || !strings.Contains(r.body, "Revoke a host you no longer use first") {
		t.Fatalf("too many hosts: %d\n%s", r.status, r.body)
	}
}
