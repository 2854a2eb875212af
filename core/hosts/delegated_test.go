package hosts_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core/hosts"
	"github.com/faxhub/faxhub/internal/testenv"
)

// newJWK returns a fresh Ed25519 public JWK.
func newJWK(t *testing.T) json.RawMessage {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return json.RawMessage(`{"kty":"OKP","crv":"Ed25519","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}`)
}

func parseJWK(t *testing.T, raw json.RawMessage) hosts.PublicJWK {
	t.Helper()
	k, err := hosts.ParsePublicJWK(raw)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// newHost creates an active host of owner A with default capabilities.
func newHost(t *testing.T, e *testenv.Env, defaults ...hosts.Capability) *hosts.Host {
	t.Helper()
	hc, err := e.Svc.Hosts.Create(ctx, e.OwnerA.ID, hosts.CreateRequest{Name: "Laptop", PublicKey: newJWK(t), DefaultCapabilities: defaults})
	if err != nil {
		t.Fatal(err)
	}
	h, err := e.Svc.Hosts.HostForJWT(ctx, hc.Host.ID)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func register(t *testing.T, e *testenv.Env, h *hosts.Host, caps ...hosts.Capability) *hosts.AgentView {
	t.Helper()
	v, err := e.Svc.Hosts.RegisterAgent(ctx, h, hosts.AgentRequest{Name: "Mailer", Mode: "delegated",
		PreferredMethod: "device_authorization", Capabilities: caps, AgentKey: parseJWK(t, newJWK(t))})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// approveAgent registers an agent with caps and approves all of them.
func approveAgent(t *testing.T, e *testenv.Env, h *hosts.Host, caps ...hosts.Capability) *hosts.Agent {
	t.Helper()
	v := register(t, e, h, caps...)
	a, err := e.Svc.Hosts.DecideDevice(ctx, h.OwnerID, v.Agent.ID, v.Approval.UserCode, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestDelegatedSmoke(t *testing.T) {
	e, _ := testenv.Clocked(t)
	h := newHost(t, e)
	v := register(t, e, h, hosts.CapGetCredits, hosts.CapValidateFax)
	if v.Agent.Status != hosts.AgentPending || v.Approval == nil {
		t.Fatalf("register = %+v", v)
	}
	u, err := url.Parse(v.Approval.VerificationURIComplete)
	if err != nil || u.Query().Get("agent_id") != v.Agent.ID || u.Query().Get("code") != v.Approval.UserCode {
		t.Fatalf("verification_uri_complete %q", v.Approval.VerificationURIComplete)
	}
	_, err = e.Svc.Hosts.DelegatedAgentForJWT(ctx, h, v.Agent.ID)
	testenv.WantCode(t, err, hosts.CodeAgentPending)
	a, err := e.Svc.Hosts.DecideDevice(ctx, e.OwnerA.ID, v.Agent.ID, strings.ToLower(v.Approval.UserCode), true, []hosts.Capability{hosts.CapGetCredits})
	if err != nil || a.Status != hosts.AgentActive || !slices.Equal(a.Granted, []hosts.Capability{hosts.CapGetCredits}) {
		t.Fatalf("decide = %+v, %v", a, err)
	}
	a, err = e.Svc.Hosts.DelegatedAgentForJWT(ctx, h, v.Agent.ID)
	if err != nil {
		t.Fatal(err)
	}
	p := e.Svc.Hosts.Principal(h, a, nil)
	if err := hosts.AuthorizeCapability(p, a, hosts.CapGetCredits); err != nil {
		t.Fatal(err)
	}
	testenv.WantCode(t, hosts.AuthorizeCapability(p, a, hosts.CapValidateFax), hosts.CodeCapabilityNotGranted)
	if _, err := e.Svc.Credits.Get(ctx, p, "", 10); err != nil {
		t.Fatal(err)
	}
	if err := e.Svc.Hosts.Revoke(ctx, e.OwnerA.ID, h.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.Svc.Hosts.HostForJWT(ctx, h.ID)
	testenv.WantCode(t, err, hosts.CodeHostRevoked)
}
