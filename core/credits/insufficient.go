package credits

import (
	"context"
	"errors"

	"github.com/faxhub/faxhub/core"
)

// insufficientCredits is the 402 of a credit payment that the balance does
// not cover, with the figures a client needs.
func (s *Service) Insufficient(ctx context.Context, p core.Principal, priceMicros int64) *core.Error {
	bal, err := s.d.Store.GetBalance(ctx, p.OwnerID, p.Mode)
	available := int64(0)
	if err == nil && bal != nil {
		available = bal.AvailableMicros
	}
	price := core.FormatUSD(priceMicros)
	return core.Errorf(core.KindPaymentRequired, CodeInsufficientCredits, "this fax costs %s USD but only %s USD of %s credits are available", price, core.FormatUSD(available), p.Mode).
		With("price", price).With("balance", core.FormatUSD(available))
}

// isInsufficient reports a credit hold the balance did not cover.
func IsInsufficient(err error) bool { return errors.Is(err, core.ErrInsufficientFunds) }
