package core

import (
	"context"
	"errors"
	"fmt"
)

// CreateDraftRequest makes a draft from an uploaded document.
type CreateDraftRequest struct {
	To          string `json:"to"`
	UploadToken string `json:"uploadToken,omitempty"`
	DocumentID  string `json:"documentId,omitempty"`
	Cover       bool   `json:"cover,omitempty"`
	CoverText   string `json:"coverText,omitempty"`
}

// DraftView is a draft with its quote.
type DraftView struct {
	Draft
	Quote Quote `json:"quote"`
}

// CreateDraft prices a fax without paying for it. A draft is paid either by
// SendDraft (credits, fax:send) or by its hosted checkout.
func (s *Service) CreateDraft(ctx context.Context, p Principal, r CreateDraftRequest) (*DraftView, error) {
	if err := Authorize(p, OpCreateDraft); err != nil {
		return nil, err
	}
	if err := checkCover(r.Cover, r.CoverText); err != nil {
		return nil, err
	}
	if err := s.checkProvider(p.Mode); err != nil {
		return nil, err
	}
	e164, country, err := s.d.Destination.Check(r.To)
	if err != nil {
		return nil, err
	}
	doc, err := s.resolveDocument(ctx, p, r.UploadToken, r.DocumentID)
	if err != nil {
		return nil, err
	}
	q, err := s.d.Prices.Quote(e164, country, doc.Pages, r.Cover)
	if err != nil {
		return nil, err
	}
	now := s.now()
	d := &Draft{
		ID: NewID(PrefixDraft), OwnerID: p.OwnerID, Mode: p.Mode, DocumentID: doc.ID, To: e164,
		Cover: r.Cover, CoverText: r.CoverText, Pages: doc.Pages, PriceMicros: q.AmountMicros,
		Status: DraftOpen, CreatedAt: now, ExpiresAt: now.Add(s.cfg.DraftTTL),
	}
	if err := s.d.Store.CreateDraft(ctx, d); err != nil {
		return nil, fmt.Errorf("create draft: %w", err)
	}
	return &DraftView{Draft: *d, Quote: q}, nil
}

// CreateDraftCheckout starts the hosted checkout that pays for exactly this
// draft and queues it.
func (s *Service) CreateDraftCheckout(ctx context.Context, p Principal, draftID string) (*CheckoutSession, error) {
	if err := Authorize(p, OpGetDraft); err != nil {
		return nil, err
	}
	d, err := s.d.Store.GetDraft(ctx, p.OwnerID, p.Mode, draftID)
	if err != nil {
		return nil, storeErr(err, "draft")
	}
	if d.Status != DraftOpen || s.now().After(d.ExpiresAt) {
		return nil, Errorf(KindConflict, CodeDraftState, "the draft is %s and cannot be paid", d.Status)
	}
	c := &Checkout{
		ID: NewID(PrefixCheckout), OwnerID: p.OwnerID, Mode: p.Mode, Kind: CheckoutDraft, DraftID: &d.ID,
		AmountMicros: d.PriceMicros, Status: CheckoutOpen,
	}
	return s.startCheckout(ctx, c, fmt.Sprintf("Fax of %d page(s) to %s", d.Pages, d.To))
}

// faxFromDraft turns a paid draft into a queued fax inside tx.
func (s *Service) faxFromDraft(ctx context.Context, tx Tx, c *Checkout) error {
	d, err := tx.GetDraft(ctx, c.OwnerID, c.Mode, *c.DraftID)
	if err != nil {
		return storeErr(err, "draft")
	}
	now := s.now()
	o := &Fax{
		ID: NewID(PrefixFax), OwnerID: d.OwnerID, Mode: d.Mode, Status: FaxQueued, To: d.To,
		DocumentID: d.DocumentID, Pages: d.Pages, Cover: d.Cover, CoverText: d.CoverText,
		PriceMicros: c.AmountMicros, Currency: Currency, PaymentMethod: PayCheckout, DraftID: &d.ID,
		CreatedAt: now, UpdatedAt: now,
	}
	if err := tx.CreateFax(ctx, o); err != nil {
		return fmt.Errorf("create fax: %w", err)
	}
	if err := tx.MarkDraftPaid(ctx, d.ID, o.ID); err != nil {
		if errors.Is(err, ErrConflict) {
			return Errorf(KindConflict, CodeDraftState, "the draft was already paid")
		}
		return err
	}
	return s.d.Queue.EnqueueDelivery(ctx, tx, o.ID, now)
}
