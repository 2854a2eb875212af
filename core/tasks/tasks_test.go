package tasks_test

import (
	"strings"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/core/store"
	"github.com/faxhub/faxhub/core/tasks"
	"github.com/faxhub/faxhub/internal/testenv"
)

// startFaxTask starts a fax task of pages pages to to.
func startFaxTask(t *testing.T, e *testenv.Env, p core.Principal, to string, pages int) *tasks.View {
	t.Helper()
	v, err := e.Svc.Tasks.StartFaxTask(ctx, p, "create_fax", "", faxes.CreateDraftRequest{To: to, UploadToken: e.Upload(t, p, pages)})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// payTask pays a fax task's draft at its hosted checkout.
func payTask(t *testing.T, e *testenv.Env, p core.Principal, v *tasks.View) {
	t.Helper()
	cs, err := e.Svc.Checkout.StartDraft(ctx, p, v.SubjectID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Svc.Checkout.Complete(ctx, cs.ID); err != nil {
		t.Fatal(err)
	}
}

func getTask(t *testing.T, e *testenv.Env, p core.Principal, id string) *tasks.View {
	t.Helper()
	v, err := e.Svc.Tasks.Get(ctx, p, id)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// wantRefund finds exactly one refund entry of the fax in the ledger, of
// micros.
func wantRefund(t *testing.T, c *credits.Account, faxID string, micros int64) {
	t.Helper()
	var found []credits.LedgerEntry
	for _, le := range c.Ledger {
		if le.Kind == credits.LedgerRefund && le.FaxID != nil && *le.FaxID == faxID {
			found = append(found, le)
		}
	}
	if len(found) != 1 || found[0].AmountMicros != micros {
		t.Fatalf("refunds of %s: %+v, want one of %d micros", faxID, found, micros)
	}
}

func wantState(t *testing.T, what string, v *tasks.View, state tasks.State, failure string) {
	t.Helper()
	if v.State != state || v.FailureCode != failure {
		t.Fatalf("%s: state %s failure %q, want %s %q (message %q)", what, v.State, v.FailureCode, state, failure, v.Message)
	}
}

// A fax task waits for the owner at the draft's checkout, works while the
// fax is sent and completes when it is delivered.
func TestFaxTaskDelivered(t *testing.T) {
	e := testenv.New(t)
	p := e.Principal(t, e.KeyATest)
	v := startFaxTask(t, e, p, "+12125550100", 3)
	wantState(t, "started", v, tasks.InputRequired, "")
	if !strings.HasPrefix(v.ID, core.PrefixTask) || !strings.HasPrefix(v.ContextID, core.PrefixContext) || v.Kind != tasks.KindFax || v.Skill != "create_fax" {
		t.Fatalf("task = %+v", v.Task)
	}
	if v.Draft == nil || v.SubjectID != v.Draft.ID || v.CheckoutURL != e.Svc.Tasks.DraftCheckoutURL(&v.Draft.Draft) {
		t.Fatalf("draft %+v checkout %q", v.Draft, v.CheckoutURL)
	}
	for _, want := range []string{v.Draft.Quote.Amount, v.CheckoutURL, "owner pays", "GetTask"} {
		if !strings.Contains(v.Message, want) {
			t.Fatalf("message %q does not say %q", v.Message, want)
		}
	}
	wantState(t, "read", getTask(t, e, p, v.ID), tasks.InputRequired, "")

	payTask(t, e, p, v)
	got := getTask(t, e, p, v.ID)
	wantState(t, "paid", got, tasks.Working, "")
	// The delivery workers run: the fax may be sending already.
	if got.Fax == nil || (got.Fax.Status != faxes.Queued && got.Fax.Status != faxes.Sending) || got.Fax.PaymentMethod != faxes.PayCheckout {
		t.Fatalf("fax %+v", got.Fax)
	}
	e.DrainQueue(t)
	got = getTask(t, e, p, v.ID)
	wantState(t, "delivered", got, tasks.Completed, "")
	if got.Fax.Status != faxes.Delivered || got.Fax.LatestAttempt == nil || got.Fax.Price == "" {
		t.Fatalf("fax %+v", got.Fax)
	}
}

// Every way a paid fax task ends, with what returns to the owner's credits
// (the fax was paid at its checkout, so the balance only moves by refunds).
func TestFaxTaskOutcomes(t *testing.T) {
	e := testenv.New(t)
	p := e.Principal(t, e.KeyATest)
	tests := []struct {
		name     string
		to       string
		state    tasks.State
		failure  string
		message  string
		refunded int64 // micro-USD returned as credits
	}{
		{"delivered", "+12125550100", tasks.Completed, "", "all 4 page(s)", 0},
		{"partial", "+12125550104", tasks.Completed, "", "2 of 4 pages delivered", 140_000},
		{"failed", "+12125550103", tasks.Failed, "not_a_fax_machine", "failed (not_a_fax_machine)", 280_000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := startFaxTask(t, e, p, tc.to, 4)
			before := e.Credits(t, p).AvailableMicros
			payTask(t, e, p, v)
			e.DrainQueue(t)
			got := getTask(t, e, p, v.ID)
			wantState(t, tc.name, got, tc.state, tc.failure)
			if !strings.Contains(got.Message, tc.message) || got.Fax == nil || got.Fax.LatestAttempt == nil {
				t.Fatalf("message %q (want %q), fax %+v", got.Message, tc.message, got.Fax)
			}
			if !got.UpdatedAt.Equal(*got.Fax.CompletedAt) {
				t.Fatalf("updatedAt %v, fax completed %v", got.UpdatedAt, got.Fax.CompletedAt)
			}
			c := e.Credits(t, p)
			if back := c.AvailableMicros - before; back != tc.refunded || c.HeldMicros != 0 {
				t.Fatalf("%d micros came back (held %d), want %d", back, c.HeldMicros, tc.refunded)
			}
			if tc.refunded > 0 {
				wantRefund(t, c, got.Fax.ID, tc.refunded)
			}
		})
	}
}

// An unpaid draft expires: the task fails with draft_expired and nothing
// can be paid or canceled any more.
func TestFaxTaskDraftExpired(t *testing.T) {
	e, clk := testenv.Clocked(t)
	p := e.Principal(t, e.KeyATest)
	v := startFaxTask(t, e, p, "+12125550100", 1)
	clk.Advance(23 * time.Hour)
	wantState(t, "before expiry", getTask(t, e, p, v.ID), tasks.InputRequired, "")
	clk.Advance(time.Hour)
	got := getTask(t, e, p, v.ID)
	wantState(t, "expired", got, tasks.Failed, "draft_expired")
	if !got.UpdatedAt.Equal(got.Draft.ExpiresAt) || got.CheckoutURL != "" {
		t.Fatalf("updatedAt %v (draft expires %v), checkout %q", got.UpdatedAt, got.Draft.ExpiresAt, got.CheckoutURL)
	}
	_, err := e.Svc.Tasks.Cancel(ctx, p, v.ID)
	testenv.WantCode(t, err, tasks.CodeNotCancelable)
}

// A task whose draft row is gone reads as failed, not as an error.
func TestFaxTaskSubjectGone(t *testing.T) {
	e, _ := testenv.Clocked(t)
	p := e.Principal(t, e.KeyATest)
	v := startFaxTask(t, e, p, "+12125550100", 1)
	del := "DELETE FROM drafts WHERE id = ?"
	if e.DB.Dialect() == store.DialectPostgres {
		del = "DELETE FROM drafts WHERE id = $1"
	}
	if _, err := e.DB.SQL().ExecContext(ctx, del, v.SubjectID); err != nil {
		t.Fatal(err)
	}
	wantState(t, "draft gone", getTask(t, e, p, v.ID), tasks.Failed, "draft_expired")
	_, err := e.Svc.Tasks.Cancel(ctx, p, v.ID)
	testenv.WantCode(t, err, tasks.CodeNotCancelable)
}

// Another owner's task, a task of the other mode and an unknown id all
// answer the same not_found.
func TestFaxTaskNotFound(t *testing.T) {
	e, _ := testenv.Clocked(t)
	p := e.Principal(t, e.KeyATest)
	v := startFaxTask(t, e, p, "+12125550100", 1)
	_, unknown := e.Svc.Tasks.Get(ctx, p, "tsk_unknown")
	testenv.WantCode(t, unknown, core.CodeNotFound)
	for name, q := range map[string]core.Principal{
		"other owner": e.Principal(t, e.KeyBTest),
		"other mode":  e.Principal(t, e.KeyALive),
	} {
		_, err := e.Svc.Tasks.Get(ctx, q, v.ID)
		testenv.WantCode(t, err, core.CodeNotFound)
		if err.Error() != unknown.Error() {
			t.Fatalf("%s: %v, unknown id: %v", name, err, unknown)
		}
		_, err = e.Svc.Tasks.Cancel(ctx, q, v.ID)
		if err == nil || err.Error() != unknown.Error() {
			t.Fatalf("%s: cancel: %v, unknown id: %v", name, err, unknown)
		}
	}
	wantState(t, "still open for its owner", getTask(t, e, p, v.ID), tasks.InputRequired, "")
}

// Get needs fax:read; StartFaxTask and CancelTask need fax:draft.
func TestFaxTaskScopes(t *testing.T) {
	e, _ := testenv.Clocked(t)
	p := e.Principal(t, e.KeyATest)
	v := startFaxTask(t, e, p, "+12125550100", 1)
	only := func(scopes ...core.Scope) core.Principal {
		q := p
		q.Scopes = scopes
		return q
	}
	draftOnly, readOnly := only(core.ScopeFaxDraft), only(core.ScopeFaxRead, core.ScopeFaxSend)
	tok := e.Upload(t, p, 1)
	tests := []struct {
		name string
		call func() error
	}{
		{"GetTask without fax:read", func() error { _, err := e.Svc.Tasks.Get(ctx, draftOnly, v.ID); return err }},
		{"StartFaxTask without fax:draft", func() error {
			_, err := e.Svc.Tasks.StartFaxTask(ctx, readOnly, "create_fax", "", faxes.CreateDraftRequest{To: "+12125550100", UploadToken: tok})
			return err
		}},
		{"CancelTask without fax:draft", func() error { _, err := e.Svc.Tasks.Cancel(ctx, readOnly, v.ID); return err }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			testenv.WantCode(t, tc.call(), core.CodeInsufficientScope)
		})
	}
	wantState(t, "untouched", getTask(t, e, p, v.ID), tasks.InputRequired, "")
	// fax:draft alone is enough to cancel.
	got, err := e.Svc.Tasks.Cancel(ctx, draftOnly, v.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantState(t, "canceled with fax:draft", got, tasks.Canceled, "canceled")
}

// StartFaxTask keeps the agent's context id and bounds what it records.
func TestStartFaxTaskInputs(t *testing.T) {
	e, _ := testenv.Clocked(t)
	p := e.Principal(t, e.KeyATest)
	v, err := e.Svc.Tasks.StartFaxTask(ctx, p, "create_fax", "conversation-7", faxes.CreateDraftRequest{To: "+12125550100", UploadToken: e.Upload(t, p, 1)})
	if err != nil || v.ContextID != "conversation-7" {
		t.Fatalf("task %+v, %v", v, err)
	}
	tok := e.Upload(t, p, 1)
	for _, tc := range []struct{ skill, contextID string }{
		{strings.Repeat("s", tasks.MaxSkill+1), ""},
		{"create_fax", strings.Repeat("c", tasks.MaxContextID+1)},
	} {
		_, err := e.Svc.Tasks.StartFaxTask(ctx, p, tc.skill, tc.contextID, faxes.CreateDraftRequest{To: "+12125550100", UploadToken: tok})
		testenv.WantCode(t, err, core.CodeInvalidRequest)
	}
	_, err = e.Svc.Tasks.StartFaxTask(ctx, p, "create_fax", "", faxes.CreateDraftRequest{To: "+19005550100", UploadToken: tok})
	testenv.WantCode(t, err, core.CodePremiumDestination)
}

// Cancel: an open draft and a queued fax can be called back (the queued
// fax's price returns as credits); once sending has started or the task is
// final, task_not_cancelable says why.
func TestCancelFaxTask(t *testing.T) {
	e, _ := testenv.Clocked(t) // no workers: a paid fax stays queued
	p := e.Principal(t, e.KeyATest)

	t.Run("open draft", func(t *testing.T) {
		v := startFaxTask(t, e, p, "+12125550100", 1)
		before := e.Credits(t, p).AvailableMicros
		got, err := e.Svc.Tasks.Cancel(ctx, p, v.ID)
		if err != nil {
			t.Fatal(err)
		}
		wantState(t, "canceled", got, tasks.Canceled, "canceled")
		wantState(t, "read back", getTask(t, e, p, v.ID), tasks.Canceled, "canceled")
		if after := e.Credits(t, p).AvailableMicros; after != before {
			t.Fatalf("balance moved by %d", after-before)
		}
		_, err = e.Svc.Tasks.Cancel(ctx, p, v.ID)
		testenv.WantCode(t, err, tasks.CodeNotCancelable)
		if !strings.Contains(core.AsError(err).Message, "already final") {
			t.Fatalf("message: %v", err)
		}
		// Its checkout can no longer be paid.
		_, err = e.Svc.Checkout.StartDraft(ctx, p, v.SubjectID)
		testenv.WantCode(t, err, faxes.CodeDraftState)
	})

	t.Run("queued fax", func(t *testing.T) {
		v := startFaxTask(t, e, p, "+12125550100", 3)
		payTask(t, e, p, v)
		wantState(t, "paid", getTask(t, e, p, v.ID), tasks.Working, "")
		before := e.Credits(t, p).AvailableMicros
		got, err := e.Svc.Tasks.Cancel(ctx, p, v.ID)
		if err != nil {
			t.Fatal(err)
		}
		wantState(t, "canceled", got, tasks.Canceled, "canceled")
		if got.Fax == nil || got.Fax.Status != faxes.Canceled {
			t.Fatalf("fax %+v", got.Fax)
		}
		c := e.Credits(t, p)
		if back := c.AvailableMicros - before; back != got.Fax.PriceMicros || back != 210_000 {
			t.Fatalf("%d micros came back, want the fax's price %d", back, got.Fax.PriceMicros)
		}
		wantRefund(t, c, got.Fax.ID, 210_000)
		_, err = e.Svc.Tasks.Cancel(ctx, p, v.ID)
		testenv.WantCode(t, err, tasks.CodeNotCancelable)
	})

	t.Run("sending", func(t *testing.T) {
		v := startFaxTask(t, e, p, "+12125550100", 1)
		payTask(t, e, p, v)
		f := getTask(t, e, p, v.ID).Fax
		f.Status = faxes.Sending
		if err := e.Store.UpdateFax(ctx, f, faxes.Queued); err != nil {
			t.Fatal(err)
		}
		wantState(t, "sending", getTask(t, e, p, v.ID), tasks.Working, "")
		before := e.Credits(t, p).AvailableMicros
		_, err := e.Svc.Tasks.Cancel(ctx, p, v.ID)
		testenv.WantCode(t, err, tasks.CodeNotCancelable)
		if e := core.AsError(err); e.Kind != core.KindConflict || !strings.Contains(e.Message, "sending") || e.Fields["faxId"] != f.ID {
			t.Fatalf("error %+v", e)
		}
		if after := e.Credits(t, p).AvailableMicros; after != before {
			t.Fatalf("balance moved by %d", after-before)
		}
	})
}

// CancelFax (fax:send) of a fax paid at its checkout returns its price as
// credits too: one rule for both ways of canceling.
func TestCancelFaxPaidAtCheckoutRefundsCredits(t *testing.T) {
	e, _ := testenv.Clocked(t)
	p := e.Principal(t, e.KeyATest)
	v := startFaxTask(t, e, p, "+12125550100", 1)
	payTask(t, e, p, v)
	f := getTask(t, e, p, v.ID).Fax
	before := e.Credits(t, p).AvailableMicros
	got, err := e.Svc.Faxes.Cancel(ctx, p, f.ID)
	if err != nil || got.Status != faxes.Canceled {
		t.Fatalf("cancel = %+v, %v", got, err)
	}
	if back := e.Credits(t, p).AvailableMicros - before; back != f.PriceMicros {
		t.Fatalf("%d micros came back, want %d", back, f.PriceMicros)
	}
	wantState(t, "task", getTask(t, e, p, v.ID), tasks.Canceled, "canceled")
}

// The garbage collector deletes tasks older than the unsent retention once
// what they follow has ended; a recent task stays, and a task of the
// retention's age whose fax is still queued stays too.
func TestPurgeFaxTasks(t *testing.T) {
	clock := testenv.NewClock()
	e := testenv.New(t, testenv.WithConfig(func(c *services.Config) { c.Now = clock.Now }))
	p := e.Principal(t, e.KeyATest)
	delivered := startFaxTask(t, e, p, "+12125550100", 1)
	payTask(t, e, p, delivered)
	e.DrainQueue(t)
	abandoned := startFaxTask(t, e, p, "+12125550100", 1)
	clock.Advance(6 * 24 * time.Hour)
	recent := startFaxTask(t, e, p, "+12125550100", 1)

	got, err := e.Svc.Retention.Purge(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c := testenv.PurgeCounts(got); c["agent_tasks"] != 0 || c["credit_purchases"] != 0 {
		t.Fatalf("after 6 days: %v", c)
	}
	clock.Advance(24*time.Hour + time.Minute)
	got, err = e.Svc.Retention.Purge(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c := testenv.PurgeCounts(got); c["agent_tasks"] != 2 {
		t.Fatalf("after 7 days: %v, want 2 agent tasks", c)
	}
	for _, v := range []*tasks.View{delivered, abandoned} {
		_, err := e.Svc.Tasks.Get(ctx, p, v.ID)
		testenv.WantCode(t, err, core.CodeNotFound)
	}
	wantState(t, "recent task", getTask(t, e, p, recent.ID), tasks.Failed, "draft_expired")
}
