package faxes

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
)

// What a fax shows of itself besides its status: its pages as they will be
// faxed (previews, before sending), the document as faxed, the
// transmission report and the signed delivery receipt. Files travel by
// signed links, never inside JSON.

// Error codes of previews and the proof of delivery.
const (
	// CodeNotYetFaxed: the document as faxed is composed at the first
	// attempt; a fax not attempted yet has none (preview it instead).
	CodeNotYetFaxed = "fax_not_yet_faxed"
	// CodeFaxNotFinished: a report or a receipt is for a finished fax.
	CodeFaxNotFinished = "fax_not_finished"
	// CodeFileLink: a file link that is malformed, forged or expired.
	CodeFileLink = "file_link_invalid"
	// CodeReceiptsUnavailable: this server signs no receipts.
	CodeReceiptsUnavailable = "receipts_unavailable"
	// CodePageOutOfRange: a page image of a page the document lacks.
	CodePageOutOfRange = "page_out_of_range"
)

// Times of previews and file links.
const (
	// PreviewTTL is how long a preview's pages can be fetched.
	PreviewTTL = time.Hour
	// FileLinkTTL is how long a link to a fax's file works.
	FileLinkTTL = time.Hour
	// PageImageWidth is the width of page images: a fax line (1728 dots)
	// halved, which keeps a 12-point letter readable.
	PageImageWidth = 864
	// reportThumbWidth is the reduced page 1 on a transmission report.
	reportThumbWidth = 300
)

// Link purposes; each has its own secret derivation.
const (
	linkSecret   = "fax-files"
	purposePrev  = "fax-preview"
	purposeFaxed = "fax-faxed"
	purposeRep   = "fax-report"
)

// Files are a PDF and its pages as images, by signed links.
type Files struct {
	URL        string    `json:"url"`
	Pages      int       `json:"pages"`
	PageImages []string  `json:"pageImages"`
	SHA256     string    `json:"sha256"`
	ExpiresAt  time.Time `json:"expiresAt"`
}

// Preview is a fax's pages as they will be faxed, before it is sent.
type Preview struct {
	ID         string     `json:"id" db:"id"`
	OwnerID    string     `json:"-" db:"owner_id"`
	Mode       core.Mode  `json:"mode" db:"mode"`
	DocumentID string     `json:"documentId" db:"document_id"`
	Pages      int        `json:"-" db:"pages"`
	SHA256     string     `json:"-" db:"sha256"`
	Resolution Resolution `json:"resolution" db:"resolution"`
	CreatedAt  time.Time  `json:"createdAt" db:"created_at"`
	ExpiresAt  time.Time  `json:"-" db:"expires_at"`
	// Files and Quote are filled for the response.
	Files Files `json:"files" db:"-"`
	// Quote is the price, when the preview names a destination.
	Quote *core.Quote `json:"quote,omitempty" db:"-"`
}

// PreviewQueries keep previews.
type PreviewQueries interface {
	CreatePreview(ctx context.Context, p *Preview) error
	GetPreview(ctx context.Context, id string) (*Preview, error)
	// ExpiredPreviews lists previews expired before t, at most limit.
	ExpiredPreviews(ctx context.Context, t time.Time, limit int) ([]Preview, error)
	DeletePreview(ctx context.Context, id string) error
}

// previewKey is the blob of a preview's composed PDF.
func previewKey(p *Preview) string {
	return fmt.Sprintf("%s/%s/previews/%s.pdf", p.OwnerID, p.Mode, p.ID)
}

// composition is how o is faxed at at, with the owner's settings st: the
// one place the header text's defaults and a boolean-only cover page are
// decided, for the document as faxed and for previews alike.
func composition(o *Fax, st Settings, at time.Time) Composition {
	cover := o.Options.CoverPage
	if cover == nil && o.Cover {
		// A fax made before cover pages had fields, or by a door that
		// gives only the boolean: the owner's sender defaults and the note.
		cover = &CoverPage{Message: o.CoverText, SenderName: st.Sender.Name, SenderCompany: st.Sender.Company,
			SenderPhone: st.Sender.Phone, SenderFax: st.Sender.Fax}
	}
	return Composition{
		Cover: cover, Header: cmpText(o.Options.Header, cmpText(st.Header, st.Sender.Name)), From: o.From, To: o.To,
		At: at.In(st.Location()), Resolution: o.Options.resolution(),
	}
}

// Preview composes the pages a send request would fax, as they will look
// (cover page, header line at the send time, resolution), and returns
// links to the PDF and to each page as an image, with the price when the
// request names a destination. Nothing is sent or charged.
func (s *Service) Preview(ctx context.Context, p core.Principal, r SendRequest) (*Preview, error) {
	if err := core.Authorize(p, core.OpQuote); err != nil {
		return nil, err
	}
	if s.d.Composer == nil {
		return nil, core.Errorf(core.KindUnavailable, CodeProviderUnavailable, "previews are not available on this server")
	}
	opts, err := s.PrepareOptions(ctx, p, r)
	if err != nil {
		return nil, err
	}
	var (
		q     quoted
		quote *core.Quote
	)
	if r.To != "" {
		if q, err = s.quoteRequest(ctx, p, r, opts.HasCover(), false); err != nil {
			return nil, err
		}
		quote = &q.quote
	} else {
		if q.from, err = s.senderNumber(ctx, p, r.From); err != nil {
			return nil, err
		}
		if q.doc, err = s.ResolveDocument(ctx, p, r.UploadToken, r.DocumentID); err != nil {
			return nil, err
		}
	}
	doc := q.doc
	f := &Fax{OwnerID: p.OwnerID, Mode: p.Mode, To: q.to, From: q.from, DocumentID: doc.ID, Pages: doc.Pages,
		Cover: opts.HasCover(), CoverText: opts.CoverMessage(), Options: opts}
	pv, err := s.previewOf(ctx, p, f, doc)
	if err != nil {
		return nil, err
	}
	pv.Quote = quote
	return pv, nil
}

// previewOf composes f, checked already, as it will be faxed (at its
// sendAt, or now), bounded by the owner's preview limit, and signs links
// to its pages.
func (s *Service) previewOf(ctx context.Context, p core.Principal, f *Fax, doc *documents.Document) (*Preview, error) {
	if err := s.kernel.Allow(ctx, core.LimitPreview, p.OwnerID); err != nil {
		return nil, err
	}
	st, err := s.Settings(ctx, p.OwnerID)
	if err != nil {
		return nil, err
	}
	at := s.now()
	if f.Options.SendAt != nil && f.Options.SendAt.After(at) {
		at = *f.Options.SendAt
	}
	pv := &Preview{ID: core.NewID(core.PrefixPreview), OwnerID: p.OwnerID, Mode: p.Mode, DocumentID: doc.ID,
		Resolution: f.Options.resolution(), CreatedAt: s.now(), ExpiresAt: s.now().Add(PreviewTTL)}
	if pv.SHA256, pv.Pages, err = s.compose(ctx, doc, previewKey(pv), composition(f, st, at), s.d.Blobs.Put); err != nil {
		var bad *unfaxableError
		if errors.As(err, &bad) {
			return nil, core.WrapErr(core.Errorf(core.KindUnprocessable, documents.CodeCorruptDocument, "%s", bad.Error()), err)
		}
		return nil, err
	}
	if err := s.d.Store.CreatePreview(ctx, pv); err != nil {
		return nil, fmt.Errorf("create preview: %w", err)
	}
	if pv.Files, err = s.files(ctx, purposePrev, pv.ID, pv.Pages, pv.SHA256, core.LinkPreviewFile); err != nil {
		return nil, err
	}
	return pv, nil
}

// PreviewPending composes the pages of a fax that waits for its owner's
// decision (a delegated agent's send, a chat app's draft) exactly as it
// will be faxed if approved: its stored, checked options (cover page,
// header line, resolution), at its sendAt or now. The document must be
// the one asked about: a document gone is document_purged, one whose
// SHA-256 is not wantSHA256 (when given) document_changed, so the owner
// never sees other pages than they approve. Each call composes anew, bounded by the owner's preview limit
// (core.LimitPreview, shared with POST /previews): the console shows why
// when it is used up.
func (s *Service) PreviewPending(ctx context.Context, p core.Principal, f *Fax, wantSHA256 string) (*Preview, error) {
	if err := core.Authorize(p, core.OpQuote); err != nil {
		return nil, err
	}
	if s.d.Composer == nil {
		return nil, core.Errorf(core.KindUnavailable, CodeProviderUnavailable, "previews are not available on this server")
	}
	doc, err := s.d.Store.GetDocument(ctx, p.OwnerID, p.Mode, f.DocumentID)
	if errors.Is(err, core.ErrNoRows) {
		return nil, core.Errorf(core.KindGone, CodeDocumentPurged, "the document of this fax is no longer kept, so its pages cannot be shown").With("documentId", f.DocumentID)
	} else if err != nil {
		return nil, fmt.Errorf("read document %s: %w", f.DocumentID, err)
	}
	if wantSHA256 != "" && doc.SHA256 != wantSHA256 {
		return nil, core.Errorf(core.KindConflict, CodeDocumentChanged, "the document changed since this fax was asked for; its pages cannot be shown")
	}
	return s.previewOf(ctx, p, f, doc)
}

// PreviewDraft is PreviewPending of one of p's drafts: its pages as the
// fax it becomes when paid.
func (s *Service) PreviewDraft(ctx context.Context, p core.Principal, id string) (*Preview, error) {
	if err := core.Authorize(p, core.OpGetDraft); err != nil {
		return nil, err
	}
	d, err := s.d.Store.GetDraft(ctx, p.OwnerID, p.Mode, id)
	if err != nil {
		return nil, core.StoreErr(err, "draft")
	}
	return s.PreviewPending(ctx, p, s.faxOfDraft(d, PayCredits), "")
}

// pageLink is the link to one page of each file link's PDF.
var pageLink = map[core.Link]core.Link{core.LinkPreviewFile: core.LinkPreviewFilePage, core.LinkFaxFile: core.LinkFaxFilePage}

// files signs links to a PDF and its pages.
func (s *Service) files(ctx context.Context, purpose, id string, pages int, sum string, link core.Link) (Files, error) {
	tok, exp, err := s.kernel.SignLink(ctx, linkSecret, purpose, id, FileLinkTTL)
	if err != nil {
		return Files{}, err
	}
	f := Files{URL: s.kernel.URL(link, nil, "token", tok), Pages: pages, SHA256: sum, ExpiresAt: exp, PageImages: make([]string, pages)}
	for i := range pages {
		f.PageImages[i] = s.kernel.URL(pageLink[link], nil, "token", tok, "page", fmt.Sprint(i+1))
	}
	return f, nil
}

func badFileLink(why string) error {
	return core.Errorf(core.KindNotFound, CodeFileLink, "this file link is %s", why)
}

// File is an open PDF a file link names.
type File struct {
	io.ReadCloser
	Name string
}

// fileRef is the blob a file link names.
type fileRef struct {
	key, name string
	ownerID   string
	pages     int
	res       Resolution
}

// fileOf resolves a file link of kind link to the blob it names.
func (s *Service) fileOf(ctx context.Context, link core.Link, token string) (fileRef, error) {
	switch link {
	case core.LinkPreviewFile:
		id, err := s.kernel.OpenLink(ctx, linkSecret, purposePrev, core.PrefixPreview, token, badFileLink)
		if err != nil {
			return fileRef{}, err
		}
		pv, err := s.d.Store.GetPreview(ctx, id)
		if errors.Is(err, core.ErrNoRows) || (err == nil && !s.now().Before(pv.ExpiresAt)) {
			return fileRef{}, badFileLink("for a preview that expired")
		} else if err != nil {
			return fileRef{}, fmt.Errorf("read preview %s: %w", id, err)
		}
		return fileRef{key: previewKey(pv), name: "preview-" + pv.ID + ".pdf", ownerID: pv.OwnerID, pages: pv.Pages, res: pv.Resolution}, nil
	case core.LinkFaxFile:
		id, err := s.kernel.OpenLink(ctx, linkSecret, purposeFaxed, core.PrefixFax, token, badFileLink)
		if err != nil {
			return fileRef{}, err
		}
		f, err := s.d.Store.GetFaxByID(ctx, id)
		if errors.Is(err, core.ErrNoRows) || (err == nil && f.FaxedSHA256 == "") {
			return fileRef{}, badFileLink("for a fax that is not available")
		} else if err != nil {
			return fileRef{}, fmt.Errorf("read fax %s: %w", id, err)
		}
		if _, err := s.d.Store.GetDocument(ctx, f.OwnerID, f.Mode, f.DocumentID); err != nil {
			return fileRef{}, badFileLink("for a document no longer retained")
		}
		return fileRef{key: s.faxedKeyOf(ctx, f), name: f.ID + ".pdf", ownerID: f.OwnerID, pages: f.FaxedPages, res: f.Options.resolution()}, nil
	}
	return fileRef{}, fmt.Errorf("no file link %s", link)
}

// OpenFile opens the PDF a preview or fax file link names.
func (s *Service) OpenFile(ctx context.Context, link core.Link, token string) (*File, error) {
	ref, err := s.fileOf(ctx, link, token)
	if err != nil {
		return nil, err
	}
	rc, err := s.d.Blobs.Open(ctx, ref.key)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", ref.name, err)
	}
	return &File{ReadCloser: rc, Name: ref.name}, nil
}

// PageImage renders one page of the PDF a file link names as a fax
// machine prints it at its resolution (PNG, PageImageWidth wide).
func (s *Service) PageImage(ctx context.Context, link core.Link, token string, page int) ([]byte, error) {
	ref, err := s.fileOf(ctx, link, token)
	if err != nil {
		return nil, err
	}
	if page < 1 || page > ref.pages {
		return nil, core.Errorf(core.KindNotFound, CodePageOutOfRange, "the document has %d pages", ref.pages).With("pages", ref.pages)
	}
	if s.d.Composer == nil {
		return nil, core.Errorf(core.KindUnavailable, CodePageImagesUnavailable, "page images are not available on this server; download the PDF instead")
	}
	if err := s.kernel.Allow(ctx, core.LimitPageImage, ref.ownerID); err != nil {
		return nil, err
	}
	return s.rasterize(ctx, ref.key, page, ref.res, PageImageWidth)
}

// rasterize renders page of the blob at key, spooled (the rasterizer
// reads it at random).
func (s *Service) rasterize(ctx context.Context, key string, page int, res Resolution, width int) ([]byte, error) {
	f, n, err := s.spool(ctx, key)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return s.d.Composer.Rasterize(ctx, f, n, page, res, width)
}

// FaxedDocument returns links to one of p's faxes as it was faxed: the
// PDF transmitted (cover page and header line included) and its pages.
func (s *Service) FaxedDocument(ctx context.Context, p core.Principal, id string) (*Files, error) {
	f, err := s.Get(ctx, p, id)
	if err != nil {
		return nil, err
	}
	if f.FaxedSHA256 == "" {
		return nil, core.Errorf(core.KindConflict, CodeNotYetFaxed, "this fax is %s and has not been faxed yet; POST /api/v1/previews shows its pages as they will be faxed", f.Status)
	}
	if err := s.retained(ctx, f); err != nil {
		return nil, err
	}
	files, err := s.files(ctx, purposeFaxed, f.ID, f.FaxedPages, f.FaxedSHA256, core.LinkFaxFile)
	return &files, err
}

// retained refuses a fax whose document is past its retention.
func (s *Service) retained(ctx context.Context, f *Fax) error {
	if _, err := s.d.Store.GetDocument(ctx, f.OwnerID, f.Mode, f.DocumentID); errors.Is(err, core.ErrNoRows) {
		return core.Errorf(core.KindGone, CodeDocumentPurged, "the document of %s is past its retention and was deleted", f.ID)
	} else if err != nil {
		return fmt.Errorf("read document of %s: %w", f.ID, err)
	}
	return nil
}

// ReportLink is a signed link to a fax's transmission report.
type ReportLink struct {
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// Report returns a link to the transmission report of one of p's finished
// faxes.
func (s *Service) Report(ctx context.Context, p core.Principal, id string) (*ReportLink, error) {
	f, err := s.Get(ctx, p, id)
	if err != nil {
		return nil, err
	}
	if !f.Status.Terminal() {
		return nil, core.Errorf(core.KindConflict, CodeFaxNotFinished, "this fax is %s; its report is made when it finishes", f.Status)
	}
	tok, exp, err := s.kernel.SignLink(ctx, linkSecret, purposeRep, f.ID, FileLinkTTL)
	if err != nil {
		return nil, err
	}
	return &ReportLink{URL: s.kernel.URL(core.LinkFaxReport, nil, "token", tok), ExpiresAt: exp}, nil
}

// RenderReport writes the transmission report a report link names.
func (s *Service) RenderReport(ctx context.Context, token string, w io.Writer) error {
	id, err := s.kernel.OpenLink(ctx, linkSecret, purposeRep, core.PrefixFax, token, badFileLink)
	if err != nil {
		return err
	}
	f, err := s.d.Store.GetFaxByID(ctx, id)
	if errors.Is(err, core.ErrNoRows) {
		return badFileLink("for a fax that no longer exists")
	} else if err != nil {
		return fmt.Errorf("read fax %s: %w", id, err)
	}
	if s.d.Composer == nil {
		return core.Errorf(core.KindUnavailable, CodeProviderUnavailable, "reports are not available on this server")
	}
	if err := s.kernel.Allow(ctx, core.LimitPageImage, f.OwnerID); err != nil {
		return err
	}
	st, err := s.Settings(ctx, f.OwnerID)
	if err != nil {
		return err
	}
	attempts, err := s.d.Store.ListAttempts(ctx, f.ID)
	if err != nil {
		return fmt.Errorf("list attempts of %s: %w", f.ID, err)
	}
	loc := st.Location()
	r := TransmissionReport{
		FaxID: f.ID, To: f.To, From: f.From, Pages: max(f.FaxedPages, f.Pages), Attempts: f.Attempts,
		Result: string(f.Status), Reason: f.FailureReason, Resolution: f.Options.resolution(),
		DocumentSHA256: f.FaxedSHA256, Started: f.CreatedAt.In(loc), Finished: f.UpdatedAt.In(loc),
	}
	if f.CompletedAt != nil {
		r.Finished = f.CompletedAt.In(loc)
	}
	if n := len(attempts); n > 0 {
		last := attempts[n-1]
		r.PagesSent, r.Duration, r.Started = last.PagesSent, time.Duration(last.DurationMS)*time.Millisecond, last.StartedAt.In(loc)
	}
	if f.FaxedSHA256 != "" && s.retained(ctx, f) == nil {
		// The reduced page 1 is a courtesy: a report without it is still
		// the report.
		if img, err := s.rasterize(ctx, s.faxedKeyOf(ctx, f), 1, ResolutionStandard, reportThumbWidth); err == nil {
			r.FirstPage = img
		} else if ctx.Err() == nil {
			s.d.Logger.WarnContext(ctx, "report: page 1 image", "fax_id", f.ID, "err", err)
		}
	}
	var buf bytes.Buffer
	if err := s.d.Composer.Report(ctx, &buf, r); err != nil {
		return fmt.Errorf("render report of %s: %w", f.ID, err)
	}
	_, err = buf.WriteTo(w)
	return err
}

// SignedReceipt is a delivery receipt and where its key is published.
type SignedReceipt struct {
	Receipt string `json:"receipt"`
	JWKSURI string `json:"jwksUri"`
}

// Receipt signs a delivery receipt of one of p's finished faxes: a JWS
// anyone can verify offline with faxhub's JWKS (docs/receipts.md).
func (s *Service) Receipt(ctx context.Context, p core.Principal, id string) (*SignedReceipt, error) {
	f, err := s.Get(ctx, p, id)
	if err != nil {
		return nil, err
	}
	if !f.Status.Terminal() {
		return nil, core.Errorf(core.KindConflict, CodeFaxNotFinished, "this fax is %s; its receipt is signed when it finishes", f.Status)
	}
	if s.d.Receipts == nil {
		return nil, core.Errorf(core.KindUnavailable, CodeReceiptsUnavailable, "this server signs no delivery receipts")
	}
	if f.FaxedSHA256 == "" && f.Attempts > 0 {
		// Faxed before faxhub kept the document as faxed: there is no hash
		// to attest.
		return nil, core.Errorf(core.KindConflict, CodeNotYetFaxed, "this fax was sent before faxhub kept the document as faxed; it has no receipt")
	}
	jti := make([]byte, 16)
	_, _ = rand.Read(jti)
	r := Receipt{
		Subject: f.ID, IssuedAt: s.now().Unix(), ID: hex.EncodeToString(jti), To: f.To, From: f.From,
		Pages: max(f.FaxedPages, f.Pages), DocumentSHA256: f.FaxedSHA256, Outcome: string(f.Status), Reason: f.FailureReason,
		Resolution: string(f.Options.resolution()), QueuedAt: f.CreatedAt.Unix(), Attempts: f.Attempts, Mode: string(f.Mode),
		Provider: s.ProviderName(f.Mode),
	}
	if f.CompletedAt != nil {
		r.CompletedAt = f.CompletedAt.Unix()
	}
	if a := f.LatestAttempt; a != nil {
		r.PagesSent, r.Provider, r.ProviderRef = a.PagesSent, a.Provider, a.ProviderRef
	}
	jws, err := s.d.Receipts.SignReceipt(ctx, r)
	if err != nil {
		return nil, fmt.Errorf("sign receipt of %s: %w", f.ID, err)
	}
	return &SignedReceipt{Receipt: jws, JWKSURI: s.d.Receipts.JWKSURL()}, nil
}

// GetSettings returns the account's fax defaults.
func (s *Service) GetSettings(ctx context.Context, p core.Principal) (Settings, error) {
	if err := core.Authorize(p, core.OpManageFaxSettings); err != nil {
		return Settings{}, err
	}
	return s.Settings(ctx, p.OwnerID)
}

// PutSettings replaces the account's fax defaults.
func (s *Service) PutSettings(ctx context.Context, p core.Principal, st Settings) (Settings, error) {
	if err := core.Authorize(p, core.OpManageFaxSettings); err != nil {
		return Settings{}, err
	}
	if err := s.CheckSettings(st); err != nil {
		return Settings{}, err
	}
	if p.Kind != core.PrincipalOwnerSession && !st.ApproveChatSends {
		// Only the owner, signed in to the console, turns off "approve
		// every send from chat apps": an app must not lift its own check.
		cur, err := s.Settings(ctx, p.OwnerID)
		if err != nil {
			return Settings{}, err
		}
		st.ApproveChatSends = cur.ApproveChatSends
	}
	if err := s.d.Store.PutFaxSettings(ctx, p.OwnerID, st, s.now()); err != nil {
		return Settings{}, err
	}
	return st, nil
}

// PurgePreviews deletes expired previews and their PDFs (the garbage
// collector's "previews").
func (s *Service) PurgePreviews(ctx context.Context) (int64, error) {
	ps, err := s.d.Store.ExpiredPreviews(ctx, s.now(), 500)
	if err != nil {
		return 0, err
	}
	var n int64
	for i := range ps {
		if err := s.d.Store.DeletePreview(ctx, ps[i].ID); err != nil {
			return n, err
		}
		if err := s.d.Blobs.Delete(ctx, previewKey(&ps[i])); err != nil {
			s.d.Logger.WarnContext(ctx, "purge: preview blob left behind", "preview_id", ps[i].ID, "err", err)
		}
		n++
	}
	return n, nil
}
