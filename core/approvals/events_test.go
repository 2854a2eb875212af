package approvals_test

import (
	"go/ast"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/events"
	"github.com/faxhub/faxhub/internal/testenv"
)

// Every approval writes approval.requested in the transaction that records
// it and approval.decided in the one that decides it, in the mode its
// requester acts in; its data says kind, requester, summary and status,
// never what is bound or the details. Of concurrent decisions one wins and
// one event is written; refused decisions write nothing.
func TestApprovalEvents(t *testing.T) {
	e := testenv.New(t, testenv.WithoutWorkers())
	live, test := e.Principal(t, e.KeyALive), e.Principal(t, e.KeyATest)
	agentMode := e.Svc.Config().AgentMode
	binding := map[string]any{"to": "+12125550100", "secret": "bound-value-7f3a"}
	request := func(mode core.Mode) *approvals.Approval {
		a, err := e.Svc.Approvals.Request(ctx, approvals.Request{
			OwnerID: e.OwnerA.ID, Mode: mode, Kind: approvals.KindVerifiedAction, Requester: "agent x",
			Summary: "send a fax", Details: map[string]string{"detail": "detail-9c1e"}, Binding: binding, RequiresUV: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	of := func(p core.Principal, id string) []events.Event {
		var out []events.Event
		for _, ev := range e.Events(t, p, events.ApprovalRequested, events.ApprovalDecided) {
			if testenv.EventData(t, ev)["id"] == id {
				out = append(out, ev)
			}
		}
		return out
	}

	a := request(core.ModeTest)
	_, err := e.Svc.Approvals.Decide(ctx, e.OwnerA.ID, a.ID, approvals.Decision{Approve: true, BindingHash: "other", UserVerified: true})
	testenv.WantCode(t, err, approvals.CodeApprovalBinding)
	_, err = e.Svc.Approvals.Decide(ctx, e.OwnerA.ID, a.ID, approvals.Decision{Approve: true, BindingHash: a.BindingHash})
	testenv.WantCode(t, err, approvals.CodeUserVerification)
	if got := of(test, a.ID); len(got) != 1 || got[0].Type != events.ApprovalRequested {
		t.Fatalf("after refused decisions: %v", testenv.EventTypes(got))
	}
	if wins := e.RaceApprovals(t, e.OwnerA.ID, a, 12); wins != 1 {
		t.Fatalf("%d decisions won", wins)
	}
	got := of(test, a.ID)
	if len(got) != 2 || got[1].Type != events.ApprovalDecided {
		t.Fatalf("events %v", testenv.EventTypes(got))
	}
	for i, ev := range got {
		d := testenv.EventData(t, ev)
		status := []string{"pending", "approved"}[i]
		if d["kind"] != "verified_action" || d["requester"] != "agent x" || d["summary"] != "send a fax" || d["status"] != status ||
			d["requiresUserVerification"] != true || d["expiresAt"] == nil || (i == 1) != (d["decidedAt"] != nil) {
			t.Fatalf("%s data %v", ev.Type, d)
		}
		for _, leak := range []string{"bound-value", "detail-9c1e", a.BindingHash, "bindingHash", "details", "decision"} {
			if strings.Contains(string(ev.Data), leak) {
				t.Errorf("%s carries %q", ev.Type, leak)
			}
		}
	}
	if of(live, a.ID) != nil {
		t.Fatal("a test-mode approval's events are in the live log")
	}

	// Without a mode, an approval is in the agents' mode.
	d := request("")
	if _, err := e.Svc.Approvals.Decide(ctx, e.OwnerA.ID, d.ID, approvals.Decision{Approve: false, BindingHash: d.BindingHash}); err != nil {
		t.Fatal(err)
	}
	p := live
	if agentMode == core.ModeTest {
		p = test
	}
	got = of(p, d.ID)
	if len(got) != 2 || testenv.EventData(t, got[1])["status"] != "declined" {
		t.Fatalf("declined in the agents' mode (%s): %v", agentMode, testenv.EventTypes(got))
	}

	// Approval events are the account's: an agent's credential, whatever
	// its scopes, lists none of them and may not ask for them.
	agent := core.Principal{OwnerID: e.OwnerA.ID, Kind: core.PrincipalOAuthGrant, Mode: core.ModeTest, Scopes: core.FaxScopes()}
	page, err := e.Svc.Events.List(ctx, agent, nil, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range page.Data {
		if strings.HasPrefix(string(ev.Type), "approval.") {
			t.Fatalf("an agent reads %s", ev.Type)
		}
	}
	if _, err := e.Svc.Events.List(ctx, agent, []events.Type{events.ApprovalDecided}, "", 10); core.ErrorCode(err) != core.CodeInsufficientScope {
		t.Fatalf("an agent asks for approval events: %v", err)
	}
}

// Every approval is created and decided through this package (Create,
// Record), so none misses its event: outside core/approvals and the store,
// no code calls the store's CreateApproval or DecideApproval.
func TestApprovalWritesGoThroughApprovals(t *testing.T) {
	testenv.EachCall(t, "../..", []string{"core/approvals", "core/store", "conformance"}, func(rel string, call *ast.CallExpr) {
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok && (sel.Sel.Name == "CreateApproval" || sel.Sel.Name == "DecideApproval") {
			t.Errorf("%s calls %s directly; use approvals.Create or approvals.Record", rel, sel.Sel.Name)
		}
	})
}
