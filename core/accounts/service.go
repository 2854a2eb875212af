package accounts

import (
	"context"

	"github.com/faxhub/faxhub/core"
)

// Owner returns an owner by id (not_found when there is none).
func (s *Service) Owner(ctx context.Context, id string) (*Owner, error) {
	o, err := s.d.Store.GetOwner(ctx, id)
	return o, core.StoreErr(err, "owner")
}
