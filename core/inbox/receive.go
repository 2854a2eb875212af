package inbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/numbers"
)

const (
	inboxDownloadSecret = "inbox-download"
	// maxProviderRef bounds a provider's reference of a received fax.
	maxProviderRef = 200
	// maxCallerID bounds the sender a network reports.
	maxCallerID = 64
	// textTimeout bounds reading one received fax's text.
	textTimeout = 3 * time.Minute
)

// ReceiveFax records a fax a provider reports it received on one of the
// numbers it rents here, and enqueues its processing in the same
// transaction. A notice for the same provider reference again returns the
// fax recorded the first time and changes nothing. A fax to a number no
// one here can receive on is a number_not_receiving *Error (not found).
func (s *Service) ReceiveFax(ctx context.Context, n InboundNotice) (*InboundFax, error) {
	if n.ProviderRef == "" || len(n.ProviderRef) > maxProviderRef {
		return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "an inbound fax needs the provider's reference (at most %d characters)", maxProviderRef)
	}
	if existing, err := s.d.Store.GetInboundFaxByRef(ctx, n.Provider, n.ProviderRef); err == nil {
		return existing, nil
	} else if !errors.Is(err, core.ErrNoRows) {
		return nil, err
	}
	num, err := s.receivingNumber(ctx, n.Provider, n.To)
	if err != nil {
		return nil, err
	}
	now := s.now()
	received := n.ReceivedAt.UTC().Truncate(time.Microsecond)
	if received.IsZero() || received.After(now) {
		received = now
	}
	f := &InboundFax{
		ID: core.NewID(core.PrefixInbound), OwnerID: num.OwnerID, Mode: num.Mode, NumberID: num.ID,
		From: cleanCallerID(n.From), To: num.E164, Pages: max(n.Pages, 0), Status: Receiving,
		Provider: n.Provider, ProviderRef: n.ProviderRef, MediaURL: n.MediaURL, DocumentKey: n.DocumentKey,
		ReceivedAt: received, CreatedAt: now, UpdatedAt: now,
	}
	err = s.inTx(ctx, func(tx Tx) error {
		if err := tx.CreateInboundFax(ctx, f); err != nil {
			return err
		}
		return s.d.Queue.EnqueueInbound(ctx, tx, f.ID)
	})
	if errors.Is(err, core.ErrExists) {
		// A concurrent delivery of the same notice won.
		return s.d.Store.GetInboundFaxByRef(ctx, n.Provider, n.ProviderRef)
	}
	if err != nil {
		return nil, fmt.Errorf("record inbound fax: %w", err)
	}
	s.d.Logger.InfoContext(ctx, "fax received", "inbound_id", f.ID, "owner_id", f.OwnerID, "mode", f.Mode, "provider", f.Provider)
	return f, nil
}

// receivingNumber finds the number to that receives on provider's line.
func (s *Service) receivingNumber(ctx context.Context, provider, to string) (*numbers.Number, error) {
	notReceiving := core.Errorf(core.KindNotFound, CodeNumberNotReceiving, "no number here receives faxes on %s", to)
	e164, _, err := s.d.Destination.Check(to)
	if err != nil {
		return nil, notReceiving
	}
	for _, m := range []core.Mode{core.ModeLive, core.ModeTest} {
		if s.faxes.ProviderName(m) != provider {
			continue
		}
		num, err := s.numbers.Holding(ctx, m, e164)
		if errors.Is(err, core.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if num.Status.Receives() && num.Provider == provider {
			return num, nil
		}
	}
	return nil, notReceiving
}

// cleanCallerID keeps what a network reports as the sender printable and
// bounded.
func cleanCallerID(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return -1
		}
		return r
	}, strings.TrimSpace(s))
	return core.CutUTF8(s, maxCallerID)
}

// Process fetches a received fax's document (bounded like an
// upload), checks it and counts its pages, keeps it as a PDF in the blob
// store, reads its text, and marks it received; the process_inbound job
// runs it. Trouble that may pass (the provider's media link, the blob
// store) returns an error so the job is retried; on the last attempt, or
// for a document that cannot be read at all, the fax is marked failed.
func (s *Service) Process(ctx context.Context, id string, lastAttempt bool) error {
	f, err := s.d.Store.GetInboundFaxByID(ctx, id)
	if err != nil {
		return fmt.Errorf("load inbound fax %s: %w", id, err)
	}
	if f.Status != Receiving {
		return nil
	}
	err = s.processInbound(ctx, f, lastAttempt)
	var e *core.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &e) && e.Kind != core.KindUnavailable && e.Kind != core.KindRateLimited:
		return s.failInbound(ctx, f, e.Message)
	case lastAttempt:
		if ferr := s.failInbound(ctx, f, "the document could not be fetched from the provider"); ferr != nil {
			return ferr
		}
		return err
	}
	return err
}

func (s *Service) failInbound(ctx context.Context, f *InboundFax, reason string) error {
	now := s.now()
	f.Status, f.FailureReason, f.UpdatedAt, f.ProcessedAt = Failed, core.CutUTF8(reason, 500), now, &now
	if err := s.d.Store.UpdateInboundFax(ctx, f, Receiving); err != nil && !errors.Is(err, core.ErrConflict) {
		return err
	}
	s.d.Logger.WarnContext(ctx, "received fax could not be read", "inbound_id", f.ID, "owner_id", f.OwnerID, "reason", f.FailureReason)
	return nil
}

func (s *Service) processInbound(ctx context.Context, f *InboundFax, lastAttempt bool) error {
	dir, err := os.MkdirTemp(s.cfg.TempDir, "faxhub-inbound-")
	if err != nil {
		return fmt.Errorf("spool inbound fax: %w", err)
	}
	defer os.RemoveAll(dir)
	src := filepath.Join(dir, "source")
	if err := s.fetchInbound(ctx, f, src); err != nil {
		return err
	}
	kind, err := s.d.Converter.Detect(ctx, src)
	if err != nil {
		return err
	}
	pdf := filepath.Join(dir, "document.pdf")
	pages, err := s.d.Converter.ToPDF(ctx, documents.ConvertRequest{Src: src, Kind: kind, Dst: pdf, OwnerID: f.OwnerID, MaxPages: s.documents.MaxPages()})
	if err != nil {
		return err
	}
	if pages < 1 {
		return core.Errorf(core.KindUnprocessable, documents.CodeCorruptDocument, "the received document has no pages")
	}
	if kind == documents.FilePDF {
		pdf = src
	}
	text := ExtractedText{Status: TextFailed, Method: "none", Note: "no text reader is configured"}
	if s.d.Text != nil {
		tctx, cancel := context.WithTimeout(ctx, textTimeout)
		text, err = s.d.Text.Extract(tctx, pdf, pages)
		cancel()
		if err != nil {
			// No reader was free in time (a burst of faxes): try again
			// later rather than record an unread fax for good, unless
			// this is the last try.
			if !lastAttempt {
				return core.WrapErr(core.Errorf(core.KindUnavailable, core.CodeRateLimited, "no text reader was free; the fax is read on a later try"), err)
			}
			text = ExtractedText{Status: TextFailed, Method: "none", Note: "the text could not be read: the server was too busy"}
			s.d.Logger.WarnContext(ctx, "reading a received fax failed", "inbound_id", f.ID, "error", err)
		}
	}
	if len(text.Text) > MaxText {
		text.Text, text.Status = core.CutUTF8(text.Text, MaxText), TextTruncated
	}
	key := "inbox/" + f.ID + ".pdf"
	size, err := s.documents.PutFile(ctx, key, pdf, string(documents.FilePDF))
	if err != nil {
		return core.WrapErr(core.Errorf(core.KindUnavailable, core.CodeInternal, "storing the received fax failed"), err)
	}
	old := f.DocumentKey
	now := s.now()
	f.Status, f.Pages, f.DocumentKey, f.Bytes, f.MediaURL = Received, pages, key, size, ""
	f.Text, f.TextStatus, f.TextMethod, f.TextNote = text.Text, text.Status, text.Method, core.CutUTF8(text.Note, 500)
	f.UpdatedAt, f.ProcessedAt = now, &now
	if err := s.d.Store.UpdateInboundFax(ctx, f, Receiving); err != nil {
		if errors.Is(err, core.ErrConflict) {
			return nil // processed concurrently
		}
		return err
	}
	if old != "" && old != key {
		if err := s.d.Blobs.Delete(ctx, old); err != nil {
			s.d.Logger.WarnContext(ctx, "removing a received fax's original failed", "inbound_id", f.ID, "error", err)
		}
	}
	s.d.Logger.InfoContext(ctx, "received fax read", "inbound_id", f.ID, "pages", pages, "text_status", f.TextStatus)
	return nil
}

// fetchInbound spools the received document to dst: from the blob store
// when the provider stored it first (the simulator), else from the
// provider's media link.
func (s *Service) fetchInbound(ctx context.Context, f *InboundFax, dst string) error {
	var rc io.ReadCloser
	if f.DocumentKey != "" {
		r, err := s.d.Blobs.Open(ctx, f.DocumentKey)
		if err != nil {
			return core.WrapErr(core.Errorf(core.KindUnavailable, core.CodeInternal, "opening the received document failed"), err)
		}
		rc = r
	} else {
		media, ok := s.d.Providers[f.Mode].(InboundMedia)
		if !ok || f.MediaURL == "" {
			return core.Errorf(core.KindUnprocessable, core.CodeInvalidRequest, "the provider gave no way to fetch this fax's document")
		}
		r, err := media.FetchInbound(ctx, f)
		if err != nil {
			return core.WrapErr(core.Errorf(core.KindUnavailable, numbers.CodeProviderFailed, "fetching the received document from the provider failed"), err)
		}
		rc = r
	}
	defer rc.Close()
	n, _, err := documents.Spool(dst, rc, s.documents.MaxUploadBytes())
	if err != nil {
		var e *core.Error
		if errors.As(err, &e) && e.Kind == core.KindTooLarge {
			return err
		}
		return core.WrapErr(core.Errorf(core.KindUnavailable, numbers.CodeProviderFailed, "reading the received document failed"), err)
	}
	if n == 0 {
		return core.Errorf(core.KindUnprocessable, documents.CodeEmptyFile, "the received document is empty")
	}
	return nil
}

// Query pages through an inbox.
type Query struct {
	NumberID      string
	StartingAfter string
	Limit         int
}

// List lists p's received faxes in its mode, newest first, with a
// preview of each one's text.
func (s *Service) List(ctx context.Context, p core.Principal, q Query) (*core.Page[InboundFax], error) {
	if err := core.Authorize(p, core.OpListInbox); err != nil {
		return nil, err
	}
	limit, err := core.CheckLimit(q.Limit)
	if err != nil {
		return nil, err
	}
	if !core.WellFormedID(q.StartingAfter) || !core.WellFormedID(q.NumberID) {
		return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "startingAfter and numberId must be ids (letters, digits and _, at most %d)", core.MaxIDLen)
	}
	rows, err := s.d.Store.ListInboundFaxes(ctx, Filter{
		OwnerID: p.OwnerID, Mode: p.Mode, NumberID: q.NumberID, StartingAfter: q.StartingAfter, Limit: limit + 1,
	})
	if errors.Is(err, core.ErrNoRows) {
		return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "startingAfter is not one of your received faxes")
	}
	if err != nil {
		return nil, err
	}
	page := &core.Page[InboundFax]{Data: rows}
	if rows == nil {
		page.Data = []InboundFax{} // an empty list, never null
	}
	if len(rows) > limit {
		page.Data, page.HasMore, page.Next = rows[:limit], true, rows[limit-1].ID
	}
	for i := range page.Data {
		page.Data[i].TextPreview, page.Data[i].Text = page.Data[i].Text, ""
	}
	return page, nil
}

// Get reads one of p's received faxes with its whole text.
func (s *Service) Get(ctx context.Context, p core.Principal, id string) (*InboundFax, error) {
	if err := core.Authorize(p, core.OpReadInbox); err != nil {
		return nil, err
	}
	if !core.WellFormedID(id) {
		return nil, core.NotFound("received fax")
	}
	f, err := s.d.Store.GetInboundFax(ctx, p.OwnerID, p.Mode, id)
	return f, core.StoreErr(err, "received fax")
}

// Link is a short-lived link to a received fax's PDF.
type Link struct {
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// Download signs a link to the PDF of one of p's received faxes,
// valid InboxDownloadTTL: the bytes never travel inside JSON.
func (s *Service) Download(ctx context.Context, p core.Principal, id string) (*Link, error) {
	f, err := s.Get(ctx, p, id)
	if err != nil {
		return nil, err
	}
	if f.Status != Received {
		return nil, core.Errorf(core.KindConflict, core.CodeInvalidRequest, "this fax is %s; its document can be downloaded once received", f.Status)
	}
	tok, exp, err := s.kernel.SignLink(ctx, inboxDownloadSecret, "inbox-download", f.ID, DownloadTTL)
	if err != nil {
		return nil, err
	}
	return &Link{URL: s.kernel.URL(core.LinkInboxFile, nil, "token", tok), ExpiresAt: exp}, nil
}

func badInboxLink(why string) error {
	return core.Errorf(core.KindNotFound, CodeDownloadLink, "this download link is %s", why)
}

// OpenDownload opens the PDF a download link names.
func (s *Service) OpenDownload(ctx context.Context, token string) (io.ReadCloser, *InboundFax, error) {
	id, err := s.kernel.OpenLink(ctx, inboxDownloadSecret, "inbox-download", core.PrefixInbound, token, badInboxLink)
	if err != nil {
		return nil, nil, err
	}
	f, err := s.d.Store.GetInboundFaxByID(ctx, id)
	if errors.Is(err, core.ErrNoRows) || (err == nil && f.Status != Received) {
		return nil, nil, badInboxLink("for a fax that is not available")
	}
	if err != nil {
		return nil, nil, err
	}
	rc, err := s.d.Blobs.Open(ctx, f.DocumentKey)
	if err != nil {
		return nil, nil, fmt.Errorf("open received fax %s: %w", f.ID, err)
	}
	return rc, f, nil
}

// Simulate makes the simulator deliver the file at t.Path to one
// of p's test numbers, through the same path a provider's notice takes.
// Test mode only.
func (s *Service) Simulate(ctx context.Context, p core.Principal, t TestInboundFax) (*InboundFax, error) {
	if err := core.Authorize(p, core.OpSimulateInbound); err != nil {
		os.Remove(t.Path)
		return nil, err
	}
	if p.Mode != core.ModeTest {
		os.Remove(t.Path)
		return nil, core.Errorf(core.KindForbidden, CodeTestModeOnly, "only test mode can simulate a received fax; live faxes arrive from the provider")
	}
	// Each one is read (pdftotext, maybe OCR): bounded per owner.
	if err := s.kernel.Allow(ctx, core.LimitSimulateInbound, p.OwnerID); err != nil {
		os.Remove(t.Path)
		return nil, err
	}
	return s.DeliverTestFax(ctx, p.OwnerID, t)
}

// DeliverTestFax is SimulateInboundFax for the admin command: ownerID, when
// set, must own the number. The number must be a test-mode number that
// receives.
func (s *Service) DeliverTestFax(ctx context.Context, ownerID string, t TestInboundFax) (*InboundFax, error) {
	defer os.Remove(t.Path)
	var (
		num *numbers.Number
		err error
	)
	if core.HasPrefix(t.To, core.PrefixNumber) {
		num, err = nil, core.ErrNoRows
		if core.WellFormedID(t.To) {
			num, err = s.numbers.OwnByID(ctx, t.To)
		}
	} else {
		e164, _, cerr := s.d.Destination.Check(t.To)
		if cerr != nil {
			return nil, cerr
		}
		num, err = s.numbers.Holding(ctx, core.ModeTest, e164)
	}
	if errors.Is(err, core.ErrNoRows) || (err == nil && ownerID != "" && num.OwnerID != ownerID) {
		return nil, core.Errorf(core.KindNotFound, core.CodeNotFound, "no such number of yours")
	}
	if err != nil {
		return nil, err
	}
	if num.Mode != core.ModeTest {
		return nil, core.Errorf(core.KindForbidden, CodeTestModeOnly, "%s is a live number; only test numbers receive simulated faxes", num.E164)
	}
	if !num.Status.Receives() {
		return nil, core.Errorf(core.KindConflict, CodeNumberNotReceiving, "%s is %s and does not receive faxes", num.E164, num.Status)
	}
	from := t.From
	if from == "" {
		from = "+12125550100"
	}
	fi, err := os.Stat(t.Path)
	if err != nil {
		return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the file to deliver cannot be read")
	}
	if fi.Size() == 0 {
		return nil, core.Errorf(core.KindInvalid, documents.CodeEmptyFile, "the file to deliver is empty")
	}
	if fi.Size() > s.documents.MaxUploadBytes() {
		return nil, core.Errorf(core.KindTooLarge, documents.CodeFileTooLarge, "the file is larger than %d bytes", s.documents.MaxUploadBytes())
	}
	ref := core.PrefixSimulated + core.RandomString(10)
	key := "inbox/incoming-" + ref
	if _, err := s.documents.PutFile(ctx, key, t.Path, "application/octet-stream"); err != nil {
		return nil, err
	}
	f, err := s.ReceiveFax(ctx, InboundNotice{
		Provider: num.Provider, ProviderRef: ref, To: num.E164, From: from, DocumentKey: key, ReceivedAt: s.now(),
	})
	if err != nil {
		_ = s.d.Blobs.Delete(ctx, key)
		return nil, err
	}
	return f, nil
}
