package faxes

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/numbers"
)

// senderNumber resolves a send's from (an E.164 number or a number id) to
// one of p's numbers that can send: active or past_due, in p's mode.
func (s *Service) senderNumber(ctx context.Context, p core.Principal, from string) (string, error) {
	from = strings.TrimSpace(from)
	if from == "" {
		return "", nil
	}
	var (
		n   *numbers.Number
		err error
	)
	if core.HasPrefix(from, core.PrefixNumber) {
		n, err = s.numbers.Own(ctx, p, from)
	} else {
		e164, _, cerr := s.d.Destination.Check(from)
		if cerr != nil {
			return "", core.Errorf(core.KindInvalid, numbers.CodeFromNumberNotOwned, "from must be one of your active fax numbers (E.164 or its id)")
		}
		n, err = s.numbers.Holding(ctx, p.Mode, e164)
		if err == nil && n.OwnerID != p.OwnerID {
			err = core.ErrNoRows
		}
	}
	if errors.Is(err, core.ErrNoRows) || (err == nil && !n.Status.Receives()) {
		return "", core.Errorf(core.KindInvalid, numbers.CodeFromNumberNotOwned, "from must be one of your active %s-mode fax numbers", p.Mode)
	}
	if err != nil {
		return "", fmt.Errorf("sender number: %w", err)
	}
	return n.E164, nil
}
