package core

import (
	"context"
	"errors"
)

// insufficientCredits is the 402 of a credit payment that the balance does
// not cover, with the figures a client needs.
func (s *Service) InsufficientCredits(ctx context.Context, p Principal, priceMicros int64) *Error {
	bal, err := s.d.Store.GetBalance(ctx, p.OwnerID, p.Mode)
	available := int64(0)
	if err == nil && bal != nil {
		available = bal.AvailableMicros
	}
	price := FormatUSD(priceMicros)
	return Errorf(KindPaymentRequired, CodeInsufficientCredits, "this fax costs %s USD but only %s USD of %s credits are available", price, FormatUSD(available), p.Mode).
		With("price", price).With("balance", FormatUSD(available))
}

// isInsufficient reports a credit hold the balance did not cover.
func IsInsufficient(err error) bool { return errors.Is(err, ErrInsufficientFunds) }
