package hosts_test

import (
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/hosts"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/internal/testenv"
)

// delegatedEnv is a service whose agents act in test mode, on a test clock.
func delegatedEnv(t *testing.T, opts ...testenv.Option) (*testenv.Env, *testenv.Clock) {
	clk := testenv.NewClockAt(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
	opts = append([]testenv.Option{testenv.WithoutWorkers(), testenv.WithConfig(func(c *services.Config) {
		c.Now = clk.Now
		c.AgentMode = core.ModeTest
	})}, opts...)
	return testenv.New(t, opts...), clk
}

// sender is an active agent with send_fax and get_fax_status, and its
// principal.
func sender(t *testing.T, e *testenv.Env) (*hosts.Host, *hosts.Agent, core.Principal) {
	t.Helper()
	h := newHost(t, e)
	a := approveAgent(t, e, h, hosts.CapSendFax, hosts.CapGetFaxStatus)
	return h, a, e.Svc.Hosts.Principal(h, a, nil)
}

func requestSend(t *testing.T, e *testenv.Env, p core.Principal, a *hosts.Agent) *hosts.Send {
	t.Helper()
	tok := e.Upload(t, e.Principal(t, e.KeyATest), 2)
	d, err := e.Svc.Hosts.RequestSend(ctx, p, a, hosts.SendRequest{To: "+12125550100", UploadToken: tok, Cover: true, CoverText: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func sendStatus(t *testing.T, e *testenv.Env, p core.Principal, a *hosts.Agent, id string) (hosts.SendStatus, *faxes.Fax) {
	t.Helper()
	d, f, err := e.Svc.Hosts.GetSend(ctx, p, a, id)
	if err != nil {
		t.Fatal(err)
	}
	return d.Status, f
}

func faxCount(t *testing.T, e *testenv.Env) int {
	t.Helper()
	fs, err := e.Store.ListFaxes(ctx, faxes.Filter{OwnerID: e.OwnerA.ID, Mode: core.ModeTest, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return len(fs)
}

func TestDelegatedSendApproval(t *testing.T) {
	e, _ := delegatedEnv(t)
	_, a, p := sender(t, e)
	before := e.Credits(t, e.Principal(t, e.KeyATest)).AvailableMicros
	d := requestSend(t, e, p, a)
	if d.Status != hosts.SendPending || d.Pages != 2 || !d.Cover || d.DocumentSHA == "" || d.ApprovalPath == "" {
		t.Fatalf("send = %+v", d)
	}
	appr, err := e.Svc.Approvals.Get(ctx, e.OwnerA.ID, d.ApprovalID)
	if err != nil || appr.Kind != approvals.KindFaxSend || !appr.RequiresUV {
		t.Fatalf("approval = %+v, %v", appr, err)
	}
	// Nothing is charged while it waits.
	if got := e.Credits(t, e.Principal(t, e.KeyATest)).AvailableMicros; got != before || faxCount(t, e) != 0 {
		t.Fatalf("charged before approval: %d → %d", before, got)
	}
	// Without user verification: refused, still pending.
	_, err = e.Svc.Approvals.Decide(ctx, e.OwnerA.ID, appr.ID, approvals.Decision{Approve: true, BindingHash: appr.BindingHash})
	testenv.WantCode(t, err, approvals.CodeUserVerification)
	// Concurrent approvals with UV: exactly one fax and one hold.
	wins := e.RaceApprovals(t, e.OwnerA.ID, appr, 10)
	if wins != 1 || faxCount(t, e) != 1 {
		t.Fatalf("%d approvals won, %d faxes", wins, faxCount(t, e))
	}
	st, f := sendStatus(t, e, p, a, d.ID)
	if st != hosts.SendSent || f == nil || f.To != d.To || f.Pages != 2 || f.PriceMicros != d.PriceMicros {
		t.Fatalf("status %s, fax %+v", st, f)
	}
	// The fax names the agent that asked, and its host, as its door.
	if f.SentBy.Kind != core.PrincipalDelegated || f.SentBy.ID != a.ID || f.SentBy.Name != p.ClientName {
		t.Fatalf("sent by %+v, want the agent %s (%s)", f.SentBy, a.ID, p.ClientName)
	}
	if got := e.Credits(t, e.Principal(t, e.KeyATest)).AvailableMicros; got != before-d.PriceMicros {
		t.Fatalf("balance %d, want %d", got, before-d.PriceMicros)
	}
	// A replayed decision is refused.
	_, err = e.Svc.Approvals.Decide(ctx, e.OwnerA.ID, appr.ID, approvals.Decision{Approve: true, BindingHash: appr.BindingHash, UserVerified: true})
	testenv.WantCode(t, err, approvals.CodeApprovalState)
	// Another agent cannot read it.
	h2 := newHost(t, e)
	other := approveAgent(t, e, h2, hosts.CapSendFax)
	_, _, err = e.Svc.Hosts.GetSend(ctx, e.Svc.Hosts.Principal(h2, other, nil), other, d.ID)
	testenv.WantCode(t, err, core.CodeNotFound)
}

func TestDelegatedSendRefusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   []testenv.Option
		before func(t *testing.T, e *testenv.Env, clk *testenv.Clock, h *hosts.Host, a *hosts.Agent, d *hosts.Send)
		decide bool // approve (true) or decline
		code   string
		status hosts.SendStatus
	}{
		{name: "declined", status: hosts.SendDeclined},
		{name: "expired", decide: true, code: approvals.CodeApprovalState, status: hosts.SendExpired,
			before: func(t *testing.T, e *testenv.Env, clk *testenv.Clock, h *hosts.Host, a *hosts.Agent, d *hosts.Send) {
				clk.Advance(hosts.SendTTL + time.Second)
			}},
		{name: "agent revoked", decide: true, code: hosts.CodeAgentRevoked, status: hosts.SendPending,
			before: func(t *testing.T, e *testenv.Env, clk *testenv.Clock, h *hosts.Host, a *hosts.Agent, d *hosts.Send) {
				if _, err := e.Svc.Hosts.RevokeAgent(ctx, e.OwnerA.ID, "", a.ID); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "host revoked", decide: true, code: hosts.CodeAgentRevoked, status: hosts.SendPending,
			before: func(t *testing.T, e *testenv.Env, clk *testenv.Clock, h *hosts.Host, a *hosts.Agent, d *hosts.Send) {
				if err := e.Svc.Hosts.Revoke(ctx, e.OwnerA.ID, h.ID); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "document gone", decide: true, code: approvals.CodeApprovalBinding, status: hosts.SendPending,
			before: func(t *testing.T, e *testenv.Env, clk *testenv.Clock, h *hosts.Host, a *hosts.Agent, d *hosts.Send) {
				later := clk.Now().Add(time.Hour)
				if err := e.Store.MarkDocumentPurged(ctx, d.DocumentID, clk.Now(), later, later); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "insufficient credits", opts: []testenv.Option{testenv.WithoutCredits()}, decide: true,
			code: credits.CodeInsufficientCredits, status: hosts.SendPending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := delegatedEnv(t, tc.opts...)
			h, a, p := sender(t, e)
			d := requestSend(t, e, p, a)
			if tc.before != nil {
				tc.before(t, e, clk, h, a, d)
			}
			appr, err := e.Store.GetApproval(ctx, e.OwnerA.ID, d.ApprovalID)
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Svc.Approvals.Decide(ctx, e.OwnerA.ID, appr.ID, approvals.Decision{Approve: tc.decide, BindingHash: appr.BindingHash, UserVerified: true})
			if tc.code != "" {
				testenv.WantCode(t, err, tc.code)
			} else if err != nil {
				t.Fatal(err)
			}
			if n := faxCount(t, e); n != 0 {
				t.Fatalf("%d faxes", n)
			}
			if st, _ := sendStatus(t, e, p, a, d.ID); st != tc.status {
				t.Fatalf("status %s, want %s", st, tc.status)
			}
			if tc.name == "insufficient credits" {
				// Top up and approve again: the approval stayed pending.
				if _, err := e.Svc.Credits.Grant(ctx, e.OwnerA.ID, core.ModeTest, 10_000_000, "top up"); err != nil {
					t.Fatal(err)
				}
				if _, err := e.Svc.Approvals.Decide(ctx, e.OwnerA.ID, appr.ID, approvals.Decision{Approve: true, BindingHash: appr.BindingHash, UserVerified: true}); err != nil {
					t.Fatal(err)
				}
				if st, f := sendStatus(t, e, p, a, d.ID); st != hosts.SendSent || f == nil {
					t.Fatalf("after top up: %s", st)
				}
			}
		})
	}
}

func TestDelegatedSendRequestErrors(t *testing.T) {
	e, _ := delegatedEnv(t)
	h, a, p := sender(t, e)
	reader := approveAgent(t, e, h, hosts.CapGetCredits)
	tok := e.Upload(t, e.Principal(t, e.KeyATest), 1)
	for _, tc := range []struct {
		name string
		a    *hosts.Agent
		r    hosts.SendRequest
		code string
	}{
		{"not granted", reader, hosts.SendRequest{To: "+12125550100", UploadToken: tok}, hosts.CodeCapabilityNotGranted},
		{"no document", a, hosts.SendRequest{To: "+12125550100"}, core.CodeInvalidRequest},
		{"both", a, hosts.SendRequest{To: "+12125550100", UploadToken: tok, DocumentID: "doc_x"}, core.CodeInvalidRequest},
		{"bad destination", a, hosts.SendRequest{To: "12", UploadToken: tok}, core.CodeInvalidDestination},
		{"cover text without cover", a, hosts.SendRequest{To: "+12125550100", UploadToken: tok, CoverText: "x"}, core.CodeInvalidRequest},
		{"unknown document", a, hosts.SendRequest{To: "+12125550100", DocumentID: "doc_nope"}, core.CodeNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pp := p
			if tc.a == reader {
				pp = e.Svc.Hosts.Principal(h, reader, nil)
			}
			_, err := e.Svc.Hosts.RequestSend(ctx, pp, tc.a, tc.r)
			testenv.WantCode(t, err, tc.code)
		})
	}
}

func TestDelegatedSendPendingLimit(t *testing.T) {
	e, clk := delegatedEnv(t)
	_, a, p := sender(t, e)
	first := requestSend(t, e, p, a)
	for range 19 {
		if _, err := e.Svc.Hosts.RequestSend(ctx, p, a, hosts.SendRequest{To: "+12125550100", DocumentID: first.DocumentID}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := e.Svc.Hosts.RequestSend(ctx, p, a, hosts.SendRequest{To: "+12125550100", DocumentID: first.DocumentID})
	testenv.WantCode(t, err, core.CodeRateLimited)
	// Once they expire the agent may ask again.
	clk.Advance(hosts.SendTTL)
	if _, err := e.Svc.Hosts.RequestSend(ctx, p, a, hosts.SendRequest{To: "+12125550100", DocumentID: first.DocumentID}); err != nil {
		t.Fatal(err)
	}
}

// PreviewSend composes the pending send the owner's approval is about, as
// it will be faxed (its cover page included); another owner's approval is
// not found, and a document gone is said, not shown.
func TestPreviewSend(t *testing.T) {
	e, _ := delegatedEnv(t)
	_, a, p := sender(t, e)
	d := requestSend(t, e, p, a)
	pv, err := e.Svc.Hosts.PreviewSend(ctx, e.OwnerA.ID, d.ApprovalID)
	if err != nil {
		t.Fatal(err)
	}
	if pv.Files.Pages != d.Pages+1 || len(pv.Files.PageImages) != d.Pages+1 || pv.DocumentID != d.DocumentID {
		t.Fatalf("preview of a %d-page send with a cover page: %+v", d.Pages, pv.Files)
	}
	_, err = e.Svc.Hosts.PreviewSend(ctx, e.OwnerB.ID, d.ApprovalID)
	testenv.WantCode(t, err, core.CodeNotFound)
	far := time.Now().Add(365 * 24 * time.Hour)
	if err := e.Store.MarkDocumentPurged(ctx, d.DocumentID, far, far, far); err != nil {
		t.Fatal(err)
	}
	_, err = e.Svc.Hosts.PreviewSend(ctx, e.OwnerA.ID, d.ApprovalID)
	testenv.WantCode(t, err, faxes.CodeDocumentPurged)
}
