package faxes

import (
	"context"

	"github.com/faxhub/faxhub/core"
)

// DestinationCheck is what a number checked as it is typed says before
// anything is uploaded or priced whole: the number in E.164, its country
// and number type, and what a page to it costs.
type DestinationCheck struct {
	core.Destination
	// Tariff names the price table's tariff; PerPage, Cover and Minimum
	// are its prices in USD ("0.07"): per page, for a cover page, and
	// the least a fax costs.
	Tariff   string `json:"tariff"`
	PerPage  string `json:"perPage"`
	Cover    string `json:"cover"`
	Minimum  string `json:"minimum"`
	Currency string `json:"currency"`
}

// CheckDestination checks a destination for p (scope fax:draft) the way
// every send will (the same checker and price table), and says its
// country, number type and per-page price; a refusal is the error a send
// would get (invalid_destination, premium_rate_destination,
// unsupported_destination). It is counted per owner (LimitDestinationCheck):
// a form calls it as a number is typed.
func (s *Service) CheckDestination(ctx context.Context, p core.Principal, to string) (*DestinationCheck, error) {
	if err := core.Authorize(p, core.OpQuote); err != nil {
		return nil, err
	}
	if err := s.kernel.Allow(ctx, core.LimitDestinationCheck, p.OwnerID); err != nil {
		return nil, err
	}
	d, err := s.d.Destination.Describe(to)
	if err != nil {
		return nil, err
	}
	tr, ok := s.d.Prices.TariffFor(d.Country)
	if !ok {
		// Priced as a send would be, so the refusal is the same.
		_, err := s.d.Prices.Quote(d.E164, d.Country, 1, false)
		return nil, err
	}
	return &DestinationCheck{Destination: d, Tariff: tr.ID, PerPage: tr.PerPage, Cover: tr.Cover, Minimum: tr.Minimum, Currency: core.Currency}, nil
}
