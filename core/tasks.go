package core

import (
	"context"
	"errors"
)

// errNotBuilt marks the task operations while they are being built.
var errNotBuilt = errors.New("core: agent tasks are not built yet")

// StartFaxTask validates and prices a fax (CreateDraft), stores the draft
// and returns the task that follows it: input_required, with the draft's
// quote and its hosted checkoutUrl. It never spends account credits: the
// owner pays at the checkout page. skill names the adapter's skill (for the
// record); contextID is the conversation the task belongs to (generated
// when empty).
func (s *Service) StartFaxTask(ctx context.Context, p Principal, skill, contextID string, r CreateDraftRequest) (*TaskView, error) {
	return nil, errNotBuilt
}

// GetTask returns one of p's tasks as of now (needs fax:read). Another
// owner's task answers not_found exactly like an unknown id.
func (s *Service) GetTask(ctx context.Context, p Principal, id string) (*TaskView, error) {
	return nil, errNotBuilt
}

// CancelTask cancels a task while that is possible: an unpaid draft, a
// queued fax (what was paid returns as account credits), a credit purchase
// not yet charged. Otherwise a KindConflict *Error with code
// task_not_cancelable.
func (s *Service) CancelTask(ctx context.Context, p Principal, id string) (*TaskView, error) {
	return nil, errNotBuilt
}

// DraftCheckoutURL is the page where the owner reviews and pays for
// exactly this draft.
func (s *Service) DraftCheckoutURL(d *Draft) string {
	return s.cfg.BaseURL + "/console/drafts/" + d.ID + "?mode=" + string(d.Mode)
}
