package app

import (
	"context"

	"github.com/faxhub/faxhub/core"
)

// coreSink is the Telnyx webhook's sink while core's RecordNumberOrder and
// ReceiveFax are being written: it passes them on once *core.Service has
// them and answers 503 (Telnyx retries) until then. It goes away when
// *core.Service is a telnyx.Sink.
type coreSink struct{ svc *core.Service }

func (c coreSink) RecordProviderOutcome(ctx context.Context, faxID, attemptID string, res core.ProviderResult) error {
	return c.svc.RecordProviderOutcome(ctx, faxID, attemptID, res)
}

func (c coreSink) RecordNumberOrder(ctx context.Context, provider, orderRef string, res core.NumberOrderResult) error {
	if s, ok := any(c.svc).(interface {
		RecordNumberOrder(ctx context.Context, provider, orderRef string, res core.NumberOrderResult) error
	}); ok {
		return s.RecordNumberOrder(ctx, provider, orderRef, res)
	}
	return core.Errorf(core.KindUnavailable, core.CodeNumbersNotConfigured, "number orders are not recorded yet")
}

func (c coreSink) ReceiveFax(ctx context.Context, n core.InboundNotice) (*core.InboundFax, error) {
	if s, ok := any(c.svc).(interface {
		ReceiveFax(ctx context.Context, n core.InboundNotice) (*core.InboundFax, error)
	}); ok {
		return s.ReceiveFax(ctx, n)
	}
	return nil, core.Errorf(core.KindUnavailable, core.CodeProviderUnavailable, "received faxes are not recorded yet")
}
