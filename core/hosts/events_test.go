package hosts_test

import (
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/events"
	"github.com/faxhub/faxhub/core/hosts"
	"github.com/faxhub/faxhub/internal/testenv"
)

// Delegated agents write agent.registered and agent.revoked as registered
// agents do (data.kind "delegated", with their host): registered pending
// (its device approval is an approval event) or active when the host's
// defaults cover it; revoked by its host, by the owner, or with its host.
func TestDelegatedAgentEvents(t *testing.T) {
	e, _ := testenv.Clocked(t)
	p := e.Principal(t, e.KeyALive)
	if e.Svc.Config().AgentMode == core.ModeTest {
		p = e.Principal(t, e.KeyATest)
	}
	h := newHost(t, e, hosts.CapGetCredits)
	pending := register(t, e, h, hosts.CapGetCredits, hosts.CapListInbox)
	active := register(t, e, h, hosts.CapGetCredits)
	third := register(t, e, h, hosts.CapGetCredits)
	byOwner := register(t, e, h, hosts.CapGetCredits)

	of := func(id string) []map[string]any {
		var out []map[string]any
		for _, ev := range e.Events(t, p, events.AgentRegistered, events.AgentRevoked) {
			if d := testenv.EventData(t, ev); d["id"] == id {
				d["type"] = string(ev.Type)
				out = append(out, d)
			}
		}
		return out
	}
	got := of(pending.Agent.ID)
	if len(got) != 1 || got[0]["type"] != string(events.AgentRegistered) || got[0]["kind"] != "delegated" || got[0]["status"] != "pending" ||
		got[0]["hostId"] != h.ID || got[0]["hostName"] != "Laptop" || strings.Join(toStrings(got[0]["capabilities"]), " ") != "get_credits list_inbox" {
		t.Fatalf("pending agent %v", got)
	}
	if got := of(active.Agent.ID); len(got) != 1 || got[0]["status"] != "active" {
		t.Fatalf("pre-approved agent %v", got)
	}
	asked := e.Events(t, p, events.ApprovalRequested)
	if len(asked) != 1 || testenv.EventData(t, asked[0])["kind"] != "device_authorization" {
		t.Fatalf("device approvals asked %v", testenv.EventTypes(asked))
	}

	for range 2 {
		if _, err := e.Svc.Hosts.RevokeAgent(ctx, "", h.ID, active.Agent.ID); err != nil {
			t.Fatal(err)
		}
	}
	if got := of(active.Agent.ID); len(got) != 2 || got[1]["type"] != string(events.AgentRevoked) || got[1]["revokedBy"] != "host" {
		t.Fatalf("revoked twice by its host: %v", got)
	}
	if _, err := e.Svc.Hosts.RevokeAgent(ctx, e.OwnerA.ID, "", byOwner.Agent.ID); err != nil {
		t.Fatal(err)
	}
	if got := of(byOwner.Agent.ID); len(got) != 2 || got[1]["revokedBy"] != "owner" {
		t.Fatalf("revoked by the owner: %v", got)
	}
	if err := e.Svc.Hosts.Revoke(ctx, e.OwnerA.ID, h.ID); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{pending.Agent.ID, third.Agent.ID} {
		if got := of(id); len(got) != 2 || got[1]["type"] != string(events.AgentRevoked) || got[1]["status"] != "revoked" || got[1]["revokedBy"] != "owner" {
			t.Fatalf("%s after its host was revoked: %v", id, got)
		}
	}
	for _, id := range []string{active.Agent.ID, byOwner.Agent.ID} {
		if got := of(id); len(got) != 2 {
			t.Fatalf("revoking the host revoked %s again: %v", id, got)
		}
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
