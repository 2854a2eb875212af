package hosts_test

import (
	"slices"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/hosts"
	"github.com/faxhub/faxhub/internal/testenv"
)

func TestRegisterDelegatedAgentRules(t *testing.T) {
	e, _ := testenv.Clocked(t)
	h := newHost(t, e, hosts.CapGetCredits, hosts.CapValidateFax)
	other := newHost(t, e)
	ok := func() hosts.AgentRequest {
		return hosts.AgentRequest{Name: "Mailer", Mode: "delegated", Capabilities: []hosts.Capability{hosts.CapGetCredits},
			ForceApproval: true, AgentKey: parseJWK(t, newJWK(t))}
	}
	active := register(t, e, other, hosts.CapGetCredits)
	if _, err := e.Svc.Hosts.DecideDevice(ctx, e.OwnerA.ID, active.Agent.ID, active.Approval.UserCode, true, nil); err != nil {
		t.Fatal(err)
	}
	activeKey := parseJWK(t, []byte(active.Agent.PublicKey))
	for _, tc := range []struct {
		name string
		edit func(r *hosts.AgentRequest)
		code string
	}{
		{"autonomous", func(r *hosts.AgentRequest) { r.Mode = "autonomous" }, core.CodeInvalidRequest},
		{"no mode", func(r *hosts.AgentRequest) { r.Mode = "" }, core.CodeInvalidRequest},
		{"ciba", func(r *hosts.AgentRequest) { r.PreferredMethod = "ciba" }, core.CodeInvalidRequest},
		{"no name", func(r *hosts.AgentRequest) { r.Name = " " }, core.CodeInvalidRequest},
		{"no capabilities", func(r *hosts.AgentRequest) { r.Capabilities = nil }, core.CodeInvalidRequest},
		{"unknown capability", func(r *hosts.AgentRequest) { r.Capabilities = []hosts.Capability{"fly"} }, hosts.CodeUnknownCapability},
		{"no key", func(r *hosts.AgentRequest) { r.AgentKey = hosts.PublicJWK{} }, hosts.CodeInvalidPublicKey},
		{"host's own key", func(r *hosts.AgentRequest) { r.AgentKey = parseJWK(t, []byte(*h.PublicKey)) }, core.CodeInvalidRequest},
		{"another host's key", func(r *hosts.AgentRequest) { r.AgentKey = parseJWK(t, []byte(*other.PublicKey)) }, hosts.CodeHostKeyInUse},
		{"another host's agent", func(r *hosts.AgentRequest) { r.AgentKey = activeKey }, hosts.CodeAgentExists},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ok()
			tc.edit(&r)
			_, err := e.Svc.Hosts.RegisterAgent(ctx, h, r)
			testenv.WantCode(t, err, tc.code)
		})
	}
	// The same key on its own host, once active: agent_exists.
	_, err := e.Svc.Hosts.RegisterAgent(ctx, other, hosts.AgentRequest{Name: "x", Mode: "delegated",
		Capabilities: []hosts.Capability{hosts.CapGetCredits}, AgentKey: activeKey})
	testenv.WantCode(t, err, hosts.CodeAgentExists)

	// Covered by the host's defaults: active at once, no approval.
	r := ok()
	r.ForceApproval = false
	r.Capabilities = []hosts.Capability{hosts.CapValidateFax, hosts.CapGetCredits, hosts.CapGetCredits}
	v, err := e.Svc.Hosts.RegisterAgent(ctx, h, r)
	if err != nil || v.Approval != nil || v.Agent.Status != hosts.AgentActive ||
		!slices.Equal(v.Agent.Granted, []hosts.Capability{hosts.CapValidateFax, hosts.CapGetCredits}) {
		t.Fatalf("pre-approved = %+v, %v", v, err)
	}
	// Anything beyond the defaults, or force_approval, waits.
	for _, edit := range []func(*hosts.AgentRequest){
		func(r *hosts.AgentRequest) { r.Capabilities = append(r.Capabilities, hosts.CapSendFax) },
		func(r *hosts.AgentRequest) { r.ForceApproval = true },
	} {
		r := ok()
		r.ForceApproval = false
		edit(&r)
		v, err := e.Svc.Hosts.RegisterAgent(ctx, h, r)
		if err != nil || v.Approval == nil || v.Agent.Status != hosts.AgentPending || len(v.Agent.Granted) != 0 {
			t.Fatalf("pending = %+v, %v", v, err)
		}
	}

	// A pending retry answers the same agent with a fresh code; the old
	// code and its inbox approval stop working.
	r = ok()
	first, err := e.Svc.Hosts.RegisterAgent(ctx, h, r)
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.Svc.Hosts.RegisterAgent(ctx, h, r)
	if err != nil || again.Agent.ID != first.Agent.ID || again.Approval == nil || again.Approval.UserCode == first.Approval.UserCode {
		t.Fatalf("retry = %+v, %v", again, err)
	}
	if a, err := e.Svc.Approvals.Get(ctx, e.OwnerA.ID, first.Agent.ApprovalID); err != nil || a.Status != approvals.Expired {
		t.Fatalf("old approval = %+v, %v", a, err)
	}
	_, err = e.Svc.Hosts.DecideDevice(ctx, e.OwnerA.ID, first.Agent.ID, first.Approval.UserCode, true, nil)
	testenv.WantCode(t, err, hosts.CodeDeviceWrongCode)
	if _, err := e.Svc.Hosts.DecideDevice(ctx, e.OwnerA.ID, first.Agent.ID, again.Approval.UserCode, true, nil); err != nil {
		t.Fatal(err)
	}
	// Another host presenting the same key cannot take it over.
	_, err = e.Svc.Hosts.RegisterAgent(ctx, other, r)
	testenv.WantCode(t, err, hosts.CodeAgentExists)
}

func TestDeviceApproval(t *testing.T) {
	e, clk := testenv.Clocked(t)
	h := newHost(t, e)
	requested := []hosts.Capability{hosts.CapValidateFax, hosts.CapSendFax, hosts.CapGetCredits}
	v := register(t, e, h, requested...)
	id, code := v.Agent.ID, v.Approval.UserCode
	if len(code) != 9 || code[4] != '-' || v.Approval.ExpiresIn != int(hosts.DeviceApprovalTTL/time.Second) || v.Approval.Interval != hosts.DeviceInterval {
		t.Fatalf("approval = %+v", v.Approval)
	}
	// The inbox shows it too.
	appr, err := e.Svc.Approvals.Get(ctx, e.OwnerA.ID, v.Agent.ApprovalID)
	if err != nil || appr.Kind != approvals.KindDevice || appr.Status != approvals.Pending {
		t.Fatalf("inbox = %+v, %v", appr, err)
	}
	// Only the host's owner sees it.
	_, err = e.Svc.Hosts.DeviceRequestForOwner(ctx, e.OwnerB.ID, id)
	testenv.WantCode(t, err, hosts.CodeAgentNotFound)
	_, err = e.Svc.Hosts.DecideDevice(ctx, e.OwnerB.ID, id, code, true, nil)
	testenv.WantCode(t, err, hosts.CodeAgentNotFound)
	req, err := e.Svc.Hosts.DeviceRequestForOwner(ctx, e.OwnerA.ID, id)
	if err != nil || req.Host.ID != h.ID || req.TriesLeft != hosts.DeviceMaxTries || !slices.Equal(req.Agent.Requested, requested) {
		t.Fatalf("request = %+v, %v", req, err)
	}
	for _, tc := range []struct {
		name string
		code string
		caps []hosts.Capability
		want string
	}{
		{"widen", code, []hosts.Capability{hosts.CapCreateCreditCheckout}, hosts.CodeCapabilityWiden},
		{"empty", code, []hosts.Capability{}, core.CodeInvalidRequest},
		{"wrong code", "BBBB-BBBB", nil, hosts.CodeDeviceWrongCode},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.Svc.Hosts.DecideDevice(ctx, e.OwnerA.ID, id, tc.code, true, tc.caps)
			testenv.WantCode(t, err, tc.want)
		})
	}
	// Narrowed, with the code typed loosely.
	loose := " " + code[:4] + " " + code[5:] + " "
	a, err := e.Svc.Hosts.DecideDevice(ctx, e.OwnerA.ID, id, loose, true, []hosts.Capability{hosts.CapGetCredits, hosts.CapValidateFax})
	if err != nil || a.Status != hosts.AgentActive || !slices.Equal(a.Granted, []hosts.Capability{hosts.CapValidateFax, hosts.CapGetCredits}) {
		t.Fatalf("approve = %+v, %v", a, err)
	}
	if appr, _ := e.Svc.Approvals.Get(ctx, e.OwnerA.ID, v.Agent.ApprovalID); appr.Status != approvals.Approved {
		t.Fatalf("inbox after approval: %s", appr.Status)
	}
	_, err = e.Svc.Hosts.DecideDevice(ctx, e.OwnerA.ID, id, code, true, nil)
	testenv.WantCode(t, err, hosts.CodeDeviceDecided)
	_, err = e.Svc.Hosts.ReissueDeviceCode(ctx, h, id)
	testenv.WantCode(t, err, hosts.CodeDeviceDecided)
	p := e.Svc.Hosts.Principal(h, a, nil)
	if p.Kind != core.PrincipalDelegated || p.OwnerID != e.OwnerA.ID || p.SubjectID != id || p.ClientName != "Mailer on Laptop" ||
		!slices.Equal(p.Scopes, []core.Scope{core.ScopeFaxDraft, core.ScopeCreditsRead}) {
		t.Fatalf("principal = %+v", p)
	}
	testenv.WantCode(t, hosts.AuthorizeCapability(p, a, "fly"), hosts.CodeUnknownCapability)
	testenv.WantCode(t, hosts.AuthorizeCapability(p, a, hosts.CapSendFax), hosts.CodeCapabilityNotGranted)

	// Too many wrong codes end the code; a re-issue starts over.
	v2 := register(t, e, h, hosts.CapGetCredits)
	for i := 1; i < hosts.DeviceMaxTries; i++ {
		_, err := e.Svc.Hosts.DecideDevice(ctx, e.OwnerA.ID, v2.Agent.ID, "BBBB-BBBB", true, nil)
		testenv.WantCode(t, err, hosts.CodeDeviceWrongCode)
	}
	_, err = e.Svc.Hosts.DecideDevice(ctx, e.OwnerA.ID, v2.Agent.ID, "BBBB-BBBB", true, nil)
	testenv.WantCode(t, err, hosts.CodeDeviceTooManyTries)
	_, err = e.Svc.Hosts.DecideDevice(ctx, e.OwnerA.ID, v2.Agent.ID, v2.Approval.UserCode, true, nil)
	testenv.WantCode(t, err, hosts.CodeDeviceTooManyTries)
	re, err := e.Svc.Hosts.ReissueDeviceCode(ctx, h, v2.Agent.ID)
	if err != nil || re.Agent.ID != v2.Agent.ID || re.Approval == nil {
		t.Fatalf("reissue = %+v, %v", re, err)
	}
	_, err = e.Svc.Hosts.ReissueDeviceCode(ctx, newHost(t, e), v2.Agent.ID)
	testenv.WantCode(t, err, hosts.CodeAgentNotFound)
	_, err = e.Svc.Hosts.ReissueDeviceCode(ctx, h, "dag_unknown")
	testenv.WantCode(t, err, hosts.CodeAgentNotFound)

	// Expiry: the page says expired, the status reads expired, the agent
	// cannot act; a re-issue revives it.
	clk.Advance(hosts.DeviceApprovalTTL)
	_, err = e.Svc.Hosts.DecideDevice(ctx, e.OwnerA.ID, v2.Agent.ID, re.Approval.UserCode, true, nil)
	testenv.WantCode(t, err, hosts.CodeDeviceExpired)
	if st, err := e.Svc.Hosts.GetAgent(ctx, h, v2.Agent.ID); err != nil || st.Status != hosts.AgentExpired {
		t.Fatalf("status = %+v, %v", st, err)
	}
	_, err = e.Svc.Hosts.DelegatedAgentForJWT(ctx, h, v2.Agent.ID)
	testenv.WantCode(t, err, hosts.CodeAgentExpired)
	re, err = e.Svc.Hosts.ReissueDeviceCode(ctx, h, v2.Agent.ID)
	if err != nil || re.Approval.ExpiresIn != int(hosts.DeviceApprovalTTL/time.Second) {
		t.Fatalf("reissue after expiry = %+v, %v", re, err)
	}
	if st, err := e.Svc.Hosts.GetAgent(ctx, h, v2.Agent.ID); err != nil || st.Status != hosts.AgentPending {
		t.Fatalf("status after reissue = %+v, %v", st, err)
	}
	// Declining (no code needed) rejects the agent.
	if err := e.Svc.Hosts.DeclineDevice(ctx, e.OwnerA.ID, v2.Agent.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.Svc.Hosts.DelegatedAgentForJWT(ctx, h, v2.Agent.ID)
	testenv.WantCode(t, err, hosts.CodeAgentRejected)
	if err := e.Svc.Hosts.DeclineDevice(ctx, e.OwnerA.ID, v2.Agent.ID); err != nil {
		t.Fatalf("decline twice: %v", err)
	}
	testenv.WantCode(t, e.Svc.Hosts.DeclineDevice(ctx, e.OwnerB.ID, v2.Agent.ID), hosts.CodeAgentNotFound)
}

func TestRevokeDelegatedAgent(t *testing.T) {
	e, _ := testenv.Clocked(t)
	h := newHost(t, e)
	other := newHost(t, e)
	a := approveAgent(t, e, h, hosts.CapGetCredits)
	for _, tc := range []struct {
		name                   string
		ownerID, hostID, agent string
	}{
		{"nobody", "", "", a.ID},
		{"another owner", e.OwnerB.ID, "", a.ID},
		{"another host", "", other.ID, a.ID},
		{"unknown", e.OwnerA.ID, "", "dag_unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.Svc.Hosts.RevokeAgent(ctx, tc.ownerID, tc.hostID, tc.agent)
			testenv.WantCode(t, err, hosts.CodeAgentNotFound)
		})
	}
	_, err := e.Svc.Hosts.DelegatedAgentForJWT(ctx, other, a.ID)
	testenv.WantCode(t, err, hosts.CodeInvalidJWT)
	got, err := e.Svc.Hosts.RevokeAgent(ctx, "", h.ID, a.ID)
	if err != nil || got.Status != hosts.AgentRevoked || got.RevokedAt == nil {
		t.Fatalf("revoke = %+v, %v", got, err)
	}
	if got, err := e.Svc.Hosts.RevokeAgent(ctx, e.OwnerA.ID, "", a.ID); err != nil || got.Status != hosts.AgentRevoked {
		t.Fatalf("revoke again = %+v, %v", got, err)
	}
	_, err = e.Svc.Hosts.DelegatedAgentForJWT(ctx, h, a.ID)
	testenv.WantCode(t, err, hosts.CodeAgentRevoked)
	// A pending agent's inbox approval leaves the inbox with it.
	v := register(t, e, h, hosts.CapGetCredits)
	if _, err := e.Svc.Hosts.RevokeAgent(ctx, e.OwnerA.ID, "", v.Agent.ID); err != nil {
		t.Fatal(err)
	}
	if appr, _ := e.Svc.Approvals.Get(ctx, e.OwnerA.ID, v.Agent.ApprovalID); appr.Status != approvals.Expired {
		t.Fatalf("inbox after revoke: %s", appr.Status)
	}
	_, err = e.Svc.Hosts.DeviceRequestForOwner(ctx, e.OwnerA.ID, v.Agent.ID)
	testenv.WantCode(t, err, hosts.CodeDeviceDecided)
}

func TestDeviceApprovalInInbox(t *testing.T) {
	e, _ := testenv.Clocked(t)
	h := newHost(t, e)
	v := register(t, e, h, hosts.CapGetCredits)
	appr, err := e.Svc.Approvals.Get(ctx, e.OwnerA.ID, v.Agent.ApprovalID)
	if err != nil {
		t.Fatal(err)
	}
	// Approving the inbox item alone is refused: the code is on the page.
	_, err = e.Svc.Approvals.Decide(ctx, e.OwnerA.ID, appr.ID, approvals.Decision{Approve: true, BindingHash: appr.BindingHash})
	testenv.WantCode(t, err, core.CodeInvalidRequest)
	// Declining it rejects the agent.
	if _, err := e.Svc.Approvals.Decide(ctx, e.OwnerA.ID, appr.ID, approvals.Decision{BindingHash: appr.BindingHash}); err != nil {
		t.Fatal(err)
	}
	_, err = e.Svc.Hosts.DelegatedAgentForJWT(ctx, h, v.Agent.ID)
	testenv.WantCode(t, err, hosts.CodeAgentRejected)
}
