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
	// textTimeout bounds reading one received fax's text (the reader
	// bounds itself too: convert.TextOptions.Timeout, 2 minutes).
	textTimeout = 3 * time.Minute
	// writeTimeout bounds the writes that record a step. Each step ends
	// this long before its job's deadline, and the writes run on a context
	// of their own, so the work of a step that used all its time is kept.
	writeTimeout = 10 * time.Second
	// minTextTime: after storing a document, its text is read in the same
	// run only if at least this much of the run is left; otherwise the job
	// runs again at once (ContinueError) and reads it with a whole run's
	// time.
	minTextTime = 60 * time.Second
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

// Process reads a received fax in two steps, each of which a later run
// resumes after rather than redoes; the process_inbound job runs it.
//
//  1. Store: fetch the document (bounded like an upload), check it and
//     count its pages with the converter (TIFF and images become a PDF),
//     keep the PDF in the blob store and record it (pages, size, key).
//  2. Read: extract its text with what is left of the job's time, and mark
//     the fax received with the text read so far; textStatus and textNote
//     say what was not read.
//
// A run whose deadline leaves too little time to read after storing
// returns a *ContinueError: the job runs again at once, with a time of its
// own for the text. Trouble that may pass (the provider's media link, the
// blob store, a busy reader) returns an error so the job is retried; on
// the last attempt, or for a document that cannot be read at all, the fax
// is marked failed. Writes after a step run on a context detached from the
// job's, so a step that used up the job's time does not lose its work.
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
	var later *ContinueError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &later):
		return err
	case errors.As(err, &e) && e.Kind != core.KindUnavailable && e.Kind != core.KindRateLimited:
		return s.failInbound(ctx, f, e.Message)
	case lastAttempt:
		reason := "the document could not be fetched from the provider"
		if f.DocumentKey == storedKey(f.ID) {
			reason = "the stored document could not be read back"
		}
		if ferr := s.failInbound(ctx, f, reason); ferr != nil {
			return ferr
		}
		return err
	}
	return err
}

// ContinueError is Process's answer when a fax's document is stored but too
// little of the job's time is left to read its text: the job should run
// again at once (not as a failed attempt), and that run starts at the
// text.
type ContinueError struct {
	ID string
}

func (e *ContinueError) Error() string {
	return "received fax " + e.ID + " is stored; its text is read on the next run"
}

// storedKey is where a received fax's PDF is kept once stored: the row's
// document key equal to it is what says the store step is done.
func storedKey(id string) string { return "inbox/" + id + ".pdf" }

// writeReserve is how long before a job's deadline its steps end, so that
// their records are written before River cancels the job: writeTimeout,
// or a quarter of the time left when a job is shorter than that allows.
func writeReserve(deadline time.Time) time.Duration {
	return max(min(writeTimeout, time.Until(deadline)/4), 0)
}

// writeContext is for the writes that record a step: detached from the
// job's context (whose deadline the step may have used up) and bounded on
// its own.
func writeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
}

func (s *Service) failInbound(ctx context.Context, f *InboundFax, reason string) error {
	wctx, cancel := writeContext(ctx)
	defer cancel()
	now := s.now()
	f.Status, f.FailureReason, f.UpdatedAt, f.ProcessedAt = Failed, core.CutUTF8(reason, 500), now, &now
	if err := s.finishInbound(wctx, f); err != nil && !errors.Is(err, core.ErrConflict) {
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
	// Each step ends writeTimeout before the job does, so its record is
	// written (on its own context) before River cancels or rescues the job.
	job := ctx
	if deadline, bounded := job.Deadline(); bounded {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-writeReserve(deadline)))
		defer cancel()
	}
	var pdf string
	if f.DocumentKey != storedKey(f.ID) {
		if pdf, err = s.storeInbound(ctx, f, dir); err != nil {
			return err
		}
		if deadline, bounded := job.Deadline(); bounded && time.Until(deadline)-writeReserve(deadline) < minTextTime {
			return &ContinueError{ID: f.ID}
		}
	}
	if pdf == "" {
		// Stored by an earlier run: read it back, do not convert it again.
		pdf = filepath.Join(dir, "stored.pdf")
		if err := s.fetchStored(ctx, f, pdf); err != nil {
			return err
		}
	}
	text, err := s.readText(ctx, f, pdf, lastAttempt)
	if err != nil {
		return err
	}
	wctx, cancel := writeContext(ctx)
	defer cancel()
	now := s.now()
	f.Status, f.Text, f.TextStatus, f.TextMethod, f.TextNote = Received, text.Text, text.Status, text.Method, core.CutUTF8(text.Note, 500)
	f.UpdatedAt, f.ProcessedAt = now, &now
	if err := s.finishInbound(wctx, f); err != nil {
		if errors.Is(err, core.ErrConflict) {
			return nil // processed concurrently
		}
		return fmt.Errorf("record received fax %s: %w", f.ID, err)
	}
	s.d.Logger.InfoContext(ctx, "received fax read", "inbound_id", f.ID, "pages", f.Pages, "text_status", f.TextStatus)
	return nil
}

// storeInbound is the store step: it fetches f's document into dir,
// converts and counts it, keeps the PDF in the blob store and records
// pages, size and key on f's row (still receiving). It returns a local
// copy of the PDF, or "" when there is none and the PDF must be read back
// from the blob store.
func (s *Service) storeInbound(ctx context.Context, f *InboundFax, dir string) (string, error) {
	src := filepath.Join(dir, "source")
	if err := s.fetchInbound(ctx, f, src); err != nil {
		return "", err
	}
	kind, err := s.d.Converter.Detect(ctx, src)
	if err != nil {
		return "", err
	}
	pdf := filepath.Join(dir, "document.pdf")
	pages, err := s.d.Converter.ToPDF(ctx, documents.ConvertRequest{Src: src, Kind: kind, Dst: pdf, OwnerID: f.OwnerID, MaxPages: s.documents.MaxPages()})
	if err != nil {
		return "", err
	}
	if pages < 1 {
		return "", core.Errorf(core.KindUnprocessable, documents.CodeCorruptDocument, "the received document has no pages")
	}
	if kind == documents.FilePDF {
		pdf = src
	}
	// PutFile consumes the file (a move into a file blob store); a second
	// name keeps it for reading its text in this run. Without one the text
	// is read back from the blob store.
	keep := filepath.Join(dir, "read.pdf")
	if err := os.Link(pdf, keep); err != nil {
		keep = ""
	}
	wctx, cancel := writeContext(ctx)
	defer cancel()
	key := storedKey(f.ID)
	size, err := s.documents.PutFile(wctx, key, pdf, string(documents.FilePDF))
	if err != nil {
		return "", core.WrapErr(core.Errorf(core.KindUnavailable, core.CodeInternal, "storing the received fax failed"), err)
	}
	old := f.DocumentKey
	f.Pages, f.DocumentKey, f.Bytes, f.MediaURL, f.UpdatedAt = pages, key, size, "", s.now()
	if err := s.d.Store.UpdateInboundFax(wctx, f, Receiving); err != nil {
		// Processed concurrently (ErrConflict) or not recorded: either way
		// this run stops; a retry finds the row as it is.
		return "", core.WrapErr(core.Errorf(core.KindUnavailable, core.CodeInternal, "recording the stored fax failed"), err)
	}
	if old != "" && old != key {
		if err := s.d.Blobs.Delete(wctx, old); err != nil {
			s.d.Logger.WarnContext(ctx, "removing a received fax's original failed", "inbound_id", f.ID, "error", err)
		}
	}
	s.d.Logger.InfoContext(ctx, "received fax stored", "inbound_id", f.ID, "pages", pages, "bytes", size)
	return keep, nil
}

// readText is the read step: the text of the stored PDF with what is left
// of ctx (at most textTimeout). A reader that gives up part way keeps what
// it read and says what not (TextFailed, TextTruncated); one that found no
// free slot is an error to retry, except on the last attempt.
func (s *Service) readText(ctx context.Context, f *InboundFax, pdf string, lastAttempt bool) (ExtractedText, error) {
	if s.d.Text == nil {
		return ExtractedText{Status: TextFailed, Method: "none", Note: "no text reader is configured"}, nil
	}
	tctx, cancel := context.WithTimeout(ctx, textTimeout)
	text, err := s.d.Text.Extract(tctx, pdf, f.Pages)
	cancel()
	if err != nil {
		// No reader was free in time (a burst of faxes) or the process is
		// stopping: try again later rather than record an unread fax for
		// good, unless this is the last try.
		if !lastAttempt {
			return text, core.WrapErr(core.Errorf(core.KindUnavailable, core.CodeRateLimited, "no text reader was free; the fax is read on a later try"), err)
		}
		s.d.Logger.WarnContext(ctx, "reading a received fax failed", "inbound_id", f.ID, "error", err)
		text = ExtractedText{Status: TextFailed, Method: "none", Note: "the text could not be read: the server was too busy"}
	}
	if len(text.Text) > MaxText {
		text.Text, text.Status = core.CutUTF8(text.Text, MaxText), TextTruncated
	}
	return text, nil
}

// fetchStored spools the PDF an earlier run stored for f to dst.
func (s *Service) fetchStored(ctx context.Context, f *InboundFax, dst string) error {
	r, err := s.d.Blobs.Open(ctx, f.DocumentKey)
	if err != nil {
		return core.WrapErr(core.Errorf(core.KindUnavailable, core.CodeInternal, "opening the stored fax failed"), err)
	}
	defer r.Close()
	// Its size was recorded when it was stored.
	if _, _, err := documents.Spool(dst, r, max(f.Bytes, 1)); err != nil {
		return core.WrapErr(core.Errorf(core.KindUnavailable, core.CodeInternal, "reading the stored fax failed"), err)
	}
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

// Get reads one of p's received faxes with its whole text. The first read
// of a received fax (by the owner or any agent, through any door) is
// recorded: readAt, and inbound_fax.read.
func (s *Service) Get(ctx context.Context, p core.Principal, id string) (*InboundFax, error) {
	if err := core.Authorize(p, core.OpReadInbox); err != nil {
		return nil, err
	}
	if !core.WellFormedID(id) {
		return nil, core.NotFound("received fax")
	}
	f, err := s.d.Store.GetInboundFax(ctx, p.OwnerID, p.Mode, id)
	if err != nil {
		return nil, core.StoreErr(err, "received fax")
	}
	if err := s.markRead(ctx, p, f); err != nil {
		return nil, err
	}
	return f, nil
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
