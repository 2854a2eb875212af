package tasks_test

import (
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/numbers"
	"github.com/faxhub/faxhub/core/tasks"
	"github.com/faxhub/faxhub/internal/testenv"
)

func TestNumberTask(t *testing.T) {
	e := testenv.New(t)
	p := e.Principal(t, e.KeyATest)
	v, err := e.Svc.Tasks.StartNumberTask(ctx, p, "buy_number", "", numbers.BuyRequest{Number: "+13125550120"})
	if err != nil {
		t.Fatal(err)
	}
	wantState(t, "reserved", v, tasks.InputRequired, "")
	if v.CheckoutURL == "" || v.Number == nil || v.Number.E164 != "+13125550120" {
		t.Fatalf("task: %+v", v)
	}
	cs, err := e.Svc.Checkout.StartNumber(ctx, p, v.SubjectID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Svc.Checkout.Complete(ctx, cs.ID); err != nil {
		t.Fatal(err)
	}
	e.DrainQueue(t)
	wantState(t, "paid", getTask(t, e, p, v.ID), tasks.Completed, "")
	if _, err := e.Svc.Tasks.Cancel(ctx, p, v.ID); core.ErrorCode(err) != tasks.CodeNotCancelable {
		t.Fatalf("cancel a completed number task: %v", err)
	}

	v2, err := e.Svc.Tasks.StartNumberTask(ctx, p, "buy_number", "", numbers.BuyRequest{Number: "+13125550121"})
	if err != nil {
		t.Fatal(err)
	}
	v2, err = e.Svc.Tasks.Cancel(ctx, p, v2.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantState(t, "canceled", v2, tasks.Canceled, "canceled")
}
