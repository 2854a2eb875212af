package core

import "context"

// ListInbox lists received faxes. Inbound fax does not exist yet, so the
// list is always empty, but the operation and its scope are real.
func (s *Service) ListInbox(ctx context.Context, p Principal) ([]InboundFax, error) {
	if err := Authorize(p, OpListInbox); err != nil {
		return nil, err
	}
	return []InboundFax{}, nil
}

// InboundFax is a received fax (none exist yet).
type InboundFax struct {
	ID         string `json:"id"`
	From       string `json:"from"`
	Pages      int    `json:"pages"`
	ReceivedAt string `json:"receivedAt"`
}
