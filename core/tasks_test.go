package core_test

import (
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/internal/testenv"
)

// startFaxTask starts a fax task of pages pages to to.
func startFaxTask(t *testing.T, e *testenv.Env, p core.Principal, to string, pages int) *core.TaskView {
	t.Helper()
	v, err := e.Svc.StartFaxTask(ctx, p, "create_fax", "", core.CreateDraftRequest{To: to, UploadToken: upload(t, e, p, pages)})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// payTask pays a fax task's draft at its hosted checkout.
func payTask(t *testing.T, e *testenv.Env, p core.Principal, v *core.TaskView) {
	t.Helper()
	cs, err := e.Svc.CreateDraftCheckout(ctx, p, v.SubjectID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Svc.CompleteCheckout(ctx, cs.ID); err != nil {
		t.Fatal(err)
	}
}

func getTask(t *testing.T, e *testenv.Env, p core.Principal, id string) *core.TaskView {
	t.Helper()
	v, err := e.Svc.GetTask(ctx, p, id)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func wantState(t *testing.T, what string, v *core.TaskView, state core.TaskState, failure string) {
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
	wantState(t, "started", v, core.TaskInputRequired, "")
	if !strings.HasPrefix(v.ID, core.PrefixTask) || !strings.HasPrefix(v.ContextID, core.PrefixContext) || v.Kind != core.TaskFax || v.Skill != "create_fax" {
		t.Fatalf("task = %+v", v.AgentTask)
	}
	if v.Draft == nil || v.SubjectID != v.Draft.ID || v.CheckoutURL != e.Svc.DraftCheckoutURL(&v.Draft.Draft) {
		t.Fatalf("draft %+v checkout %q", v.Draft, v.CheckoutURL)
	}
	for _, want := range []string{v.Draft.Quote.Amount, v.CheckoutURL, "owner pays", "GetTask"} {
		if !strings.Contains(v.Message, want) {
			t.Fatalf("message %q does not say %q", v.Message, want)
		}
	}
	wantState(t, "read", getTask(t, e, p, v.ID), core.TaskInputRequired, "")

	payTask(t, e, p, v)
	got := getTask(t, e, p, v.ID)
	wantState(t, "paid", got, core.TaskWorking, "")
	if got.Fax == nil || got.Fax.Status != core.FaxQueued || got.Fax.PaymentMethod != core.PayCheckout {
		t.Fatalf("fax %+v", got.Fax)
	}
	e.DrainQueue(t)
	got = getTask(t, e, p, v.ID)
	wantState(t, "delivered", got, core.TaskCompleted, "")
	if got.Fax.Status != core.FaxDelivered || got.Fax.LatestAttempt == nil || got.Fax.Price == "" {
		t.Fatalf("fax %+v", got.Fax)
	}
}
