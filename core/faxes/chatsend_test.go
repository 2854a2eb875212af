package faxes_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/internal/testenv"
)

// chatApp is a chat app's OAuth grant of owner with scopes.
func chatApp(ownerID, client string, scopes ...core.Scope) core.Principal {
	return core.Principal{OwnerID: ownerID, Kind: core.PrincipalOAuthGrant, Mode: core.ModeTest, Scopes: scopes,
		SubjectID: "grant_" + client, ClientID: "client_" + client, ClientName: "App " + client}
}

// ask sends d and wants the owner asked (no fax).
func ask(t *testing.T, e *testenv.Env, p core.Principal, draftID, approvalID string) *approvals.Approval {
	t.Helper()
	cs, err := e.Svc.Faxes.SendChatDraft(ctx, p, draftID, approvalID)
	if err != nil {
		t.Fatalf("send_fax: %v", err)
	}
	if cs.Fax != nil || cs.Approval == nil || cs.Approval.Status != approvals.Pending || cs.Approval.Kind != approvals.KindChatSend ||
		!cs.Approval.RequiresUV || !strings.HasSuffix(cs.ApprovalURL, "/console/approvals/"+cs.Approval.ID) {
		t.Fatalf("send_fax without the owner's approval = %+v", cs)
	}
	return cs.Approval
}

func decide(t *testing.T, e *testenv.Env, ownerID string, a *approvals.Approval, approve bool) {
	t.Helper()
	if _, err := e.Svc.Approvals.Decide(ctx, ownerID, a.ID, approvals.Decision{Approve: approve, BindingHash: a.BindingHash, UserVerified: true}); err != nil {
		t.Fatalf("decide: %v", err)
	}
}

func balance(t *testing.T, e *testenv.Env, p core.Principal) int64 {
	t.Helper()
	return e.Credits(t, core.OwnerPrincipal(p.OwnerID, p.Mode)).AvailableMicros
}

func TestChatSendApproved(t *testing.T) {
	e, _ := testenv.Clocked(t)
	p := chatApp(e.OwnerA.ID, "claude", core.ScopeFaxRead, core.ScopeFaxDraft)
	d := newDraft(t, e, p, 2)
	before := balance(t, e, p)

	a := ask(t, e, p, d.ID, "")
	// The same arguments find the same approval: one in the inbox.
	if again := ask(t, e, p, d.ID, ""); again.ID != a.ID {
		t.Fatalf("second ask made approval %s, want %s", again.ID, a.ID)
	}
	pending, err := e.Svc.Approvals.ListPending(ctx, e.OwnerA.ID)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(pending); n != 1 || pending[0].ID != a.ID || !strings.Contains(pending[0].Summary, "App claude") ||
		!strings.Contains(pending[0].Summary, "+12125550100") || !strings.Contains(string(pending[0].Details), d.ID) {
		t.Fatalf("inbox = %+v", pending)
	}
	// The page's previews are of exactly this draft.
	if pv, err := e.Svc.Faxes.PreviewChatSend(ctx, e.OwnerA.ID, a); err != nil || pv.Pages != 2 {
		t.Fatalf("preview = %+v %v", pv, err)
	}
	if _, err := e.Svc.Faxes.PreviewChatSend(ctx, e.OwnerB.ID, a); core.ErrorKind(err) != core.KindNotFound {
		t.Fatalf("another owner's preview: %v", err)
	}

	// Neither another owner nor an approval without user verification
	// decides it.
	_, err = e.Svc.Approvals.Decide(ctx, e.OwnerB.ID, a.ID, approvals.Decision{Approve: true, BindingHash: a.BindingHash, UserVerified: true})
	if core.ErrorKind(err) != core.KindNotFound {
		t.Fatalf("owner B decides A's approval: %v", err)
	}
	_, err = e.Svc.Approvals.Decide(ctx, e.OwnerA.ID, a.ID, approvals.Decision{Approve: true, BindingHash: a.BindingHash})
	testenv.WantCode(t, err, approvals.CodeUserVerification)
	if b := balance(t, e, p); b != before {
		t.Fatalf("charged %d before the approval", before-b)
	}

	decide(t, e, e.OwnerA.ID, a, true)
	if b := balance(t, e, p); b != before {
		t.Fatalf("approving charged %d: the retry sends", before-b)
	}
	cs, err := e.Svc.Faxes.SendChatDraft(ctx, p, d.ID, "")
	if err != nil || cs.Fax == nil || cs.Replayed || cs.Fax.Status != faxes.Queued || cs.Fax.PriceMicros != d.PriceMicros || *cs.Fax.DraftID != d.ID {
		t.Fatalf("retry after approval = %+v %v", cs, err)
	}
	if cs.Fax.SentBy.Kind != core.PrincipalOAuthGrant {
		t.Fatalf("sent by %+v", cs.Fax.SentBy)
	}
	// Two more retries, by draft and by approval id: the same fax.
	for _, ref := range []string{"", a.ID} {
		again, err := e.Svc.Faxes.SendChatDraft(ctx, p, d.ID, ref)
		if err != nil || again.Fax == nil || !again.Replayed || again.Fax.ID != cs.Fax.ID {
			t.Fatalf("retry %q = %+v %v", ref, again, err)
		}
	}
	if spent := before - balance(t, e, p); spent != d.PriceMicros {
		t.Fatalf("spent %d, want the price %d once", spent, d.PriceMicros)
	}
	page, err := e.Svc.Faxes.List(ctx, p, faxes.ListRequest{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 {
		t.Fatalf("%d faxes, want 1", len(page.Data))
	}
}

func TestChatSendRefused(t *testing.T) {
	e, clk := testenv.Clocked(t)
	p := chatApp(e.OwnerA.ID, "claude", core.ScopeFaxRead, core.ScopeFaxDraft)
	before := balance(t, e, p)
	nothingCharged := func(t *testing.T) {
		t.Helper()
		if b := balance(t, e, p); b != before {
			t.Fatalf("charged %d", before-b)
		}
	}

	t.Run("declined", func(t *testing.T) {
		d := newDraft(t, e, p, 1)
		a := ask(t, e, p, d.ID, "")
		decide(t, e, e.OwnerA.ID, a, false)
		for _, ref := range []string{"", a.ID} {
			_, err := e.Svc.Faxes.SendChatDraft(ctx, p, d.ID, ref)
			testenv.WantCode(t, err, faxes.CodeApprovalDeclined)
		}
		nothingCharged(t)
	})

	t.Run("expired", func(t *testing.T) {
		d := newDraft(t, e, p, 1)
		a := ask(t, e, p, d.ID, "")
		clk.Advance(16 * time.Minute)
		_, err := e.Svc.Faxes.SendChatDraft(ctx, p, d.ID, "")
		testenv.WantCode(t, err, faxes.CodeApprovalExpired)
		_, err = e.Svc.Approvals.Decide(ctx, e.OwnerA.ID, a.ID, approvals.Decision{Approve: true, BindingHash: a.BindingHash, UserVerified: true})
		testenv.WantCode(t, err, approvals.CodeApprovalState)
		_, err = e.Svc.Faxes.SendChatDraft(ctx, p, d.ID, a.ID)
		testenv.WantCode(t, err, faxes.CodeApprovalExpired)
		nothingCharged(t)
	})

	t.Run("changed", func(t *testing.T) {
		d := newDraft(t, e, p, 1)
		a := ask(t, e, p, d.ID, "")
		decide(t, e, e.OwnerA.ID, a, true)
		// The approval names another fax (another draft: another document,
		// destination or price) than the one sent now.
		other, err := e.Svc.Faxes.CreateDraft(ctx, p, faxes.CreateDraftRequest{To: "+12125550199", UploadToken: e.Upload(t, p, 3)})
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.Svc.Faxes.SendChatDraft(ctx, p, other.ID, a.ID)
		testenv.WantCode(t, err, approvals.CodeApprovalBinding)
		// Another app cannot use this app's approval: it is asked anew.
		q := chatApp(e.OwnerA.ID, "other", core.ScopeFaxRead, core.ScopeFaxDraft)
		_, err = e.Svc.Faxes.SendChatDraft(ctx, q, d.ID, a.ID)
		testenv.WantCode(t, err, approvals.CodeApprovalBinding)
		if b := ask(t, e, q, d.ID, ""); b.ID == a.ID {
			t.Fatal("another app found this app's approval")
		}
		// Another owner's approval id is not found.
		pb := chatApp(e.OwnerB.ID, "claude", core.ScopeFaxRead, core.ScopeFaxDraft)
		db := newDraft(t, e, pb, 1)
		_, err = e.Svc.Faxes.SendChatDraft(ctx, pb, db.ID, a.ID)
		if core.ErrorKind(err) != core.KindNotFound {
			t.Fatalf("owner B names A's approval: %v", err)
		}
		nothingCharged(t)
	})

	t.Run("concurrent first calls ask once", func(t *testing.T) {
		d := newDraft(t, e, p, 1)
		ids := make([]string, 4)
		var wg sync.WaitGroup
		for i := range ids {
			wg.Go(func() {
				if cs, err := e.Svc.Faxes.SendChatDraft(ctx, p, d.ID, ""); err == nil && cs.Approval != nil {
					ids[i] = cs.Approval.ID
				}
			})
		}
		wg.Wait()
		for _, id := range ids {
			if id == "" || id != ids[0] {
				t.Fatalf("concurrent asks made approvals %v, want one", ids)
			}
		}
	})

	t.Run("bounded", func(t *testing.T) {
		pb := chatApp(e.OwnerB.ID, "flood", core.ScopeFaxRead, core.ScopeFaxDraft)
		doc := e.Upload(t, pb, 1)
		var err error
		for i := range 21 {
			var d *faxes.DraftView
			if d, err = e.Svc.Faxes.CreateDraft(ctx, pb, faxes.CreateDraftRequest{To: "+12125550100", DocumentID: "", UploadToken: doc}); err != nil {
				t.Fatal(err)
			}
			if _, err = e.Svc.Faxes.SendChatDraft(ctx, pb, d.ID, ""); err != nil && i < 20 {
				t.Fatalf("ask %d: %v", i, err)
			}
		}
		testenv.WantCode(t, err, core.CodeRateLimited)
	})
}

func TestChatSendSetting(t *testing.T) {
	e, _ := testenv.Clocked(t)
	full := chatApp(e.OwnerA.ID, "claude", core.FaxScopes()...)
	key := e.Principal(t, e.KeyATest)
	owner := core.OwnerPrincipal(e.OwnerA.ID, core.ModeTest)

	// Off (the default): a grant with fax:send sends at once.
	cs, err := e.Svc.Faxes.SendChatDraft(ctx, full, newDraft(t, e, full, 1).ID, "")
	if err != nil || cs.Fax == nil {
		t.Fatalf("send with the setting off = %+v %v", cs, err)
	}
	if _, err := e.Svc.Faxes.PutSettings(ctx, owner, faxes.Settings{ApproveChatSends: true}); err != nil {
		t.Fatal(err)
	}
	ask(t, e, full, newDraft(t, e, full, 1).ID, "")
	// An API key is not a chat app: it sends as before.
	if f, _, err := e.Svc.Faxes.SendDraft(ctx, key, newDraft(t, e, key, 1).ID); err != nil || f == nil {
		t.Fatalf("API key send with the setting on: %v", err)
	}
	if cs, err := e.Svc.Faxes.SendChatDraft(ctx, key, newDraft(t, e, key, 1).ID, ""); err != nil || cs.Fax == nil {
		t.Fatalf("API key through SendChatDraft: %+v %v", cs, err)
	}
	// Only the owner in the console turns it off: an API key or an app
	// saving the settings keeps it on.
	for _, p := range []core.Principal{key, full} {
		st, err := e.Svc.Faxes.PutSettings(ctx, p, faxes.Settings{Header: "Acme"})
		if err != nil && core.ErrorCode(err) != core.CodeInsufficientScope {
			t.Fatal(err)
		}
		if err == nil && !st.ApproveChatSends {
			t.Fatalf("%s turned the setting off", p.Kind)
		}
	}
	if st, _ := e.Svc.Faxes.Settings(ctx, e.OwnerA.ID); !st.ApproveChatSends {
		t.Fatal("setting lost")
	}
	if _, err := e.Svc.Faxes.PutSettings(ctx, owner, faxes.Settings{}); err != nil {
		t.Fatal(err)
	}
	if cs, err := e.Svc.Faxes.SendChatDraft(ctx, full, newDraft(t, e, full, 1).ID, ""); err != nil || cs.Fax == nil {
		t.Fatalf("send after the owner turned it off = %+v %v", cs, err)
	}

	// A grant that may not even draft is refused as before.
	readOnly := chatApp(e.OwnerA.ID, "reader", core.ScopeFaxRead)
	_, err = e.Svc.Faxes.SendChatDraft(ctx, readOnly, "drf_x", "")
	testenv.WantCode(t, err, core.CodeInsufficientScope)
}
