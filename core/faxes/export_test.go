package faxes

import "context"

// StartAttemptAfter starts faxID's attempt as Deliver does, running between
// after the read that composes its document as faxed and before the start
// that uses that read: a test's way to change the fax in between, as
// another process could.
func (s *Service) StartAttemptAfter(ctx context.Context, faxID string, between func()) (*Fax, *Attempt, error) {
	prep, err := s.prepareFaxed(ctx, faxID)
	if err != nil {
		return nil, nil, err
	}
	between()
	return s.startAttempt(ctx, faxID, prep)
}

// RecordOutcomeAsStarted records res as Deliver does: on o and a as the
// attempt's start left them, without reading them again.
func (s *Service) RecordOutcomeAsStarted(ctx context.Context, o *Fax, a *Attempt, res ProviderResult) error {
	return s.recordOutcome(ctx, o.ID, a.ID, res, &started{o, a})
}
