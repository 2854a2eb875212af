// Package faxes is sending faxes: quotes, drafts, the one step that
// creates a fax for every way of paying (CreateFax), sends with credits,
// cancels, and delivery — attempts at the provider, their outcomes,
// retries, the settlement of what was paid — and the signed links where a
// provider fetches the document.
package faxes

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/events"
	"github.com/faxhub/faxhub/core/numbers"
)

// SendRequest is the body of sendFax: a destination and a document named
// either by the upload token it was uploaded with or by its id.
type SendRequest struct {
	To          string `json:"to"`
	UploadToken string `json:"uploadToken,omitempty"`
	DocumentID  string `json:"documentId,omitempty"`
	Cover       bool   `json:"cover,omitempty"`
	CoverText   string `json:"coverText,omitempty"`
	// From is the sender: one of the owner's active numbers (E.164 or its
	// id); empty for the provider's default.
	From string `json:"from,omitempty"`
	Options
}

// MaxCoverText bounds the cover page note.
const MaxCoverText = 2000

// QuoteRequest prices a fax without side effects.
type QuoteRequest struct {
	To string
	// Pages is the page count to price; nil (the caller gave none) means
	// one page. See QuotePages for the rule.
	Pages *int
	Cover bool
}

// Quote prices a fax for p (scope fax:draft): it checks the destination
// and prices the pages to it. Every door (REST, MCP, A2A, the delegated
// agents) quotes through it, so the scope and the pages rule are decided
// once, here.
func (s *Service) Quote(ctx context.Context, p core.Principal, r QuoteRequest) (core.Quote, error) {
	if err := core.Authorize(p, core.OpQuote); err != nil {
		return core.Quote{}, err
	}
	pages, err := s.QuotePages(r.Pages)
	if err != nil {
		return core.Quote{}, err
	}
	return s.Price(r.To, pages, r.Cover)
}

// QuotePages is the one rule for a page count given to price a fax (every
// door's validate_fax and POST /quote): absent means one page, the
// smallest fax, so an agent can price a destination before it has a
// document; given, it must be 1 to MaxPages. Zero or negative is
// invalid_request (field pages): a client that says 0 pages made a
// mistake, and pricing it as 1 would hide it. Too many is too_many_pages,
// as for a document.
func (s *Service) QuotePages(pages *int) (int, error) {
	switch {
	case pages == nil:
		return 1, nil
	case *pages < 1:
		return 0, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "pages must be at least 1").With("field", "pages")
	case *pages > s.documents.MaxPages():
		return 0, core.Errorf(core.KindUnprocessable, documents.CodeTooManyPages, "at most %d pages can be sent", s.documents.MaxPages()).
			With("pages", *pages).With("limit", s.documents.MaxPages())
	}
	return *pages, nil
}

// Price checks a destination and prices pages to it, without a principal:
// it is what Quote does after its checks, and what the machine payment
// door (unauthenticated, paying per request) prices with. Adapters quote
// through Quote.
func (s *Service) Price(to string, pages int, cover bool) (core.Quote, error) {
	e164, country, err := s.d.Destination.Check(to)
	if err != nil {
		return core.Quote{}, err
	}
	if pages > s.documents.MaxPages() {
		return core.Quote{}, core.Errorf(core.KindUnprocessable, documents.CodeTooManyPages, "at most %d pages can be sent", s.documents.MaxPages())
	}
	return s.d.Prices.Quote(e164, country, pages, cover)
}

func (s *Service) ResolveDocument(ctx context.Context, p core.Principal, uploadToken, documentID string) (*documents.Document, error) {
	return s.resolveDocument(ctx, p, uploadToken, documentID, false)
}

// resolveDocument is ResolveDocument; toUse says the request's transaction
// will use the document (UseDocument refuses one purged since it was
// read), so it may come from memory (DocumentToUse, FromTokenToUse).
func (s *Service) resolveDocument(ctx context.Context, p core.Principal, uploadToken, documentID string, toUse bool) (*documents.Document, error) {
	switch {
	case uploadToken != "" && documentID != "":
		return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "give uploadToken or documentId, not both")
	case uploadToken != "" && toUse:
		return s.documents.FromTokenToUse(ctx, p, uploadToken)
	case uploadToken != "":
		return s.documents.FromToken(ctx, p, uploadToken)
	case documentID != "":
		get := s.d.Store.GetDocument
		if toUse {
			get = s.d.Store.DocumentToUse
		}
		d, err := get(ctx, p.OwnerID, p.Mode, documentID)
		return d, core.StoreErr(err, "document")
	}
	return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "uploadToken or documentId is required")
}

func CheckCover(cover bool, text string) error {
	if len(text) > MaxCoverText {
		return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "coverText is longer than %d characters", MaxCoverText)
	}
	if text != "" && !cover {
		return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "coverText needs cover: true")
	}
	return nil
}

// Send pays for a fax with the principal's credits and queues it. The
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
func (s *Service) Send(ctx context.Context, p core.Principal, idemKey string, r SendRequest) (fax *Fax, replayed bool, err error) {
	if err := s.checkSend(p, core.OpSendFax, idemKey); err != nil {
		return nil, false, err
	}
	return s.sendWithCredits(ctx, p, idemKey, core.HashRequest(r), func() (*Fax, error) {
		return s.newCreditFax(ctx, p, r)
	})
}

// checkSend is what every request that spends credits on faxes checks
// before anything else: the operation's scope, the Idempotency-Key, and a
// provider for the mode.
func (s *Service) checkSend(p core.Principal, op core.Operation, idemKey string) error {
	if err := core.Authorize(p, op); err != nil {
		return err
	}
	if idemKey == "" {
		return core.Errorf(core.KindInvalid, core.CodeIdempotencyKeyRequired, "the Idempotency-Key header is required; use a fresh random value per fax")
	}
	if len(idemKey) > core.MaxIdempotencyKey {
		return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "Idempotency-Key is longer than %d characters", core.MaxIdempotencyKey)
	}
	return s.CheckProvider(p.Mode)
}

// sendScope is the idempotency scope of the requests that make one fax
// paid with credits (a send, a resend): one namespace of keys, so a key
// used for one cannot make another.
func sendScope(p core.Principal) string { return fmt.Sprintf("%s:%s:send_fax", p.OwnerID, p.Mode) }

// sendWithCredits is the way of Send and Resend: build checks the request
// and builds its fax (writing nothing); the fax is then created with its
// idempotency record, hold and job in one transaction (CreateFax).
func (s *Service) sendWithCredits(ctx context.Context, p core.Principal, idemKey, reqHash string, build func() (*Fax, error)) (*Fax, bool, error) {
	scope := sendScope(p)
	f, err := build()
	if err != nil {
		if o, ok, rerr := s.replay(ctx, scope, idemKey, reqHash); ok || rerr != nil {
			return o, ok, rerr
		}
		return nil, false, err
	}
	// The fax is encoded once, here rather than in the transaction (on
	// SQLite the writer every send waits for): build presented it, so the
	// idempotent response and the created event's data are the same text.
	resp, err := json.Marshal(f)
	if err != nil {
		return nil, false, fmt.Errorf("encode fax: %w", err)
	}
	err = s.inTx(ctx, func(tx Tx) error {
		return s.CreateFax(ctx, tx, NewFax{Fax: f, Presented: resp, Idempotency: &core.IdempotencyRecord{
			Scope: scope, Key: idemKey, RequestHash: reqHash, ResponseCode: 200, CreatedAt: f.CreatedAt, Response: resp,
		}})
	})
	switch {
	case errors.Is(err, core.ErrExists):
		// The key was used: by an earlier request, or by a concurrent one
		// that committed first. Answer as it was answered.
		if o, ok, err := s.replay(ctx, scope, idemKey, reqHash); ok || err != nil {
			return o, ok, err
		}
		return nil, false, fmt.Errorf("idempotency record vanished for key")
	case credits.IsInsufficient(err):
		// A request with the same key that committed first (its hold may be
		// what used the balance up) is answered as it was, not with a 402.
		if o, ok, err := s.replay(ctx, scope, idemKey, reqHash); ok || err != nil {
			return o, ok, err
		}
		return nil, false, s.credits.Insufficient(ctx, p, f.PriceMicros).With("checkoutPath", "/api/v1/credits/checkout")
	case err != nil:
		return nil, false, err
	}
	s.d.Logger.InfoContext(ctx, "fax queued", "fax_id", f.ID, "owner_id", f.OwnerID, "mode", f.Mode, "pages", f.Pages, "price", f.Price)
	return f, false, nil
}

// newCreditFax checks a send request and builds its fax, priced and ready
// to be created; it writes nothing.
func (s *Service) newCreditFax(ctx context.Context, p core.Principal, r SendRequest) (*Fax, error) {
	opts, err := s.PrepareOptions(ctx, p, r)
	if err != nil {
		return nil, err
	}
	q, err := s.quoteRequest(ctx, p, r, opts.HasCover(), true)
	if err != nil {
		return nil, err
	}
	return s.creditFax(p, q, opts), nil
}

// creditFax is the fax of a checked and priced request, paid with
// credits.
func (s *Service) creditFax(p core.Principal, q quoted, opts Options) *Fax {
	now := s.now()
	f := &Fax{
		ID: core.NewID(core.PrefixFax), OwnerID: p.OwnerID, Mode: p.Mode, Status: Queued, To: q.to, From: q.from,
		DocumentID: q.doc.ID, Pages: q.doc.Pages, Cover: opts.HasCover(), CoverText: opts.CoverMessage(), Options: opts,
		PriceMicros: q.quote.AmountMicros, Currency: core.Currency, PaymentMethod: PayCredits,
		CreatedAt: now, UpdatedAt: now, SentBy: SentByPrincipal(p),
	}
	s.Schedule(f)
	s.Present(f, nil)
	return f
}

// Schedule makes a fax whose sendAt is ahead scheduled until then; one
// whose time has come (a draft paid or a delegated send approved late) is
// queued now. The caller creates f with CreateFax, which enqueues its
// delivery at that time.
func (s *Service) Schedule(f *Fax) {
	if f.Options.SendAt != nil && f.Options.SendAt.After(f.CreatedAt) {
		at := *f.Options.SendAt
		f.Status, f.NextAttemptAt = Scheduled, &at
	}
}

// quoted is a send or draft request checked and priced: what its fax or
// draft is made of.
type quoted struct {
	to, country, from string
	doc               *documents.Document
	quote             core.Quote
}

// quoteRequest checks a request's destination, sender and document and
// prices it (with a cover page if cover); it writes nothing. The caller
// checks the options first. toUse says the caller's transaction will use
// the document (UseDocument: a send, a draft), so it may come from
// memory (resolveDocument).
func (s *Service) quoteRequest(ctx context.Context, p core.Principal, r SendRequest, cover, toUse bool) (quoted, error) {
	e164, country, err := s.d.Destination.Check(r.To)
	if err != nil {
		return quoted{}, err
	}
	from, err := s.senderNumber(ctx, p, r.From)
	if err != nil {
		return quoted{}, err
	}
	doc, err := s.resolveDocument(ctx, p, r.UploadToken, r.DocumentID, toUse)
	if err != nil {
		return quoted{}, err
	}
	return s.quoteDocument(e164, country, from, doc, cover)
}

// quoteDocument prices doc to a checked destination.
func (s *Service) quoteDocument(e164, country, from string, doc *documents.Document, cover bool) (quoted, error) {
	q, err := s.d.Prices.Quote(e164, country, doc.Pages, cover)
	if err != nil {
		return quoted{}, err
	}
	return quoted{to: e164, country: country, from: from, doc: doc, quote: q}, nil
}

// checkProvider refuses to take money for faxes nobody can send: live mode
// needs a configured provider.
func (s *Service) CheckProvider(m core.Mode) error {
	if s.d.Providers[m] == nil {
		return core.Errorf(core.KindUnavailable, CodeProviderUnavailable, "%s-mode faxing is not configured on this server", m)
	}
	return nil
}

// replay answers from a stored idempotency record: ok is true when the
// record exists and matches; a different request under the same key is a
// conflict.
func (s *Service) replay(ctx context.Context, scope, key, reqHash string) (*Fax, bool, error) {
	f, ok, err := replayAs[Fax](ctx, s, scope, key, reqHash)
	if f != nil {
		// A response stored before faxes recorded their door.
		f.SentBy = f.SentBy.orUnknown()
	}
	return f, ok, err
}

// replayAs is replay for any stored response (a fax, a batch's summary).
func replayAs[T any](ctx context.Context, s *Service, scope, key, reqHash string) (*T, bool, error) {
	rec, err := s.d.Store.GetIdempotency(ctx, scope, key)
	if errors.Is(err, core.ErrNoRows) {
		return nil, false, nil
	} else if err != nil {
		return nil, false, fmt.Errorf("read idempotency record: %w", err)
	}
	if rec.RequestHash != reqHash {
		return nil, false, core.Errorf(core.KindConflict, core.CodeIdempotencyConflict, "this Idempotency-Key was already used with a different request")
	}
	var o T
	if err := json.Unmarshal(rec.Response, &o); err != nil {
		return nil, false, fmt.Errorf("decode stored response: %w", err)
	}
	return &o, true, nil
}

// present fills a fax's response-only fields.
func (s *Service) Present(o *Fax, latest *Attempt) {
	o.Price, o.PriceCents, o.LatestAttempt = core.FormatUSD(o.PriceMicros), core.CentsUp(o.PriceMicros), latest
	o.Options.Resolution = o.Options.resolution()
	o.SentBy = o.SentBy.orUnknown()
}

// Get returns one of the principal's faxes with its latest attempt.
func (s *Service) Get(ctx context.Context, p core.Principal, id string) (*Fax, error) {
	if err := core.Authorize(p, core.OpGetFax); err != nil {
		return nil, err
	}
	return s.Load(ctx, p, id)
}

// getFax reads one of p's faxes with its latest attempt, as GetFax
// presents it, for callers that authorised another operation.
func (s *Service) Load(ctx context.Context, p core.Principal, id string) (*Fax, error) {
	o, err := s.d.Store.GetFax(ctx, p.OwnerID, p.Mode, id)
	if err != nil {
		return nil, core.StoreErr(err, "fax")
	}
	// A fax's attempts count and its attempt rows are written in one
	// transaction (startAttempt), so a fax never attempted has none to
	// read: a status poll of a queued fax is one read, not two.
	var a *Attempt
	if o.Attempts > 0 {
		a, err = s.d.Store.LatestAttempt(ctx, o.ID)
		if err != nil && !errors.Is(err, core.ErrNoRows) {
			return nil, fmt.Errorf("latest attempt: %w", err)
		}
	}
	s.Present(o, a)
	return o, nil
}

// Attempts lists every attempt of one of the principal's faxes.
func (s *Service) Attempts(ctx context.Context, p core.Principal, id string) ([]Attempt, error) {
	if _, err := s.Get(ctx, p, id); err != nil {
		return nil, err
	}
	return s.d.Store.ListAttempts(ctx, id)
}

// Cancel cancels a queued fax and releases its hold. A fax being sent
// is called back where its provider can (FaxCanceler): the provider
// reports the end (canceled, or delivered if it was too late) like any
// other outcome, so the fax answered is still sending.
func (s *Service) Cancel(ctx context.Context, p core.Principal, id string) (*Fax, error) {
	if err := core.Authorize(p, core.OpCancelFax); err != nil {
		return nil, err
	}
	err := s.CancelQueued(ctx, p, id)
	var e *core.Error
	if errors.As(err, &e) && e.Code == CodeFaxNotCancelable {
		if ok, cerr := s.cancelSendingFax(ctx, p, id); ok || cerr != nil {
			if cerr != nil {
				return nil, cerr
			}
			return s.Load(ctx, p, id)
		}
	}
	if err != nil {
		return nil, err
	}
	return s.Load(ctx, p, id)
}

// cancelSendingFax asks the provider to call back a fax it is sending; ok
// is false where that is not possible (the provider cannot, or the fax is
// not sending).
func (s *Service) cancelSendingFax(ctx context.Context, p core.Principal, id string) (bool, error) {
	canceler, ok := s.d.Providers[p.Mode].(Canceler)
	if !ok {
		return false, nil
	}
	o, err := s.d.Store.GetFax(ctx, p.OwnerID, p.Mode, id)
	if err != nil {
		return false, core.StoreErr(err, "fax")
	}
	if o.Status != Sending {
		return false, nil
	}
	a, err := s.d.Store.LatestAttempt(ctx, o.ID)
	if err != nil || a.Status != AttemptSending || a.ProviderRef == "" {
		return false, nil
	}
	if err := canceler.CancelSend(ctx, a.ProviderRef); err != nil {
		return false, core.WrapErr(core.Errorf(core.KindConflict, CodeFaxNotCancelable, "the provider could not call this fax back (it may be finishing); its outcome follows"), err)
	}
	s.d.Logger.InfoContext(ctx, "fax cancel requested at the provider", "fax_id", o.ID, "owner_id", o.OwnerID)
	return true, nil
}

// cancelQueuedFax is the one rule for calling a fax back, for CancelFax
// (fax:send) and CancelTask (fax:draft) alike: only a queued fax can be
// canceled, and what was paid returns to the owner (settle) in the same
// transaction. Otherwise a fax_not_cancelable *Error saying why.
func (s *Service) CancelQueued(ctx context.Context, p core.Principal, id string) error {
	return s.inTx(ctx, func(tx Tx) error {
		o, err := tx.GetFax(ctx, p.OwnerID, p.Mode, id)
		if err != nil {
			return core.StoreErr(err, "fax")
		}
		if o.Status != Queued && o.Status != Scheduled {
			return core.Errorf(core.KindConflict, CodeFaxNotCancelable, "a fax that is %s can no longer be canceled", o.Status)
		}
		now, from := s.now(), o.Status
		o.Status, o.UpdatedAt, o.CompletedAt, o.NextAttemptAt = Canceled, now, &now, nil
		o.FailureCode, o.FailureReason = "canceled", "canceled by the owner"
		if err := s.saveFax(ctx, tx, o, nil, from); err != nil {
			if errors.Is(err, core.ErrConflict) {
				return core.Errorf(core.KindConflict, CodeFaxNotCancelable, "the fax started sending and can no longer be canceled")
			}
			return err
		}
		return s.settle(ctx, tx, o, credits.LedgerRelease)
	})
}

// settle captures or releases what was paid for the fax, in the
// transaction that ends it. A credit fax's hold is captured or released. A
// fax paid at its checkout has no hold: released (canceled, failed), its
// whole price returns to the owner as account credits (a refund entry);
// captured, nothing moves. A machine's fax has no account to return to:
// released, its charge is owed back through its method (settleMachine).
func (s *Service) settle(ctx context.Context, tx Tx, o *Fax, kind credits.LedgerKind) error {
	switch o.PaymentMethod {
	case PayMachine:
		// Released, the whole charge is owed back through its method; a
		// partial fax owes the unsent pages' share (refundUnsentPages), a
		// delivered one nothing.
		if kind != credits.LedgerRelease {
			return nil
		}
		return s.d.PayerRefunds.OwePayer(ctx, tx, o, o.PriceMicros)
	case PayCredits:
		if _, err := tx.SettleHold(ctx, o.ID, kind, s.now()); err != nil {
			return fmt.Errorf("settle hold of %s (%s): %w", o.ID, kind, err)
		}
	case PayCheckout:
		if kind != credits.LedgerRelease || o.PriceMicros <= 0 {
			return nil
		}
		err := tx.AppendLedger(ctx, &credits.LedgerEntry{
			ID: core.NewID(core.PrefixLedger), OwnerID: o.OwnerID, Mode: o.Mode, Kind: credits.LedgerRefund, AmountMicros: o.PriceMicros,
			FaxID: &o.ID, Reason: fmt.Sprintf("refund as credits of fax %s paid at checkout (%s)", o.ID, o.Status), CreatedAt: s.now(),
		})
		if err != nil {
			return fmt.Errorf("refund fax %s paid at checkout: %w", o.ID, err)
		}
	}
	return nil
}

// Store keeps drafts, faxes and their attempts.
type Store interface {
	Tx
	core.Transactor
}

// Tx is a transaction of faxes: a fax, its payment entry and its delivery
// job commit together.
type Tx interface {
	core.Tx
	credits.Tx
	documents.Tx
	events.Queries
	Queries
}

// Config tunes sending; zero values take the defaults.
type Config struct {
	DraftTTL time.Duration // default 24 hours
	// Delivery retries: at most MaxAttempts provider tries, waiting
	// RetryBackoff*4^(n-1) after the nth retryable failure.
	MaxAttempts  int           // default 3
	RetryBackoff time.Duration // default 30 s; 0 is allowed via NoRetryDelay
	NoRetryDelay bool
	// ComposeInMemoryBytes bounds the documents composed in memory
	// (default 4 MiB): most faxes are a few pages, and files cost a
	// delivery more than its composition; a larger document is spooled to
	// private temporary files, so concurrent deliveries of big documents
	// never hold them whole.
	ComposeInMemoryBytes int64
}

// SetDefaults fills zero values with the defaults.
func (c *Config) SetDefaults() {
	c.DraftTTL = cmp.Or(c.DraftTTL, 24*time.Hour)
	c.MaxAttempts = cmp.Or(c.MaxAttempts, 3)
	c.ComposeInMemoryBytes = cmp.Or(c.ComposeInMemoryBytes, 4<<20)
	if c.RetryBackoff == 0 && !c.NoRetryDelay {
		c.RetryBackoff = 30 * time.Second
	}
}

// Deps are the ports fax sending drives.
type Deps struct {
	Store       Store
	Blobs       core.BlobStore
	Destination core.DestinationChecker
	Queue       DeliveryQueue
	// Providers maps each mode to its fax provider. Test mode must be the
	// simulated provider; a mode without one refuses to take money for
	// faxes (provider_not_configured).
	Providers map[core.Mode]Provider
	// PayerRefunds records what a machine-paid fax owes its payer back
	// (core/machine).
	PayerRefunds PayerRefunds
	// Metrics counts attempts and faxes that end; nil counts nothing.
	Metrics DeliveryMetrics
	Prices  *core.PriceTable
	Logger  *slog.Logger
	// Core resolves documents, sender numbers and credits.
	Kernel *core.Kernel
	// Credits reads balances and packs.
	Credits *credits.Service
	// Documents stores and reads the documents it faxes.
	Documents *documents.Service
	// Numbers reads and pays the numbers it acts on.
	Numbers *numbers.Service
	// Composer renders the document as faxed (cover page, header line)
	// and its previews; nil faxes documents as uploaded.
	Composer Composer
	// Receipts signs delivery receipts; nil refuses to issue them.
	Receipts ReceiptSigner
	// Approvals asks the owner to approve a chat app's sends (chatsend.go);
	// nil: a chat app without fax:send is refused (insufficient_scope).
	Approvals *approvals.Service
}

// Service sends faxes.
type Service struct {
	cfg       core.Config
	fc        Config
	d         Deps
	kernel    *core.Kernel
	credits   *credits.Service
	documents *documents.Service
	numbers   *numbers.Service
}

// New returns the service; cfg is the kernel's configuration with its
// defaults applied.
func New(cfg core.Config, fc Config, d Deps) (*Service, error) {
	fc.SetDefaults()
	if d.PayerRefunds == nil {
		return nil, errors.New("faxes: PayerRefunds is required")
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Metrics == nil {
		d.Metrics = NopMetrics{}
	}
	if d.Prices == nil {
		d.Prices = core.DefaultPriceTable()
	}
	return &Service{cfg: cfg, fc: fc, d: d, kernel: d.Kernel, numbers: d.Numbers, documents: d.Documents, credits: d.Credits}, nil
}

func (s *Service) now() time.Time { return core.Clock(s.cfg.Now).Now() }

// inTx runs fn in one transaction of the store, typed as faxes'.
func (s *Service) inTx(ctx context.Context, fn func(tx Tx) error) error {
	return s.d.Store.InTx(ctx, func(tx core.Tx) error { return fn(tx.(Tx)) })
}
