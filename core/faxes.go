package core

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// SendFaxRequest is the body of sendFax: a destination and a document named
// either by the upload token it was uploaded with or by its id.
type SendFaxRequest struct {
	To          string `json:"to"`
	UploadToken string `json:"uploadToken,omitempty"`
	DocumentID  string `json:"documentId,omitempty"`
	Cover       bool   `json:"cover,omitempty"`
	CoverText   string `json:"coverText,omitempty"`
	// From is the sender: one of the owner's active numbers (E.164 or its
	// id); empty for the provider's default.
	From string `json:"from,omitempty"`
}

// MaxCoverText bounds the cover page note.
const MaxCoverText = 2000

// MaxIdempotencyKey bounds Idempotency-Key values.
const MaxIdempotencyKey = 255

// QuoteRequest prices a fax without side effects.
type QuoteRequest struct {
	To    string
	Pages int
	Cover bool
}

// Quote checks a destination and prices pages to it. It needs no principal
// (the machine validate endpoint is public).
func (s *Service) Quote(ctx context.Context, r QuoteRequest) (Quote, error) {
	e164, country, err := s.d.Destination.Check(r.To)
	if err != nil {
		return Quote{}, err
	}
	if r.Pages > s.cfg.MaxPages {
		return Quote{}, Errorf(KindUnprocessable, CodeTooManyPages, "at most %d pages can be sent", s.cfg.MaxPages)
	}
	return s.d.Prices.Quote(e164, country, r.Pages, r.Cover)
}

func (s *Service) ResolveDocument(ctx context.Context, p Principal, uploadToken, documentID string) (*Document, error) {
	switch {
	case uploadToken != "" && documentID != "":
		return nil, Errorf(KindInvalid, CodeInvalidRequest, "give uploadToken or documentId, not both")
	case uploadToken != "":
		return s.documentFromToken(ctx, p, uploadToken)
	case documentID != "":
		d, err := s.d.Store.GetDocument(ctx, p.OwnerID, p.Mode, documentID)
		return d, StoreErr(err, "document")
	}
	return nil, Errorf(KindInvalid, CodeInvalidRequest, "uploadToken or documentId is required")
}

func CheckCover(cover bool, text string) error {
	if len(text) > MaxCoverText {
		return Errorf(KindInvalid, CodeInvalidRequest, "coverText is longer than %d characters", MaxCoverText)
	}
	if text != "" && !cover {
		return Errorf(KindInvalid, CodeInvalidRequest, "coverText needs cover: true")
	}
	return nil
}

// SendFax pays for a fax with the principal's credits and queues it. The
// fax, its credit hold, its delivery job and its idempotency record are
// written in one transaction: concurrent requests with one key yield exactly
// one fax and one hold. replayed is true when the stored response of an
// earlier identical request is returned.
//
// A request whose key was used already gets that request's answer whatever
// its own fate would be (its document may be gone since, its balance spent,
// its rate allowance used), or a conflict if it differs. That is decided
// without a read first on the way every new send takes: the idempotency
// record is the first row the transaction writes, so a used key stops it
// before it charges anything, and a request refused before its transaction
// looks for an earlier one before it answers.
func (s *Service) SendFax(ctx context.Context, p Principal, idemKey string, r SendFaxRequest) (fax *Fax, replayed bool, err error) {
	if err := Authorize(p, OpSendFax); err != nil {
		return nil, false, err
	}
	if idemKey == "" {
		return nil, false, Errorf(KindInvalid, CodeIdempotencyKeyRequired, "the Idempotency-Key header is required; use a fresh random value per fax")
	}
	if len(idemKey) > MaxIdempotencyKey {
		return nil, false, Errorf(KindInvalid, CodeInvalidRequest, "Idempotency-Key is longer than %d characters", MaxIdempotencyKey)
	}
	if err := s.CheckProvider(p.Mode); err != nil {
		return nil, false, err
	}
	scope := fmt.Sprintf("%s:%s:send_fax", p.OwnerID, p.Mode)
	reqHash := hashRequest(r)
	f, err := s.newCreditFax(ctx, p, r)
	if err != nil {
		if o, ok, rerr := s.replay(ctx, scope, idemKey, reqHash); ok || rerr != nil {
			return o, ok, rerr
		}
		return nil, false, err
	}
	err = s.d.Store.InTx(ctx, func(tx Tx) error {
		return s.CreateFax(ctx, tx, NewFax{Fax: f, Idempotency: &IdempotencyRecord{
			Scope: scope, Key: idemKey, RequestHash: reqHash, ResponseCode: 200, CreatedAt: f.CreatedAt,
		}})
	})
	switch {
	case errors.Is(err, ErrExists):
		// The key was used: by an earlier request, or by a concurrent one
		// that committed first. Answer as it was answered.
		if o, ok, err := s.replay(ctx, scope, idemKey, reqHash); ok || err != nil {
			return o, ok, err
		}
		return nil, false, fmt.Errorf("idempotency record vanished for key")
	case IsInsufficient(err):
		// A request with the same key that committed first (its hold may be
		// what used the balance up) is answered as it was, not with a 402.
		if o, ok, err := s.replay(ctx, scope, idemKey, reqHash); ok || err != nil {
			return o, ok, err
		}
		return nil, false, s.InsufficientCredits(ctx, p, f.PriceMicros).With("checkoutPath", "/api/v1/credits/checkout")
	case err != nil:
		return nil, false, err
	}
	s.d.Logger.InfoContext(ctx, "fax queued", "fax_id", f.ID, "owner_id", f.OwnerID, "mode", f.Mode, "pages", f.Pages, "price", f.Price)
	return f, false, nil
}

// newCreditFax checks a send request and builds its fax, priced and ready
// to be created; it writes nothing.
func (s *Service) newCreditFax(ctx context.Context, p Principal, r SendFaxRequest) (*Fax, error) {
	if err := CheckCover(r.Cover, r.CoverText); err != nil {
		return nil, err
	}
	q, err := s.quoteRequest(ctx, p, r)
	if err != nil {
		return nil, err
	}
	now := s.now()
	f := &Fax{
		ID: NewID(PrefixFax), OwnerID: p.OwnerID, Mode: p.Mode, Status: FaxQueued, To: q.to, From: q.from,
		DocumentID: q.doc.ID, Pages: q.doc.Pages, Cover: r.Cover, CoverText: r.CoverText,
		PriceMicros: q.quote.AmountMicros, Currency: Currency, PaymentMethod: PayCredits,
		CreatedAt: now, UpdatedAt: now,
	}
	s.Present(f, nil)
	return f, nil
}

// quoted is a send or draft request checked and priced: what its fax or
// draft is made of.
type quoted struct {
	to, country, from string
	doc               *Document
	quote             Quote
}

// quoteRequest checks a request's destination, sender and document and
// prices it; it writes nothing. The caller checks the cover first.
func (s *Service) quoteRequest(ctx context.Context, p Principal, r SendFaxRequest) (quoted, error) {
	e164, country, err := s.d.Destination.Check(r.To)
	if err != nil {
		return quoted{}, err
	}
	from, err := s.senderNumber(ctx, p, r.From)
	if err != nil {
		return quoted{}, err
	}
	doc, err := s.ResolveDocument(ctx, p, r.UploadToken, r.DocumentID)
	if err != nil {
		return quoted{}, err
	}
	q, err := s.d.Prices.Quote(e164, country, doc.Pages, r.Cover)
	if err != nil {
		return quoted{}, err
	}
	return quoted{to: e164, country: country, from: from, doc: doc, quote: q}, nil
}

// checkProvider refuses to take money for faxes nobody can send: live mode
// needs a configured provider.
func (s *Service) CheckProvider(m Mode) error {
	if s.d.Providers[m] == nil {
		return Errorf(KindUnavailable, CodeProviderUnavailable, "%s-mode faxing is not configured on this server", m)
	}
	return nil
}

// replay answers from a stored idempotency record: ok is true when the
// record exists and matches; a different request under the same key is a
// conflict.
func (s *Service) replay(ctx context.Context, scope, key, reqHash string) (*Fax, bool, error) {
	rec, err := s.d.Store.GetIdempotency(ctx, scope, key)
	if errors.Is(err, ErrNoRows) {
		return nil, false, nil
	} else if err != nil {
		return nil, false, fmt.Errorf("read idempotency record: %w", err)
	}
	if rec.RequestHash != reqHash {
		return nil, false, Errorf(KindConflict, CodeIdempotencyConflict, "this Idempotency-Key was already used with a different request")
	}
	var o Fax
	if err := json.Unmarshal(rec.Response, &o); err != nil {
		return nil, false, fmt.Errorf("decode stored response: %w", err)
	}
	return &o, true, nil
}

// hashRequest fingerprints a request for idempotency comparison.
func hashRequest(v any) string {
	b, _ := json.Marshal(v)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// allow applies a shared GCRA limit on q (the store or a transaction),
// turning refusal into a 429 *Error.
func (s *Service) AllowIn(ctx context.Context, q Queries, key string, interval time.Duration, burst int) error {
	ok, wait, err := q.AllowRate(ctx, key, s.now(), interval, burst)
	if err != nil {
		return fmt.Errorf("rate limit %s: %w", key, err)
	}
	if !ok {
		secs := int((wait + time.Second - 1) / time.Second)
		e := Errorf(KindRateLimited, CodeRateLimited, "too many requests; retry in %d s", max(secs, 1))
		e.RetryAfterSeconds = max(secs, 1)
		return e
	}
	return nil
}

// present fills a fax's response-only fields.
func (s *Service) Present(o *Fax, latest *Attempt) {
	o.Price, o.PriceCents, o.LatestAttempt = FormatUSD(o.PriceMicros), CentsUp(o.PriceMicros), latest
}

// GetFax returns one of the principal's faxes with its latest attempt.
func (s *Service) GetFax(ctx context.Context, p Principal, id string) (*Fax, error) {
	if err := Authorize(p, OpGetFax); err != nil {
		return nil, err
	}
	return s.LoadFax(ctx, p, id)
}

// getFax reads one of p's faxes with its latest attempt, as GetFax
// presents it, for callers that authorised another operation.
func (s *Service) LoadFax(ctx context.Context, p Principal, id string) (*Fax, error) {
	o, err := s.d.Store.GetFax(ctx, p.OwnerID, p.Mode, id)
	if err != nil {
		return nil, StoreErr(err, "fax")
	}
	// A fax's attempts count and its attempt rows are written in one
	// transaction (startAttempt), so a fax never attempted has none to
	// read: a status poll of a queued fax is one read, not two.
	var a *Attempt
	if o.Attempts > 0 {
		a, err = s.d.Store.LatestAttempt(ctx, o.ID)
		if err != nil && !errors.Is(err, ErrNoRows) {
			return nil, fmt.Errorf("latest attempt: %w", err)
		}
	}
	s.Present(o, a)
	return o, nil
}

// FaxAttempts lists every attempt of one of the principal's faxes.
func (s *Service) FaxAttempts(ctx context.Context, p Principal, id string) ([]Attempt, error) {
	if _, err := s.GetFax(ctx, p, id); err != nil {
		return nil, err
	}
	return s.d.Store.ListAttempts(ctx, id)
}

// Page is one page of a cursor-paginated list.
type Page[T any] struct {
	Data    []T    `json:"data"`
	HasMore bool   `json:"hasMore"`
	Next    string `json:"nextCursor,omitempty"`
}

// ListLimits bound list page sizes.
const (
	DefaultListLimit = 20
	MaxListLimit     = 100
)

func CheckLimit(limit int) (int, error) {
	switch {
	case limit == 0:
		return DefaultListLimit, nil
	case limit < 0 || limit > MaxListLimit:
		return 0, Errorf(KindInvalid, CodeInvalidRequest, "limit must be between 1 and %d", MaxListLimit)
	}
	return limit, nil
}

// ListFaxes lists the principal's faxes, newest first. The latest attempt
// is not included in lists (use GetFax).
func (s *Service) ListFaxes(ctx context.Context, p Principal, status string, startingAfter string, limit int) (*Page[Fax], error) {
	if err := Authorize(p, OpListFaxes); err != nil {
		return nil, err
	}
	limit, err := CheckLimit(limit)
	if err != nil {
		return nil, err
	}
	if status != "" && !slices.Contains(FaxStatuses, FaxStatus(status)) {
		return nil, Errorf(KindInvalid, CodeInvalidRequest, "status must be one of %s", joinStatuses())
	}
	if startingAfter != "" {
		if _, err := s.d.Store.GetFax(ctx, p.OwnerID, p.Mode, startingAfter); err != nil {
			if errors.Is(err, ErrNoRows) {
				return nil, Errorf(KindInvalid, CodeInvalidRequest, "starting_after names no fax of yours")
			}
			return nil, err
		}
	}
	faxes, err := s.d.Store.ListFaxes(ctx, FaxFilter{OwnerID: p.OwnerID, Mode: p.Mode, Status: FaxStatus(status), StartingAfter: startingAfter, Limit: limit + 1})
	if err != nil {
		return nil, fmt.Errorf("list faxes: %w", err)
	}
	page := &Page[Fax]{Data: faxes}
	if len(faxes) > limit {
		page.Data, page.HasMore = faxes[:limit], true
		page.Next = page.Data[limit-1].ID
	}
	for i := range page.Data {
		s.Present(&page.Data[i], nil)
	}
	if page.Data == nil {
		page.Data = []Fax{}
	}
	return page, nil
}

func joinStatuses() string {
	parts := make([]string, len(FaxStatuses))
	for i, st := range FaxStatuses {
		parts[i] = string(st)
	}
	return strings.Join(parts, ", ")
}

// CancelFax cancels a queued fax and releases its hold. A fax being sent
// is called back where its provider can (FaxCanceler): the provider
// reports the end (canceled, or delivered if it was too late) like any
// other outcome, so the fax answered is still sending.
func (s *Service) CancelFax(ctx context.Context, p Principal, id string) (*Fax, error) {
	if err := Authorize(p, OpCancelFax); err != nil {
		return nil, err
	}
	err := s.CancelQueuedFax(ctx, p, id)
	var e *Error
	if errors.As(err, &e) && e.Code == CodeFaxNotCancelable {
		if ok, cerr := s.cancelSendingFax(ctx, p, id); ok || cerr != nil {
			if cerr != nil {
				return nil, cerr
			}
			return s.LoadFax(ctx, p, id)
		}
	}
	if err != nil {
		return nil, err
	}
	return s.LoadFax(ctx, p, id)
}

// cancelSendingFax asks the provider to call back a fax it is sending; ok
// is false where that is not possible (the provider cannot, or the fax is
// not sending).
func (s *Service) cancelSendingFax(ctx context.Context, p Principal, id string) (bool, error) {
	canceler, ok := s.d.Providers[p.Mode].(FaxCanceler)
	if !ok {
		return false, nil
	}
	o, err := s.d.Store.GetFax(ctx, p.OwnerID, p.Mode, id)
	if err != nil {
		return false, StoreErr(err, "fax")
	}
	if o.Status != FaxSending {
		return false, nil
	}
	a, err := s.d.Store.LatestAttempt(ctx, o.ID)
	if err != nil || a.Status != AttemptSending || a.ProviderRef == "" {
		return false, nil
	}
	if err := canceler.CancelSend(ctx, a.ProviderRef); err != nil {
		return false, WrapErr(Errorf(KindConflict, CodeFaxNotCancelable, "the provider could not call this fax back (it may be finishing); its outcome follows"), err)
	}
	s.d.Logger.InfoContext(ctx, "fax cancel requested at the provider", "fax_id", o.ID, "owner_id", o.OwnerID)
	return true, nil
}

// cancelQueuedFax is the one rule for calling a fax back, for CancelFax
// (fax:send) and CancelTask (fax:draft) alike: only a queued fax can be
// canceled, and what was paid returns to the owner (settle) in the same
// transaction. Otherwise a fax_not_cancelable *Error saying why.
func (s *Service) CancelQueuedFax(ctx context.Context, p Principal, id string) error {
	return s.d.Store.InTx(ctx, func(tx Tx) error {
		o, err := tx.GetFax(ctx, p.OwnerID, p.Mode, id)
		if err != nil {
			return StoreErr(err, "fax")
		}
		if o.Status != FaxQueued {
			return Errorf(KindConflict, CodeFaxNotCancelable, "a fax that is %s can no longer be canceled", o.Status)
		}
		now := s.now()
		o.Status, o.UpdatedAt, o.CompletedAt, o.NextAttemptAt = FaxCanceled, now, &now, nil
		o.FailureCode, o.FailureReason = "canceled", "canceled by the owner"
		if err := tx.UpdateFax(ctx, o, FaxQueued); err != nil {
			if errors.Is(err, ErrConflict) {
				return Errorf(KindConflict, CodeFaxNotCancelable, "the fax started sending and can no longer be canceled")
			}
			return err
		}
		return s.settle(ctx, tx, o, LedgerRelease)
	})
}

// settle captures or releases what was paid for the fax, in the
// transaction that ends it. A credit fax's hold is captured or released. A
// fax paid at its checkout has no hold: released (canceled, failed), its
// whole price returns to the owner as account credits (a refund entry);
// captured, nothing moves. A machine's fax has no account to return to:
// released, its charge is owed back through its method (settleMachine).
func (s *Service) settle(ctx context.Context, tx Tx, o *Fax, kind LedgerKind) error {
	switch o.PaymentMethod {
	case PayMachine:
		// Released, the whole charge is owed back through its method; a
		// partial fax owes the unsent pages' share (refundUnsentPages), a
		// delivered one nothing.
		if kind != LedgerRelease {
			return nil
		}
		return s.d.PayerRefunds.OwePayer(ctx, tx, o, o.PriceMicros)
	case PayCredits:
		if _, err := tx.SettleHold(ctx, o.ID, kind, s.now()); err != nil {
			return fmt.Errorf("settle hold of %s (%s): %w", o.ID, kind, err)
		}
	case PayCheckout:
		if kind != LedgerRelease || o.PriceMicros <= 0 {
			return nil
		}
		err := tx.AppendLedger(ctx, &LedgerEntry{
			ID: NewID(PrefixLedger), OwnerID: o.OwnerID, Mode: o.Mode, Kind: LedgerRefund, AmountMicros: o.PriceMicros,
			FaxID: &o.ID, Reason: fmt.Sprintf("refund as credits of fax %s paid at checkout (%s)", o.ID, o.Status), CreatedAt: s.now(),
		})
		if err != nil {
			return fmt.Errorf("refund fax %s paid at checkout: %w", o.ID, err)
		}
	}
	return nil
}
