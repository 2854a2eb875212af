package numbers

import (
	"context"
	"fmt"

	"github.com/faxhub/faxhub/core/events"
)

// saveNumber writes n if its stored status is one of from (UpdateNumber)
// and appends, in tx, event t about it (none when t is ""). The event's
// data is the number as GET /api/v1/numbers/{id} shows it then.
func (s *Service) saveNumber(ctx context.Context, tx Tx, n *Number, t events.Type, from ...Status) error {
	if err := tx.UpdateNumber(ctx, n, from...); err != nil {
		return err
	}
	if t == "" {
		return nil
	}
	view := *n
	s.Present(&view)
	if err := events.Append(ctx, tx, n.OwnerID, n.Mode, t, n.ID, &view, n.UpdatedAt); err != nil {
		return fmt.Errorf("number %s: %w", n.ID, err)
	}
	return nil
}
