package core

import (
	"context"
	"errors"
)

// errNotBuilt marks a delegated-flow method whose implementation has not
// landed yet (removed when it has).
var errNotBuilt = errors.New("core: delegated sends are not built yet")

// RequestDelegatedSend checks the send (scope fax:send through the
// send_fax grant, provider, cover, destination, document, quote) and asks
// the owner: an approval of kind ApprovalFaxSend, requires_uv, bound to
// this exact fax. Nothing is charged or queued.
func (s *Service) RequestDelegatedSend(ctx context.Context, p Principal, a *DelegatedAgent, r DelegatedSendRequest) (*DelegatedSend, error) {
	return nil, errNotBuilt
}

// GetDelegatedSend reads one of agent a's send requests with its status
// derived (and the fax when sent); another agent's reads as not found.
func (s *Service) GetDelegatedSend(ctx context.Context, p Principal, a *DelegatedAgent, id string) (*DelegatedSend, *Fax, error) {
	return nil, nil, errNotBuilt
}
