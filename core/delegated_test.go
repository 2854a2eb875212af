package core_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core"
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

func parseJWK(t *testing.T, raw json.RawMessage) core.PublicJWK {
	t.Helper()
	k, err := core.ParsePublicJWK(raw)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// newHost creates an active host of owner A with default capabilities.
func newHost(t *testing.T, e *testenv.Env, defaults ...core.Capability) *core.Host {
	t.Helper()
	hc, err := e.Svc.Core.CreateHost(ctx, e.OwnerA.ID, core.HostCreateRequest{Name: "Laptop", PublicKey: newJWK(t), DefaultCapabilities: defaults})
	if err != nil {
		t.Fatal(err)
	}
	h, err := e.Svc.Core.HostForJWT(ctx, hc.Host.ID)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func register(t *testing.T, e *testenv.Env, h *core.Host, caps ...core.Capability) *core.DelegatedAgentView {
	t.Helper()
	v, err := e.Svc.Core.RegisterDelegatedAgent(ctx, h, core.DelegatedAgentRequest{Name: "Mailer", Mode: "delegated",
		PreferredMethod: "device_authorization", Capabilities: caps, AgentKey: parseJWK(t, newJWK(t))})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// approveAgent registers an agent with caps and approves all of them.
func approveAgent(t *testing.T, e *testenv.Env, h *core.Host, caps ...core.Capability) *core.DelegatedAgent {
	t.Helper()
	v := register(t, e, h, caps...)
	a, err := e.Svc.Core.DecideDevice(ctx, h.OwnerID, v.Agent.ID, v.Approval.UserCode, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestDelegatedSmoke(t *testing.T) {
	e, _ := testenv.Clocked(t)
	h := newHost(t, e)
	v := register(t, e, h, core.CapGetCredits, core.CapValidateFax)
	if v.Agent.Status != core.DelegatedPending || v.Approval == nil {
		t.Fatalf("register = %+v", v)
	}
	u, err := url.Parse(v.Approval.VerificationURIComplete)
	if err != nil || u.Query().Get("agent_id") != v.Agent.ID || u.Query().Get("code") != v.Approval.UserCode {
		t.Fatalf("verification_uri_complete %q", v.Approval.VerificationURIComplete)
	}
	_, err = e.Svc.Core.DelegatedAgentForJWT(ctx, h, v.Agent.ID)
	testenv.WantCode(t, err, core.CodeAgentPending)
	a, err := e.Svc.Core.DecideDevice(ctx, e.OwnerA.ID, v.Agent.ID, strings.ToLower(v.Approval.UserCode), true, []core.Capability{core.CapGetCredits})
	if err != nil || a.Status != core.DelegatedActive || !slices.Equal(a.Granted, []core.Capability{core.CapGetCredits}) {
		t.Fatalf("decide = %+v, %v", a, err)
	}
	a, err = e.Svc.Core.DelegatedAgentForJWT(ctx, h, v.Agent.ID)
	if err != nil {
		t.Fatal(err)
	}
	p := e.Svc.Core.DelegatedPrincipal(h, a)
	if err := core.AuthorizeCapability(p, a, core.CapGetCredits); err != nil {
		t.Fatal(err)
	}
	testenv.WantCode(t, core.AuthorizeCapability(p, a, core.CapValidateFax), core.CodeCapabilityNotGranted)
	if _, err := e.Svc.Core.GetCredits(ctx, p, "", 10); err != nil {
		t.Fatal(err)
	}
	if err := e.Svc.Core.RevokeHost(ctx, e.OwnerA.ID, h.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.Svc.Core.HostForJWT(ctx, h.ID)
	testenv.WantCode(t, err, core.CodeHostRevoked)
}
