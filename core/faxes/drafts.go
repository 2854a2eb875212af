package faxes

import (
	"context"
	"errors"
	"fmt"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/credits"
)

// CreateDraftRequest makes a draft from an uploaded document.
type CreateDraftRequest struct {
	To          string `json:"to"`
	UploadToken string `json:"uploadToken,omitempty"`
	DocumentID  string `json:"documentId,omitempty"`
	Cover       bool   `json:"cover,omitempty"`
	CoverText   string `json:"coverText,omitempty"`
	// From is the sender: one of the owner's active numbers; empty for
	// the provider's default.
	From string `json:"from,omitempty"`
	Options
}

// DraftView is a draft with its quote.
type DraftView struct {
	Draft
	Quote core.Quote `json:"quote"`
}

// CreateDraft prices a fax without paying for it. A draft is paid either by
// SendDraft (credits, fax:send) or by its hosted checkout.
func (s *Service) CreateDraft(ctx context.Context, p core.Principal, r CreateDraftRequest) (*DraftView, error) {
	if err := core.Authorize(p, core.OpCreateDraft); err != nil {
		return nil, err
	}
	if err := s.CheckProvider(p.Mode); err != nil {
		return nil, err
	}
	opts, err := s.PrepareOptions(ctx, p, SendRequest(r))
	if err != nil {
		return nil, err
	}
	q, err := s.quoteRequest(ctx, p, SendRequest(r), opts.HasCover(), true)
	if err != nil {
		return nil, err
	}
	now := s.now()
	d := &Draft{
		ID: core.NewID(core.PrefixDraft), OwnerID: p.OwnerID, Mode: p.Mode, DocumentID: q.doc.ID, To: q.to, From: q.from, Country: q.country,
		Cover: opts.HasCover(), CoverText: opts.CoverMessage(), Options: opts, Pages: q.doc.Pages, PriceMicros: q.quote.AmountMicros,
		Status: DraftOpen, CreatedAt: now, ExpiresAt: now.Add(s.fc.DraftTTL), SentBy: SentByPrincipal(p),
	}
	err = s.inTx(ctx, func(tx Tx) error {
		if err := tx.UseDocument(ctx, d.DocumentID, now); err != nil {
			return core.StoreErr(err, "document")
		}
		return tx.CreateDraft(ctx, d)
	})
	if err != nil {
		return nil, fmt.Errorf("create draft: %w", err)
	}
	return &DraftView{Draft: *d, Quote: q.quote}, nil
}

// draftStatus is a draft's status as of now: an open draft past its expiry
// is expired.
func (s *Service) DraftStatus(d *Draft) DraftStatus {
	if d.Status == DraftOpen && !s.now().Before(d.ExpiresAt) {
		return DraftExpired
	}
	return d.Status
}

// DraftPayable is the one draft status rule, for credits and checkouts
// alike: only an open draft that has not expired can be paid.
func (s *Service) DraftPayable(d *Draft) error {
	switch st := s.DraftStatus(d); st {
	case DraftOpen:
		return nil
	case DraftPaid:
		e := core.Errorf(core.KindConflict, CodeDraftState, "this fax was paid already; nothing more is charged").With("draftStatus", string(st))
		if d.FaxID != nil {
			e = e.With("faxId", *d.FaxID)
		}
		return e
	case DraftExpired:
		return core.Errorf(core.KindConflict, CodeDraftState, "the draft expired and cannot be paid; create a new draft").With("draftStatus", string(st))
	default:
		return core.Errorf(core.KindConflict, CodeDraftState, "the draft is %s and cannot be paid; create a new draft", st).With("draftStatus", string(st))
	}
}

// GetDraft returns one of the principal's drafts with its quote.
func (s *Service) GetDraft(ctx context.Context, p core.Principal, id string) (*DraftView, error) {
	if err := core.Authorize(p, core.OpGetDraft); err != nil {
		return nil, err
	}
	d, err := s.d.Store.GetDraft(ctx, p.OwnerID, p.Mode, id)
	if err != nil {
		return nil, core.StoreErr(err, "draft")
	}
	return s.ViewDraft(d), nil
}

// draftView is a stored draft as of now, with its quote at the price fixed
// when it was made.
func (s *Service) ViewDraft(d *Draft) *DraftView {
	country := d.Country
	if country == "" { // a draft made before drafts kept their country
		if _, c, err := s.d.Destination.Check(d.To); err == nil {
			country = c
		}
	}
	q, err := s.d.Prices.Quote(d.To, country, d.Pages, d.Cover)
	if err != nil {
		// The price was fixed when the draft was made; show that one.
		q = core.Quote{To: d.To, Pages: d.Pages, Cover: d.Cover, Currency: core.Currency}
	}
	q.AmountMicros, q.Amount, q.Cents = d.PriceMicros, core.FormatUSD(d.PriceMicros), core.CentsUp(d.PriceMicros)
	dv := &DraftView{Draft: *d, Quote: q}
	dv.Status = s.DraftStatus(d)
	return dv
}

// SendDraft pays for a draft with the principal's credits and queues it
// (createFax: the fax, its credit hold, its delivery job and the draft's
// move to paid in one transaction). It is idempotent by draft: a retried
// call, or a call after the draft was paid at its checkout, returns the
// existing fax with replayed true and never charges twice.
func (s *Service) SendDraft(ctx context.Context, p core.Principal, draftID string) (fax *Fax, replayed bool, err error) {
	if err := core.Authorize(p, core.OpSendFax); err != nil {
		return nil, false, err
	}
	if err := s.CheckProvider(p.Mode); err != nil {
		return nil, false, err
	}
	d, err := s.d.Store.GetDraft(ctx, p.OwnerID, p.Mode, draftID)
	if err != nil {
		return nil, false, core.StoreErr(err, "draft")
	}
	return s.payDraft(ctx, p, d)
}

// payDraft pays the draft d with p's credits, once: an already paid draft
// returns its fax with replayed true. The caller authorized p to spend.
func (s *Service) payDraft(ctx context.Context, p core.Principal, d *Draft) (fax *Fax, replayed bool, err error) {
	draftID := d.ID
	if f, ok, err := s.draftFax(ctx, p, d); ok || err != nil {
		return f, ok, err
	}
	if err := s.DraftPayable(d); err != nil {
		return nil, false, err
	}
	f := s.faxOfDraft(d, PayCredits)
	// Paid with p's credits, the fax came in by p's door, whoever made
	// the draft.
	f.SentBy = SentByPrincipal(p)
	err = s.inTx(ctx, func(tx Tx) error {
		return s.CreateFax(ctx, tx, NewFax{Fax: f, Draft: d})
	})
	switch {
	case errors.Is(err, core.ErrConflict):
		// Paid concurrently (another call, or its checkout): answer with
		// that fax.
		d, gerr := s.d.Store.GetDraft(ctx, p.OwnerID, p.Mode, draftID)
		if gerr != nil {
			return nil, false, core.StoreErr(gerr, "draft")
		}
		if f, ok, err := s.draftFax(ctx, p, d); ok || err != nil {
			return f, ok, err
		}
		return nil, false, s.DraftPayable(d)
	case credits.IsInsufficient(err):
		return nil, false, s.credits.Insufficient(ctx, p, d.PriceMicros).With("draftId", d.ID).With("mode", string(p.Mode))
	case err != nil:
		return nil, false, err
	}
	s.d.Logger.InfoContext(ctx, "fax queued from draft", "fax_id", f.ID, "draft_id", d.ID, "owner_id", f.OwnerID, "mode", f.Mode, "pages", f.Pages)
	s.Present(f, nil)
	return f, false, nil
}

// faxOfDraft is the fax a draft becomes when paid by method.
func (s *Service) faxOfDraft(d *Draft, method PaymentMethod) *Fax {
	now := s.now()
	f := &Fax{
		ID: core.NewID(core.PrefixFax), OwnerID: d.OwnerID, Mode: d.Mode, Status: Queued, To: d.To, From: d.From,
		DocumentID: d.DocumentID, Pages: d.Pages, Cover: d.Cover, CoverText: d.CoverText, Options: d.Options,
		PriceMicros: d.PriceMicros, Currency: core.Currency, PaymentMethod: method, DraftID: &d.ID,
		CreatedAt: now, UpdatedAt: now, SentBy: d.SentBy.orUnknown(),
	}
	s.Schedule(f)
	return f
}

// draftFax returns the fax of an already paid draft.
func (s *Service) draftFax(ctx context.Context, p core.Principal, d *Draft) (*Fax, bool, error) {
	if d.Status != DraftPaid || d.FaxID == nil {
		return nil, false, nil
	}
	f, err := s.d.Store.GetFax(ctx, p.OwnerID, p.Mode, *d.FaxID)
	if err != nil {
		return nil, false, core.StoreErr(err, "fax")
	}
	s.Present(f, nil)
	return f, true, nil
}

// PayDraftAtCheckout turns the draft of a paid checkout into a queued fax
// inside tx; paidMicros is what the checkout charged for it.
func (s *Service) PayDraftAtCheckout(ctx context.Context, tx Tx, ownerID string, mode core.Mode, draftID string, paidMicros int64) error {
	d, err := tx.GetDraft(ctx, ownerID, mode, draftID)
	if err != nil {
		return core.StoreErr(err, "draft")
	}
	if err := s.DraftPayable(d); err != nil {
		return err
	}
	f := s.faxOfDraft(d, PayCheckout)
	f.PriceMicros = paidMicros
	if err := s.CreateFax(ctx, tx, NewFax{Fax: f, Draft: d}); errors.Is(err, core.ErrConflict) {
		return core.Errorf(core.KindConflict, CodeDraftState, "this fax was paid already; nothing more is charged")
	} else if err != nil {
		return err
	}
	return nil
}
