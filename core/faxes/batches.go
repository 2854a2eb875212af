package faxes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/events"
)

// A batch (a broadcast) is one document sent to many recipients in one
// request. Each recipient is a fax of its own (its own id, price, hold,
// events and delivery), named by the batch (Fax.BatchID); the batch row
// counts the faxes not yet ended, so the fax that ends last can say the
// batch is complete (batch.completed), exactly once.

// MaxBatchRecipients bounds a batch.
const MaxBatchRecipients = 100

// BatchRequest is the body of sendBatch: one document, its recipients, and
// the options every recipient's fax is sent with (as in a send).
type BatchRequest struct {
	UploadToken string           `json:"uploadToken,omitempty"`
	DocumentID  string           `json:"documentId,omitempty"`
	Recipients  []BatchRecipient `json:"recipients"`
	Cover       bool             `json:"cover,omitempty"`
	CoverText   string           `json:"coverText,omitempty"`
	From        string           `json:"from,omitempty"`
	Options
}

// BatchRecipient is one destination of a batch, with the cover page fields
// that differ per recipient.
type BatchRecipient struct {
	To        string          `json:"to"`
	CoverPage *RecipientCover `json:"coverPage,omitempty"`
}

// RecipientCover are a recipient's own cover page fields. Given, the
// recipient's fax has a cover page: the batch's coverPage (or an empty one
// with the owner's sender fields) with these fields in place of its own.
type RecipientCover struct {
	RecipientName    string `json:"recipientName,omitempty"`
	RecipientCompany string `json:"recipientCompany,omitempty"`
}

// Batch is a stored broadcast.
type Batch struct {
	ID          string    `db:"id"`
	OwnerID     string    `db:"owner_id"`
	Mode        core.Mode `db:"mode"`
	DocumentID  string    `db:"document_id"`
	Recipients  int       `db:"recipients"`
	Remaining   int       `db:"remaining"`
	PriceMicros int64     `db:"price_micros"`
	CreatedAt   time.Time `db:"created_at"`
	// CompletedAt is set by the transaction that ends the batch's last fax.
	CompletedAt *time.Time `db:"completed_at"`
}

// BatchCounts are a batch's faxes by status.
type BatchCounts struct {
	Scheduled int `json:"scheduled"`
	Queued    int `json:"queued"`
	Sending   int `json:"sending"`
	Delivered int `json:"delivered"`
	Partial   int `json:"partial"`
	Failed    int `json:"failed"`
	Canceled  int `json:"canceled"`
}

// BatchFax is one fax of a batch as its summary lists it.
type BatchFax struct {
	ID     string `json:"id" db:"id"`
	Status Status `json:"status" db:"status"`
	To     string `json:"to" db:"destination"`
}

// BatchView is a batch's status summary: what sendBatch, getBatch,
// cancelBatch and the batch.completed event show.
type BatchView struct {
	ID          string      `json:"id"`
	Mode        core.Mode   `json:"mode"`
	DocumentID  string      `json:"documentId"`
	CreatedAt   time.Time   `json:"createdAt"`
	CompletedAt *time.Time  `json:"completedAt,omitempty"`
	Total       int         `json:"total"`
	Counts      BatchCounts `json:"counts"`
	Currency    string      `json:"currency"`
	Price       string      `json:"price"`
	PriceCents  int64       `json:"priceCents"`
	// Faxes are every fax of the batch (at most MaxBatchRecipients), in
	// id order; lists of batches leave them out.
	Faxes []BatchFax `json:"faxes,omitempty"`
}

// BatchFilter selects batches for listing, newest first.
type BatchFilter struct {
	OwnerID       string
	Mode          core.Mode
	StartingAfter string // batch id
	Limit         int
}

// BatchQueries keep batches.
type BatchQueries interface {
	CreateBatch(ctx context.Context, b *Batch) error
	GetBatch(ctx context.Context, ownerID string, mode core.Mode, id string) (*Batch, error)
	// ListBatches lists newest first; StartingAfter must name a batch of
	// the owner and mode (ErrNoRows otherwise).
	ListBatches(ctx context.Context, f BatchFilter) ([]Batch, error)
	// ListBatchFaxes lists a batch's faxes in id order.
	ListBatchFaxes(ctx context.Context, batchID string) ([]BatchFax, error)
	// EndBatchFax counts one of the batch's faxes ended: it decrements
	// remaining under the row's lock (UPDATE … RETURNING), sets
	// completed_at to at when it reaches 0, and returns what remains.
	// ErrNoRows if no fax of the batch remains (or there is no batch).
	EndBatchFax(ctx context.Context, batchID string, at time.Time) (remaining int, err error)
}

// SendBatch sends one document to every recipient of r, paid with the
// principal's credits, all or nothing: every recipient is checked and
// priced first (the first refusal refuses the request, naming the
// recipient), then one transaction writes the idempotency record, charges
// the send rate for every fax (core.Kernel.AllowNIn), and creates the
// batch and each fax with its hold and its job. Too few credits for the
// total creates nothing (402). replayed is true when the stored response of
// an earlier identical request is returned.
func (s *Service) SendBatch(ctx context.Context, p core.Principal, idemKey string, r BatchRequest) (*BatchView, bool, error) {
	if err := s.checkSend(p, core.OpSendBatch, idemKey); err != nil {
		return nil, false, err
	}
	scope := fmt.Sprintf("%s:%s:send_batch", p.OwnerID, p.Mode)
	reqHash := core.HashRequest(r)
	b, fs, err := s.newBatch(ctx, p, r)
	if err != nil {
		if v, ok, rerr := s.replayBatch(ctx, scope, idemKey, reqHash); ok || rerr != nil {
			return v, ok, rerr
		}
		return nil, false, err
	}
	view := s.batchView(b, BatchCounts{}, []BatchFax{})
	for _, f := range fs {
		view.Faxes = append(view.Faxes, BatchFax{ID: f.ID, Status: f.Status, To: f.To})
		countStatus(&view.Counts, f.Status, 1)
	}
	err = s.inTx(ctx, func(tx Tx) error {
		resp, err := json.Marshal(view)
		if err != nil {
			return fmt.Errorf("encode batch: %w", err)
		}
		// First, as in CreateFax: a used key stops the request before it
		// charges anything.
		if err := tx.InsertIdempotency(ctx, &core.IdempotencyRecord{
			Scope: scope, Key: idemKey, RequestHash: reqHash, ResponseCode: 200, Response: resp, CreatedAt: b.CreatedAt,
		}); err != nil {
			return err
		}
		if err := s.kernel.AllowNIn(ctx, tx, core.LimitSend, p.OwnerID+":"+string(p.Mode), len(fs)); err != nil {
			return err
		}
		if err := tx.CreateBatch(ctx, b); err != nil {
			return fmt.Errorf("create batch: %w", err)
		}
		for i, f := range fs {
			err := s.CreateFax(ctx, tx, NewFax{Fax: f, RateCharged: true,
				HoldReason: fmt.Sprintf("hold for fax %s to %s (batch %s, recipient %d)", f.ID, f.To, b.ID, i)})
			if err != nil {
				return err
			}
		}
		return nil
	})
	switch {
	case errors.Is(err, core.ErrExists):
		if v, ok, err := s.replayBatch(ctx, scope, idemKey, reqHash); ok || err != nil {
			return v, ok, err
		}
		return nil, false, fmt.Errorf("idempotency record vanished for key")
	case credits.IsInsufficient(err):
		if v, ok, err := s.replayBatch(ctx, scope, idemKey, reqHash); ok || err != nil {
			return v, ok, err
		}
		return nil, false, s.credits.Insufficient(ctx, p, b.PriceMicros).With("checkoutPath", "/api/v1/credits/checkout").With("recipients", len(fs))
	case err != nil:
		return nil, false, err
	}
	s.d.Logger.InfoContext(ctx, "batch queued", "batch_id", b.ID, "owner_id", b.OwnerID, "mode", b.Mode, "recipients", len(fs), "price", view.Price)
	return &view, false, nil
}

// newBatch checks a batch request and builds its batch and faxes, priced
// and ready to be created; it writes nothing. The options every recipient
// shares are checked once, before any recipient, so that their refusals
// name no recipient; a recipient's refusal names it (recipient, its index,
// and to).
func (s *Service) newBatch(ctx context.Context, p core.Principal, r BatchRequest) (*Batch, []*Fax, error) {
	switch n := len(r.Recipients); {
	case n == 0:
		return nil, nil, invalidField("recipients", "recipients must name at least one destination")
	case n > MaxBatchRecipients:
		return nil, nil, invalidField("recipients", "a batch has at most %d recipients; this one has %d", MaxBatchRecipients, n).With("limit", MaxBatchRecipients)
	}
	shared := SendRequest{From: r.From, Cover: r.Cover, CoverText: r.CoverText, Options: r.Options}
	if _, _, err := s.checkOptions(shared); err != nil {
		return nil, nil, err
	}
	doc, err := s.ResolveDocument(ctx, p, r.UploadToken, r.DocumentID)
	if err != nil {
		return nil, nil, err
	}
	from, err := s.senderNumber(ctx, p, r.From)
	if err != nil {
		return nil, nil, err
	}
	b := &Batch{ID: core.NewID(core.PrefixBatch), OwnerID: p.OwnerID, Mode: p.Mode, DocumentID: doc.ID,
		Recipients: len(r.Recipients), Remaining: len(r.Recipients), CreatedAt: s.now()}
	fs := make([]*Fax, 0, len(r.Recipients))
	for i, rc := range r.Recipients {
		f, err := s.recipientFax(ctx, p, shared, rc, doc, from)
		if err != nil {
			var e *core.Error
			if errors.As(err, &e) {
				return nil, nil, e.With("recipient", i).With("to", rc.To)
			}
			return nil, nil, err
		}
		f.BatchID = &b.ID
		b.PriceMicros += f.PriceMicros
		fs = append(fs, f)
	}
	return b, fs, nil
}

// recipientFax builds one recipient's fax of a batch from the shared
// request, the document and the sender resolved once for all.
func (s *Service) recipientFax(ctx context.Context, p core.Principal, shared SendRequest, rc BatchRecipient, doc *documents.Document, from string) (*Fax, error) {
	r := shared
	r.To = rc.To
	if rc.CoverPage != nil {
		cp := CoverPage{}
		if r.CoverPage != nil {
			cp = *r.CoverPage
		}
		cp.RecipientName, cp.RecipientCompany = cmpText(rc.CoverPage.RecipientName, cp.RecipientName), cmpText(rc.CoverPage.RecipientCompany, cp.RecipientCompany)
		r.CoverPage = &cp
	}
	opts, err := s.PrepareOptions(ctx, p, r)
	if err != nil {
		return nil, err
	}
	e164, country, err := s.d.Destination.Check(r.To)
	if err != nil {
		return nil, err
	}
	q, err := s.quoteDocument(e164, country, from, doc, opts.HasCover())
	if err != nil {
		return nil, err
	}
	return s.creditFax(p, q, opts), nil
}

// replayBatch answers from a stored idempotency record of a batch, as
// replay does for a fax.
func (s *Service) replayBatch(ctx context.Context, scope, key, reqHash string) (*BatchView, bool, error) {
	return replayAs[BatchView](ctx, s, scope, key, reqHash)
}

// batchView is b's summary with the given counts and faxes.
func (s *Service) batchView(b *Batch, counts BatchCounts, faxes []BatchFax) BatchView {
	return BatchView{ID: b.ID, Mode: b.Mode, DocumentID: b.DocumentID, CreatedAt: b.CreatedAt, CompletedAt: b.CompletedAt,
		Total: b.Recipients, Counts: counts, Currency: core.Currency, Price: core.FormatUSD(b.PriceMicros),
		PriceCents: core.CentsUp(b.PriceMicros), Faxes: faxes}
}

func countStatus(c *BatchCounts, st Status, n int) {
	switch st {
	case Scheduled:
		c.Scheduled += n
	case Queued:
		c.Queued += n
	case Sending:
		c.Sending += n
	case Delivered:
		c.Delivered += n
	case Partial:
		c.Partial += n
	case Failed:
		c.Failed += n
	case Canceled:
		c.Canceled += n
	}
}

// summary reads b's faxes on q (the store, or the transaction that ends
// the batch) and makes its summary.
func (s *Service) summary(ctx context.Context, q BatchQueries, b *Batch) (*BatchView, error) {
	fs, err := q.ListBatchFaxes(ctx, b.ID)
	if err != nil {
		return nil, fmt.Errorf("list faxes of batch %s: %w", b.ID, err)
	}
	var c BatchCounts
	for _, f := range fs {
		countStatus(&c, f.Status, 1)
	}
	if fs == nil {
		fs = []BatchFax{}
	}
	v := s.batchView(b, c, fs)
	return &v, nil
}

// GetBatch returns the status summary of one of the principal's batches.
func (s *Service) GetBatch(ctx context.Context, p core.Principal, id string) (*BatchView, error) {
	if err := core.Authorize(p, core.OpGetBatch); err != nil {
		return nil, err
	}
	b, err := s.d.Store.GetBatch(ctx, p.OwnerID, p.Mode, id)
	if err != nil {
		return nil, core.StoreErr(err, "batch")
	}
	return s.summary(ctx, s.d.Store, b)
}

// ListBatches lists the principal's batches, newest first, without their
// faxes or counts (getBatch has them).
func (s *Service) ListBatches(ctx context.Context, p core.Principal, startingAfter string, limit int) (*core.Page[BatchView], error) {
	if err := core.Authorize(p, core.OpListBatches); err != nil {
		return nil, err
	}
	limit, err := core.CheckLimit(limit)
	if err != nil {
		return nil, err
	}
	bs, err := s.d.Store.ListBatches(ctx, BatchFilter{OwnerID: p.OwnerID, Mode: p.Mode, StartingAfter: startingAfter, Limit: limit + 1})
	if errors.Is(err, core.ErrNoRows) {
		return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "starting_after names no batch of yours").With("parameter", "starting_after")
	} else if err != nil {
		return nil, fmt.Errorf("list batches: %w", err)
	}
	page := &core.Page[BatchView]{Data: []BatchView{}}
	if len(bs) > limit {
		bs, page.HasMore = bs[:limit], true
		page.Next = bs[limit-1].ID
	}
	for i := range bs {
		v := s.batchView(&bs[i], BatchCounts{}, nil)
		page.Data = append(page.Data, v)
	}
	return page, nil
}

// CancelBatch cancels every fax of one of the principal's batches that has
// not started (scheduled or queued), each as CancelQueued does (its hold
// released, its fax.canceled event), and returns the summary. A fax that
// started meanwhile goes on; a batch with nothing left to cancel is
// answered with its summary as it is.
func (s *Service) CancelBatch(ctx context.Context, p core.Principal, id string) (*BatchView, error) {
	if err := core.Authorize(p, core.OpCancelBatch); err != nil {
		return nil, err
	}
	b, err := s.d.Store.GetBatch(ctx, p.OwnerID, p.Mode, id)
	if err != nil {
		return nil, core.StoreErr(err, "batch")
	}
	fs, err := s.d.Store.ListBatchFaxes(ctx, b.ID)
	if err != nil {
		return nil, fmt.Errorf("list faxes of batch %s: %w", b.ID, err)
	}
	for _, f := range fs {
		if f.Status != Scheduled && f.Status != Queued {
			continue
		}
		if err := s.CancelQueued(ctx, p, f.ID); err != nil && core.ErrorCode(err) != CodeFaxNotCancelable {
			return nil, fmt.Errorf("cancel fax %s of batch %s: %w", f.ID, b.ID, err)
		}
	}
	return s.GetBatch(ctx, p, id)
}

// batchFaxEnded counts o, one of a batch's faxes that has just ended, in
// the transaction that ended it; the fax that ends the batch appends
// batch.completed. The batch row's lock orders concurrent ends (on
// PostgreSQL, deliveries on other replicas), so exactly one of them sees
// remaining reach 0, and it reads the others' faxes ended.
func (s *Service) batchFaxEnded(ctx context.Context, tx Tx, o *Fax) error {
	at := o.UpdatedAt
	remaining, err := tx.EndBatchFax(ctx, *o.BatchID, at)
	if err != nil {
		return fmt.Errorf("count fax %s ended in batch %s: %w", o.ID, *o.BatchID, err)
	}
	if remaining > 0 {
		return nil
	}
	b, err := tx.GetBatch(ctx, o.OwnerID, o.Mode, *o.BatchID)
	if err != nil {
		return fmt.Errorf("read batch %s: %w", *o.BatchID, err)
	}
	v, err := s.summary(ctx, tx, b)
	if err != nil {
		return err
	}
	if err := events.Append(ctx, tx, b.OwnerID, b.Mode, events.BatchCompleted, b.ID, v, at); err != nil {
		return fmt.Errorf("batch %s: %w", b.ID, err)
	}
	return nil
}
