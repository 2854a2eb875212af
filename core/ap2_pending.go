package core

import (
	"context"
	"errors"
)

// errNotBuilt marks the operations of AP2 purchases while they are being
// built.
var errNotBuilt = errors.New("core: AP2 credit purchases are not built yet")

// Temporary stand-ins for the credit-purchase task views that core/ap2.go
// (AP2 purchases, built in parallel) defines; that work deletes this file.

func (s *Service) purchaseTaskView(ctx context.Context, p Principal, t *AgentTask) (*TaskView, error) {
	return nil, errNotBuilt
}

func (s *Service) cancelPurchaseTask(ctx context.Context, p Principal, t *AgentTask) (*TaskView, error) {
	return nil, errNotBuilt
}
