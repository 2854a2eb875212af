package agents_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/agents"
	"github.com/faxhub/faxhub/core/events"
	"github.com/faxhub/faxhub/internal/testenv"
)

// agentPrincipal is owner A's API key in the mode agents act in: where
// agent and approval events are written.
func agentPrincipal(t *testing.T, e *testenv.Env) core.Principal {
	t.Helper()
	if e.Svc.Config().AgentMode == core.ModeTest {
		return e.Principal(t, e.KeyATest)
	}
	return e.Principal(t, e.KeyALive)
}

// A registration writes agent.registered in the transaction that consumes
// the enrollment token (of registrations racing for one token, one
// commits and one event is written), and agent.revoked in the one that
// revokes it; neither carries a credential.
func TestAgentRegistrationEvents(t *testing.T) {
	e := testenv.New(t, testenv.WithoutWorkers())
	p := agentPrincipal(t, e)
	en, err := e.Svc.Agents.CreateEnrollment(ctx, e.OwnerA.ID, "Build bot", []string{"fax:read", "fax:send"})
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		won []*agents.Registered
	)
	for range 6 {
		wg.Go(func() {
			reg, err := e.Svc.Agents.Register(ctx, agents.RegisterRequest{Type: agents.TypeService, EnrollmentToken: en.EnrollmentToken, LoginHint: e.OwnerA.Email})
			if err == nil {
				mu.Lock()
				won = append(won, reg)
				mu.Unlock()
			} else if core.ErrorCode(err) != agents.CodeInvalidEnrollment {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if len(won) != 1 {
		t.Fatalf("%d registrations with one token", len(won))
	}
	reg := won[0]
	got := e.Events(t, p, events.AgentRegistered, events.AgentRevoked)
	if len(got) != 1 {
		t.Fatalf("%d agent events for one registration", len(got))
	}
	d := testenv.EventData(t, got[0])
	if d["id"] != reg.Registration.ID || d["kind"] != "registration" || d["type"] != "service_auth" || d["name"] != "Build bot" ||
		d["status"] != "active" || strings.Join(toStrings(d["scopes"]), " ") != "fax:read fax:send" || d["revokedAt"] != nil {
		t.Fatalf("data %v", d)
	}
	for _, secret := range []string{reg.ClaimToken, reg.Attempt.UserCode, en.EnrollmentToken} {
		if strings.Contains(string(got[0].Data), secret) {
			t.Fatal("agent.registered carries a secret")
		}
	}
	// Its claim is an approval the owner is asked for.
	if asked := e.Events(t, p, events.ApprovalRequested); len(asked) != 1 || testenv.EventData(t, asked[0])["kind"] != "agent_claim" {
		t.Fatalf("approval events %v", testenv.EventTypes(asked))
	}

	for range 2 {
		err := e.Svc.Agents.RevokeRegistration(ctx, e.OwnerA.ID, reg.Registration.ID)
		if err != nil && core.ErrorCode(err) != core.CodeNotFound {
			t.Fatal(err)
		}
	}
	got = e.Events(t, p, events.AgentRevoked)
	if len(got) != 1 {
		t.Fatalf("%d agent.revoked for one registration revoked twice", len(got))
	}
	if d := testenv.EventData(t, got[0]); d["status"] != "revoked" || d["revokedBy"] != "owner" || d["revokedAt"] == nil {
		t.Fatalf("revoked %v", d)
	}
	// Another owner revoking it changes and writes nothing.
	if err := e.Svc.Agents.RevokeRegistration(ctx, e.OwnerB.ID, reg.Registration.ID); core.ErrorCode(err) != core.CodeNotFound {
		t.Fatalf("B revokes A's agent: %v", err)
	}
	if got := e.Events(t, p, events.AgentRevoked); len(got) != 1 {
		t.Fatal("a refused revocation wrote an event")
	}
}

func toStrings(v any) []string {
	l, _ := v.([]any)
	out := make([]string, len(l))
	for i, x := range l {
		out[i], _ = x.(string)
	}
	return out
}
