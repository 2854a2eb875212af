package core

import (
	"context"
	"errors"
	"fmt"
)

// GetDraft returns one of the principal's drafts with its quote.
func (s *Service) GetDraft(ctx context.Context, p Principal, id string) (*DraftView, error) {
	if err := Authorize(p, OpGetDraft); err != nil {
		return nil, err
	}
	d, err := s.d.Store.GetDraft(ctx, p.OwnerID, p.Mode, id)
	if err != nil {
		return nil, storeErr(err, "draft")
	}
	country := ""
	if _, c, err := s.d.Destination.Check(d.To); err == nil {
		country = c
	}
	q, err := s.d.Prices.Quote(d.To, country, d.Pages, d.Cover)
	if err != nil {
		// The price was fixed when the draft was made; show that one.
		q = Quote{To: d.To, Pages: d.Pages, Cover: d.Cover, Currency: Currency}
	}
	q.AmountMicros, q.Amount, q.Cents = d.PriceMicros, FormatUSD(d.PriceMicros), CentsUp(d.PriceMicros)
	if d.Status == DraftOpen && s.now().After(d.ExpiresAt) {
		d.Status = DraftExpired
	}
	return &DraftView{Draft: *d, Quote: q}, nil
}

// SendDraft pays for a draft with the principal's credits and queues it, in
// one transaction with the credit hold and the delivery job. It is
// idempotent by draft: a draft is paid at most once (the store moves it
// from open to paid conditionally), so a retried call — or a call after
// the draft was paid at its checkout — returns the existing fax with
// replayed true and never charges twice.
func (s *Service) SendDraft(ctx context.Context, p Principal, draftID string) (fax *Fax, replayed bool, err error) {
	if err := Authorize(p, OpSendFax); err != nil {
		return nil, false, err
	}
	if err := s.checkProvider(p.Mode); err != nil {
		return nil, false, err
	}
	d, err := s.d.Store.GetDraft(ctx, p.OwnerID, p.Mode, draftID)
	if err != nil {
		return nil, false, storeErr(err, "draft")
	}
	if o, ok, err := s.draftFax(ctx, p, d); ok || err != nil {
		return o, ok, err
	}
	if d.Status != DraftOpen || s.now().After(d.ExpiresAt) {
		st := d.Status
		if st == DraftOpen {
			st = DraftExpired
		}
		return nil, false, Errorf(KindConflict, CodeDraftState, "the draft is %s and cannot be sent; create a new draft", st)
	}
	now := s.now()
	o := &Fax{
		ID: NewID(PrefixFax), OwnerID: p.OwnerID, Mode: p.Mode, Status: FaxQueued, To: d.To,
		DocumentID: d.DocumentID, Pages: d.Pages, Cover: d.Cover, CoverText: d.CoverText,
		PriceMicros: d.PriceMicros, Currency: Currency, PaymentMethod: PayCredits, DraftID: &d.ID,
		CreatedAt: now, UpdatedAt: now,
	}
	err = s.d.Store.InTx(ctx, func(tx Tx) error {
		if err := s.allow(ctx, tx, "send:"+p.OwnerID+":"+string(p.Mode), s.cfg.SendInterval, s.cfg.SendBurst); err != nil {
			return err
		}
		if err := tx.CreateFax(ctx, o); err != nil {
			return fmt.Errorf("create fax: %w", err)
		}
		if err := tx.MarkDraftPaid(ctx, d.ID, o.ID); err != nil {
			return err
		}
		hold := &LedgerEntry{
			ID: NewID(PrefixLedger), OwnerID: p.OwnerID, Mode: p.Mode, Kind: LedgerHold,
			AmountMicros: -d.PriceMicros, FaxID: &o.ID, Reason: "hold for fax " + o.ID + " to " + d.To, CreatedAt: now,
		}
		if err := tx.PlaceHold(ctx, hold); err != nil {
			return err
		}
		if err := s.d.Queue.EnqueueDelivery(ctx, tx, o.ID, now); err != nil {
			return fmt.Errorf("enqueue delivery: %w", err)
		}
		return nil
	})
	switch {
	case errors.Is(err, ErrConflict):
		// Paid concurrently (another call, or its checkout): answer
		// with that fax.
		d, gerr := s.d.Store.GetDraft(ctx, p.OwnerID, p.Mode, draftID)
		if gerr != nil {
			return nil, false, storeErr(gerr, "draft")
		}
		if o, ok, err := s.draftFax(ctx, p, d); ok || err != nil {
			return o, ok, err
		}
		return nil, false, Errorf(KindConflict, CodeDraftState, "the draft changed while it was being sent; try again")
	case errors.Is(err, ErrInsufficientFunds):
		bal, berr := s.d.Store.GetBalance(ctx, p.OwnerID, p.Mode)
		price := FormatUSD(d.PriceMicros)
		return nil, false, Errorf(KindPaymentRequired, CodeInsufficientCredits, "this fax costs %s USD but only %s USD of %s credits are available", price, FormatUSD(balanceOrZero(bal, berr)), p.Mode).
			With("price", price).With("balance", FormatUSD(balanceOrZero(bal, berr))).With("draftId", d.ID).With("mode", string(p.Mode))
	case err != nil:
		return nil, false, err
	}
	s.d.Logger.InfoContext(ctx, "fax queued from draft", "fax_id", o.ID, "draft_id", d.ID, "owner_id", o.OwnerID, "mode", o.Mode, "pages", o.Pages)
	s.present(o, nil)
	return o, false, nil
}

// draftFax returns the fax of an already paid draft.
func (s *Service) draftFax(ctx context.Context, p Principal, d *Draft) (*Fax, bool, error) {
	if d.Status != DraftPaid || d.FaxID == nil {
		return nil, false, nil
	}
	o, err := s.d.Store.GetFax(ctx, p.OwnerID, p.Mode, *d.FaxID)
	if err != nil {
		return nil, false, storeErr(err, "fax")
	}
	s.present(o, nil)
	return o, true, nil
}

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
