package tasks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
)

// Bounds of what an adapter records on a task.
const (
	MaxSkill     = 64
	MaxContextID = 256
)

// taskLabels checks what an adapter records on a new task and names the
// conversation when the agent sent none.
func taskLabels(skill, contextID string) (string, error) {
	if len(skill) > MaxSkill {
		return "", core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "skill is longer than %d characters", MaxSkill)
	}
	if len(contextID) > MaxContextID {
		return "", core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "contextId is longer than %d characters", MaxContextID)
	}
	if contextID == "" {
		contextID = core.NewID(core.PrefixContext)
	}
	return contextID, nil
}

// StartFaxTask validates and prices a fax (CreateDraft), stores the draft
// and returns the task that follows it: input_required, with the draft's
// quote and its hosted checkoutUrl. It never spends account credits: the
// owner pays at the checkout page. skill names the adapter's skill (for the
// record); contextID is the conversation the task belongs to (generated
// when empty).
func (s *Service) StartFaxTask(ctx context.Context, p core.Principal, skill, contextID string, r faxes.CreateDraftRequest) (*View, error) {
	contextID, err := taskLabels(skill, contextID)
	if err != nil {
		return nil, err
	}
	// CreateDraft authorises fax:draft and checks everything about the fax.
	d, err := s.faxes.CreateDraft(ctx, p, r)
	if err != nil {
		return nil, err
	}
	t := &Task{
		ID: core.NewID(core.PrefixTask), OwnerID: p.OwnerID, Mode: p.Mode, Kind: KindFax, Skill: skill,
		ContextID: contextID, SubjectID: d.ID, CreatedAt: s.now(),
	}
	if err := s.d.Store.CreateAgentTask(ctx, t); err != nil {
		return nil, fmt.Errorf("create fax task: %w", err)
	}
	s.d.Logger.InfoContext(ctx, "fax task started", "task_id", t.ID, "draft_id", d.ID, "owner_id", t.OwnerID, "mode", t.Mode)
	return s.faxTaskView(ctx, p, t)
}

// Get returns one of p's tasks as of now (needs fax:read). Another
// owner's task answers not_found exactly like an unknown id.
func (s *Service) Get(ctx context.Context, p core.Principal, id string) (*View, error) {
	if err := core.Authorize(p, core.OpGetTask); err != nil {
		return nil, err
	}
	// The task and a fax task's draft in one read: every poll reads both.
	t, d, err := s.d.Store.GetAgentTaskDraft(ctx, p.OwnerID, id)
	if err != nil {
		return nil, core.StoreErr(err, "task")
	}
	if t.Mode != p.Mode {
		return nil, core.NotFound("task")
	}
	if t.Kind == KindFax {
		return s.faxDraftView(ctx, p, t, d)
	}
	return s.view(ctx, p, t)
}

// view derives t as of now from its subject.
func (s *Service) view(ctx context.Context, p core.Principal, t *Task) (*View, error) {
	switch t.Kind {
	case KindFax:
		return s.faxTaskView(ctx, p, t)
	case KindCreditPurchase:
		return s.purchaseTaskView(ctx, p, t)
	case KindNumber:
		return s.numberTaskView(ctx, p, t)
	}
	return nil, fmt.Errorf("task %s has unknown kind %q", t.ID, t.Kind)
}

// Cancel cancels a task while that is possible: an unpaid draft, a
// queued fax (what was paid returns as account credits), a credit purchase
// not yet charged. Otherwise a KindConflict *Error with code
// task_not_cancelable.
func (s *Service) Cancel(ctx context.Context, p core.Principal, id string) (*View, error) {
	// Canceling needs the scope that started the task: fax:draft for a fax,
	// credits:checkout for a credit purchase. A credential with neither is
	// refused before any task is read.
	if !p.Has(core.ScopeFaxDraft) && !p.Has(core.ScopeCreditsCheckout) {
		return nil, core.Authorize(p, core.OpCancelTask)
	}
	t, err := s.agentTask(ctx, p, id)
	if err != nil {
		return nil, err
	}
	op := core.OpCancelTask
	switch t.Kind {
	case KindCreditPurchase:
		op = core.OpBuyCredits
	case KindNumber:
		op = core.OpBuyNumber
	}
	if err := core.Authorize(p, op); err != nil {
		return nil, err
	}
	switch t.Kind {
	case KindFax:
		return s.cancelFaxTask(ctx, p, t)
	case KindCreditPurchase:
		return s.cancelPurchaseTask(ctx, p, t)
	case KindNumber:
		return s.cancelNumberTask(ctx, p, t)
	}
	return nil, fmt.Errorf("task %s has unknown kind %q", t.ID, t.Kind)
}

// DraftCheckoutURL is the page where the owner reviews and pays for
// exactly this draft.
func (s *Service) DraftCheckoutURL(d *faxes.Draft) string {
	return s.kernel.URL(core.LinkDraftPage, url.Values{"mode": {string(d.Mode)}}, "id", d.ID)
}

// agentTask reads one of p's tasks in p's mode: another owner's task, or
// one made in the other mode (live and test never mix), is not found
// exactly like an unknown id.
func (s *Service) agentTask(ctx context.Context, p core.Principal, id string) (*Task, error) {
	t, err := s.d.Store.GetAgentTask(ctx, p.OwnerID, id)
	if err != nil {
		return nil, core.StoreErr(err, "task")
	}
	if t.Mode != p.Mode {
		return nil, core.NotFound("task")
	}
	return t, nil
}

// taskDraft reads the draft a fax task follows; nil when it is gone (the
// subject was purged), which the task reads as expired.
func (s *Service) taskDraft(ctx context.Context, p core.Principal, t *Task) (*faxes.Draft, error) {
	d, err := s.d.Store.GetDraft(ctx, p.OwnerID, p.Mode, t.SubjectID)
	if errors.Is(err, core.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("draft of task %s: %w", t.ID, err)
	}
	return d, nil
}

// faxTaskView derives a fax task's state from its draft and, once paid,
// its fax.
func (s *Service) faxTaskView(ctx context.Context, p core.Principal, t *Task) (*View, error) {
	d, err := s.taskDraft(ctx, p, t)
	if err != nil {
		return nil, err
	}
	return s.faxDraftView(ctx, p, t, d)
}

// faxDraftView is faxTaskView with the draft already read (nil when it is
// gone).
func (s *Service) faxDraftView(ctx context.Context, p core.Principal, t *Task, d *faxes.Draft) (*View, error) {
	v := &View{Task: *t, UpdatedAt: t.CreatedAt}
	if d == nil {
		v.State, v.FailureCode = Failed, "draft_expired"
		v.Message = "The draft of this fax is no longer available; nothing was charged. Create a new fax."
		return v, nil
	}
	dv := s.faxes.ViewDraft(d)
	v.Draft, v.UpdatedAt = dv, latest(v.UpdatedAt, d.CreatedAt)
	switch dv.Status {
	case faxes.DraftOpen:
		v.State, v.CheckoutURL = InputRequired, s.DraftCheckoutURL(d)
		v.Message = fmt.Sprintf("This fax of %d page(s) to %s costs %s %s. The owner pays for it at %s (until %s); "+
			"nothing is charged to account credits. Poll GetTask to follow it.",
			d.Pages, d.To, dv.Quote.Amount, core.Currency, v.CheckoutURL, d.ExpiresAt.UTC().Format(time.RFC3339))
	case faxes.DraftExpired:
		v.State, v.FailureCode, v.UpdatedAt = Failed, "draft_expired", latest(v.UpdatedAt, d.ExpiresAt)
		v.Message = "The draft expired before the owner paid for it; nothing was charged. Create a new fax."
	case faxes.DraftCanceled:
		v.State, v.FailureCode = Canceled, "canceled"
		v.Message = "The fax was canceled before it was paid; nothing was charged."
	case faxes.DraftPaid:
		if d.FaxID == nil {
			return nil, fmt.Errorf("task %s: draft %s is paid but names no fax", t.ID, d.ID)
		}
		f, err := s.faxes.Load(ctx, p, *d.FaxID)
		if err != nil {
			return nil, fmt.Errorf("fax of task %s: %w", t.ID, err)
		}
		v.Fax, v.UpdatedAt = f, latest(v.UpdatedAt, f.UpdatedAt)
		if f.CompletedAt != nil {
			v.UpdatedAt = latest(v.UpdatedAt, *f.CompletedAt)
		}
		faxTaskState(v, f)
	default:
		return nil, fmt.Errorf("task %s: draft %s has unknown status %q", t.ID, d.ID, dv.Status)
	}
	return v, nil
}

// faxTaskState sets the state and message of a task whose draft was paid
// from its fax.
func faxTaskState(v *View, f *faxes.Fax) {
	switch f.Status {
	case faxes.Queued:
		v.State = Working
		v.Message = fmt.Sprintf("The fax %s to %s is paid and queued for sending. Poll GetTask to follow it.", f.ID, f.To)
		if f.Attempts > 0 {
			v.Message = fmt.Sprintf("The fax %s to %s is paid; attempt %d did not get through and a retry is scheduled. Poll GetTask to follow it.", f.ID, f.To, f.Attempts)
		}
	case faxes.Scheduled:
		v.State = Working
		v.Message = fmt.Sprintf("The fax %s to %s is paid and scheduled to be sent at %s (its sendAt); CancelTask before then cancels it and returns what was paid. Poll GetTask to follow it.", f.ID, f.To, core.RFC3339(*f.Options.SendAt))
	case faxes.Sending:
		v.State = Working
		v.Message = fmt.Sprintf("The fax %s to %s is being sent. Poll GetTask to follow it.", f.ID, f.To)
	case faxes.Delivered:
		v.State = Completed
		v.Message = fmt.Sprintf("The fax %s was delivered to %s: all %d page(s).", f.ID, f.To, f.Pages)
	case faxes.Partial:
		v.State = Completed
		v.Message = fmt.Sprintf("The fax %s to %s was partly delivered: %d of %d pages delivered. The unsent pages were returned to the owner's credits.",
			f.ID, f.To, f.PagesSent, f.Pages)
	case faxes.Failed:
		v.State, v.FailureCode = Failed, f.FailureCode
		v.Message = fmt.Sprintf("The fax %s to %s failed (%s); what was paid was returned to the owner's credits.", f.ID, f.To, f.FailureCode)
	case faxes.Canceled:
		v.State, v.FailureCode = Canceled, cmp.Or(f.FailureCode, "canceled")
		v.Message = fmt.Sprintf("The fax %s to %s was canceled before sending; what was paid was returned to the owner's credits.", f.ID, f.To)
	default:
		v.State, v.Message = Working, fmt.Sprintf("The fax %s is %s.", f.ID, f.Status)
	}
}

// cancelFaxTask cancels an unpaid draft, or the queued fax it became.
func (s *Service) cancelFaxTask(ctx context.Context, p core.Principal, t *Task) (*View, error) {
	// Twice at most: a draft paid while we cancel it is looked at again as
	// the fax it became.
	for range 2 {
		d, err := s.taskDraft(ctx, p, t)
		if err != nil {
			return nil, err
		}
		if d == nil {
			return nil, notCancelable("the draft of this fax is no longer available; nothing was charged")
		}
		switch st := s.faxes.DraftStatus(d); st {
		case faxes.DraftOpen:
			err := s.d.Store.CancelDraft(ctx, p.OwnerID, p.Mode, d.ID)
			if errors.Is(err, core.ErrConflict) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("cancel task %s: %w", t.ID, err)
			}
			s.d.Logger.InfoContext(ctx, "fax task canceled", "task_id", t.ID, "draft_id", d.ID, "owner_id", p.OwnerID)
			return s.faxTaskView(ctx, p, t)
		case faxes.DraftPaid:
			if d.FaxID == nil {
				return nil, fmt.Errorf("task %s: draft %s is paid but names no fax", t.ID, d.ID)
			}
			err := s.faxes.CancelQueued(ctx, p, *d.FaxID)
			var e *core.Error
			if errors.As(err, &e) && e.Code == faxes.CodeFaxNotCancelable {
				return nil, notCancelable("%s", e.Message).With("faxId", *d.FaxID)
			}
			if err != nil {
				return nil, err
			}
			s.d.Logger.InfoContext(ctx, "fax task canceled", "task_id", t.ID, "fax_id", *d.FaxID, "owner_id", p.OwnerID)
			return s.faxTaskView(ctx, p, t)
		default:
			return nil, notCancelable("the task is already final: its draft is %s", st)
		}
	}
	return nil, fmt.Errorf("cancel task %s: the draft kept changing", t.ID)
}

func notCancelable(format string, args ...any) *core.Error {
	return core.Errorf(core.KindConflict, CodeNotCancelable, format, args...)
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
