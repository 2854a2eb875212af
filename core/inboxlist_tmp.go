package core

import "context"

// ListInbox lists received faxes (being replaced by the inbox service).
func (s *Service) ListInbox(ctx context.Context, p Principal) ([]InboundFax, error) {
	if err := Authorize(p, OpListInbox); err != nil {
		return nil, err
	}
	return []InboundFax{}, nil
}
