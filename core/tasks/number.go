package tasks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/numbers"
)

// StartNumberTask reserves a number (BuyNumber) and returns the task that
// follows it: input_required with the checkoutUrl until the first month is
// paid, working while the provider provisions it, completed when it is
// active.
func (s *Service) StartNumberTask(ctx context.Context, p core.Principal, skill, contextID string, r numbers.BuyRequest) (*View, error) {
	contextID, err := taskLabels(skill, contextID)
	if err != nil {
		return nil, err
	}
	// A task's number is paid at the checkout: A2A never spends credits.
	r.PayWithCredits = false
	n, err := s.numbers.Buy(ctx, p, r)
	if err != nil {
		return nil, err
	}
	t := &Task{
		ID: core.NewID(core.PrefixTask), OwnerID: p.OwnerID, Mode: p.Mode, Kind: KindNumber, Skill: skill,
		ContextID: contextID, SubjectID: n.ID, CreatedAt: s.now(),
	}
	if err := s.d.Store.CreateAgentTask(ctx, t); err != nil {
		return nil, fmt.Errorf("create number task: %w", err)
	}
	return s.numberTaskView(ctx, p, t)
}

func (s *Service) numberTaskView(ctx context.Context, p core.Principal, t *Task) (*View, error) {
	v := &View{Task: *t, UpdatedAt: t.CreatedAt}
	n, err := s.numbers.Own(ctx, p, t.SubjectID)
	if errors.Is(err, core.ErrNoRows) {
		v.State, v.FailureCode, v.Message = Failed, "number_not_found", "the number of this task no longer exists"
		return v, nil
	}
	if err != nil {
		return nil, fmt.Errorf("number of task %s: %w", t.ID, err)
	}
	s.numbers.Present(n)
	v.Number, v.UpdatedAt = n, n.UpdatedAt
	switch n.Status {
	case numbers.AwaitingPayment:
		if s.numbers.Payable(n) != nil {
			v.State, v.FailureCode, v.Message = Canceled, "reservation_lapsed", "the reservation lapsed before the first month was paid"
			break
		}
		v.State, v.CheckoutURL = InputRequired, n.CheckoutURL
		v.Message = fmt.Sprintf("The owner pays the first month of %s (%s) at checkoutUrl; it is reserved until %s.",
			n.E164, n.MonthlyPrice, n.ReservedUntil.Format(time.RFC3339))
	case numbers.Pending:
		v.State, v.Message = Working, "Paid; the provider is provisioning "+n.E164+"."
	case numbers.Active, numbers.PastDue, numbers.Released:
		v.State, v.Message = Completed, n.E164+" is yours: faxes to it arrive in the inbox, and sends can use it as from."
		if n.Status != numbers.Active {
			v.Message = n.E164 + " was provisioned; it is " + string(n.Status) + " now."
		}
	case numbers.Failed:
		v.State, v.FailureCode, v.Message = Failed, n.FailureCode, "the provider could not provision "+n.E164+"; the month paid was credited to the account"
	case numbers.Canceled:
		v.State, v.FailureCode, v.Message = Canceled, n.FailureCode, "the number was not bought"
	}
	return v, nil
}

func (s *Service) cancelNumberTask(ctx context.Context, p core.Principal, t *Task) (*View, error) {
	n, err := s.numbers.Own(ctx, p, t.SubjectID)
	if err != nil {
		return nil, core.StoreErr(err, "number")
	}
	if n.Status != numbers.AwaitingPayment {
		return nil, core.Errorf(core.KindConflict, CodeNotCancelable, "the number is %s; only an unpaid reservation can be canceled", n.Status)
	}
	if _, err := s.numbers.Cancel(ctx, n, "canceled", "canceled by the agent before it was paid"); err != nil {
		return nil, err
	}
	return s.numberTaskView(ctx, p, t)
}
