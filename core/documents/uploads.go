// Package documents is what owners fax: upload capabilities (HMAC tokens,
// single use, leased while a PUT streams), the conversion of an upload into
// a fax-ready PDF with its pages counted, the documents themselves in the
// blob store, and the bounds on them (size, pages, upload rate, the
// storage quota of unsent documents).
package documents

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/faxhub/faxhub/core"
)

// Capability is the response of createUpload: exactly the fields of
// the interface contract.
type Capability struct {
	UploadToken string    `json:"uploadToken"`
	UploadURL   string    `json:"uploadUrl"`
	Method      string    `json:"method"`
	Key         string    `json:"key"`
	ContentType string    `json:"contentType,omitempty"`
	MaxBytes    int64     `json:"maxBytes"`
	ExpiresAt   time.Time `json:"expiresAt"`
}

// supportedUploadTypes are the content types a capability may be limited to.
var supportedUploadTypes = map[FileKind]bool{
	FilePDF: true, FilePNG: true, FileJPEG: true, FileTIFF: true, FileGIF: true,
	FileDOC: true, FileDOCX: true, FileXLS: true, FileXLSX: true, FileODT: true, FileODS: true, FileRTF: true,
}

// SupportedUploadTypes lists accepted media types, for documentation.
func SupportedUploadTypes() []FileKind {
	out := make([]FileKind, 0, len(supportedUploadTypes))
	for k := range supportedUploadTypes {
		out = append(out, k)
	}
	slices.Sort(out) // stable fax for docs and error details
	return out
}

// CreateUpload issues a short-lived, single-use upload capability. maxBytes
// 0 means the server maximum; larger is refused. contentType, if given,
// limits what the PUT may carry.
func (s *Service) CreateUpload(ctx context.Context, p core.Principal, contentType string, maxBytes int64) (*Capability, error) {
	if err := core.Authorize(p, core.OpCreateUpload); err != nil {
		return nil, err
	}
	if contentType != "" {
		mt, _, err := mime.ParseMediaType(contentType)
		if err != nil || !supportedUploadTypes[FileKind(mt)] {
			return nil, core.Errorf(core.KindUnsupportedMedia, CodeUnsupportedType, "contentType %q is not a supported document type", contentType).
				With("supported", SupportedUploadTypes())
		}
		contentType = mt
	}
	switch {
	case maxBytes < 0:
		return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "maxBytes must be positive")
	case maxBytes == 0:
		maxBytes = s.dc.MaxUploadBytes
	case maxBytes > s.dc.MaxUploadBytes:
		return nil, core.Errorf(core.KindTooLarge, CodeFileTooLarge, "maxBytes may be at most %d", s.dc.MaxUploadBytes).With("limit", s.dc.MaxUploadBytes)
	}
	if err := s.allowUpload(ctx, p); err != nil {
		return nil, err
	}
	// Refuse early when the quota is used up already; the PUT checks again
	// with the file's size.
	if err := s.checkQuota(ctx, p.OwnerID, p.Mode, 1); err != nil {
		return nil, err
	}
	now := s.now()
	u := &Upload{
		ID: core.NewID(core.PrefixUpload), OwnerID: p.OwnerID, Mode: p.Mode, ContentType: contentType,
		MaxBytes: maxBytes, CreatedAt: now, ExpiresAt: now.Add(s.dc.UploadTTL).Truncate(time.Second),
	}
	if err := s.d.Store.CreateUpload(ctx, u); err != nil {
		return nil, fmt.Errorf("create upload: %w", err)
	}
	token := signUploadToken(s.dc.UploadSecret, UploadClaims{
		UploadID: u.ID, OwnerID: u.OwnerID, Mode: u.Mode, ContentType: contentType,
		MaxBytes: maxBytes, ExpiresAt: u.ExpiresAt.Unix(),
	})
	return &Capability{
		UploadToken: token, UploadURL: s.kernel.URL(core.LinkUpload, nil, "token", token), Method: "PUT",
		Key: u.ID, ContentType: contentType, MaxBytes: maxBytes, ExpiresAt: u.ExpiresAt,
	}, nil
}

// ReceiveUpload is the PUT of an upload capability: no other credential is
// needed. It spools body to disk (never whole in memory), detects the type by
// content, converts it to PDF, counts pages and stores a Document. A failed
// PUT leaves the token usable until it expires; a successful one uses it up.
//
// The PUT holds the upload by a lease (Config.Storage.UploadLease), renewed
// while it runs: a second PUT meanwhile gets 409 upload_token_used, and if
// the process dies the token is usable again once the lease lapses. A PUT
// that loses its lease (its renewals failed for a whole lease and another
// PUT took over) stops and stores nothing.
func (s *Service) ReceiveUpload(ctx context.Context, token string, body io.Reader) (*Document, error) {
	c, err := verifyUploadToken(s.dc.UploadSecret, token)
	if err != nil {
		return nil, err
	}
	now := s.now()
	if c.expired(now) {
		return nil, core.Errorf(core.KindGone, CodeUploadExpired, "the upload token expired at %s; create a new upload", time.Unix(c.ExpiresAt, 0).UTC().Format(time.RFC3339))
	}
	claimID, err := newLeaseID()
	if err != nil {
		return nil, err
	}
	lease := s.st.UploadLease
	if err := s.d.Store.ClaimUpload(ctx, c.UploadID, claimID, now, now.Add(lease)); err != nil {
		if errors.Is(err, core.ErrConflict) {
			return nil, uploadInUse()
		}
		return nil, core.StoreErr(err, "upload")
	}
	putCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := keepLease(putCtx, lease/3, func(ctx context.Context) error {
		err := s.d.Store.RenewUpload(ctx, c.UploadID, claimID, s.now().Add(lease))
		if errors.Is(err, core.ErrConflict) || errors.Is(err, core.ErrNoRows) {
			cancel(errLeaseLost)
			return err
		}
		if err != nil {
			// Try again at the next beat; the lease outlives two misses.
			s.d.Logger.WarnContext(ctx, "renew upload lease", "upload_id", c.UploadID, "err", err)
		}
		return nil
	})
	doc, err := s.storeUpload(putCtx, c, claimID, ctxReader{putCtx, body})
	stop()
	if err != nil {
		if errors.Is(context.Cause(putCtx), errLeaseLost) || errors.Is(err, errLeaseLost) {
			return nil, uploadInUse()
		}
		// Give the token back so the client can retry the PUT; use a fresh
		// context so a cancelled request still releases it.
		if rerr := s.d.Store.ReleaseUpload(context.WithoutCancel(ctx), c.UploadID, claimID); rerr != nil && !errors.Is(rerr, core.ErrConflict) {
			s.d.Logger.ErrorContext(ctx, "release upload", "upload_id", c.UploadID, "err", rerr)
		}
		return nil, err
	}
	return doc, nil
}

func uploadInUse() error {
	return core.Errorf(core.KindConflict, CodeUploadUsed, "this upload token has already been used (or an upload with it is in progress)")
}

func (s *Service) storeUpload(ctx context.Context, c UploadClaims, claimID string, body io.Reader) (*Document, error) {
	dir, err := os.MkdirTemp(s.cfg.TempDir, "faxhub-upload-")
	if err != nil {
		return nil, fmt.Errorf("spool upload: %w", err)
	}
	defer os.RemoveAll(dir)

	src := filepath.Join(dir, "source")
	n, sum, err := Spool(src, body, c.MaxBytes)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, core.Errorf(core.KindInvalid, CodeEmptyFile, "the upload body is empty")
	}
	kind, err := s.d.Converter.Detect(ctx, src)
	if err != nil {
		return nil, err
	}
	if c.ContentType != "" && FileKind(c.ContentType) != kind {
		return nil, core.Errorf(core.KindUnsupportedMedia, CodeContentTypeMismatch, "this upload was created for %s but the file is %s", c.ContentType, kind).
			With("detected", string(kind))
	}
	pdf := filepath.Join(dir, "document.pdf")
	pages, err := s.d.Converter.ToPDF(ctx, ConvertRequest{Src: src, Kind: kind, Dst: pdf, OwnerID: c.OwnerID, MaxPages: s.dc.MaxPages})
	if err != nil {
		return nil, err
	}
	if pages > s.dc.MaxPages {
		return nil, core.Errorf(core.KindUnprocessable, CodeTooManyPages, "the document has %d pages; the limit is %d", pages, s.dc.MaxPages).
			With("pages", pages).With("limit", s.dc.MaxPages)
	}
	if pages < 1 {
		return nil, core.Errorf(core.KindUnprocessable, CodeCorruptDocument, "the document has no pages")
	}

	stored := n
	if kind != FilePDF {
		fi, err := os.Stat(pdf)
		if err != nil {
			return nil, fmt.Errorf("converted document: %w", err)
		}
		stored += fi.Size()
	}
	if err := s.checkQuota(ctx, c.OwnerID, c.Mode, stored); err != nil {
		return nil, err
	}

	doc := &Document{
		ID: core.NewID(core.PrefixDocument), OwnerID: c.OwnerID, Mode: c.Mode, SourceType: string(kind),
		SourceBytes: n, Pages: pages, SHA256: sum, CreatedAt: s.now(),
	}
	base := fmt.Sprintf("%s/%s/%s/", c.OwnerID, c.Mode, doc.ID)
	doc.SourceKey, doc.PDFKey = base+"source", base+"document.pdf"
	if _, err := s.PutFile(ctx, doc.SourceKey, src, string(kind)); err != nil {
		return nil, err
	}
	if kind == FilePDF {
		// The validated original is the fax document; don't store it twice.
		doc.PDFKey, doc.PDFBytes = doc.SourceKey, n
	} else {
		if doc.PDFBytes, err = s.PutFile(ctx, doc.PDFKey, pdf, string(FilePDF)); err != nil {
			return nil, err
		}
	}
	err = s.inTx(ctx, func(tx Tx) error {
		if err := tx.CreateDocument(ctx, doc); err != nil {
			return fmt.Errorf("create document: %w", err)
		}
		if err := tx.CompleteUpload(ctx, c.UploadID, claimID, doc.ID); err != nil {
			if errors.Is(err, core.ErrConflict) {
				// Another PUT holds the upload now: this one lost its lease.
				return errLeaseLost
			}
			return err
		}
		return nil
	})
	if err != nil {
		if derr := s.DeleteBlobs(context.WithoutCancel(ctx), doc); derr != nil {
			s.d.Logger.WarnContext(ctx, "delete blobs of an upload that was not stored", "err", derr)
		}
		return nil, err
	}
	return doc, nil
}

// spool copies at most max bytes of r to path and hashes them; a longer body
// is refused without reading it all.
func Spool(path string, r io.Reader, max int64) (int64, string, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, "", fmt.Errorf("spool upload: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(r, max+1))
	if core.ErrorKind(err) == core.KindTimeout {
		// The body missed its read deadline (the HTTP edge's): the
		// client's 408, as it says.
		return 0, "", err
	}
	if err != nil {
		return 0, "", core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "reading the upload body failed: %v", err)
	}
	if n > max {
		return 0, "", core.Errorf(core.KindTooLarge, CodeFileTooLarge, "the file is larger than this upload allows (%d bytes)", max).With("limit", max)
	}
	if err := f.Close(); err != nil {
		return 0, "", fmt.Errorf("spool upload: %w", err)
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// putFile stores a spooled file under key, by move where the blob store
// can, and reports its size. The file is consumed.
func (s *Service) PutFile(ctx context.Context, key, path, contentType string) (int64, error) {
	if fb, ok := s.d.Blobs.(core.FileBlobStore); ok {
		n, err := fb.PutFile(ctx, key, path, contentType)
		if err != nil {
			return 0, fmt.Errorf("store blob %s: %w", key, err)
		}
		return n, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", filepath.Base(path), err)
	}
	defer f.Close()
	return s.Put(ctx, key, f, contentType)
}

// Put stores what r holds under key and reports its size: for a document
// already in memory (a machine fax's PDF), which a spooled file would only
// cost a directory and a file more.
func (s *Service) Put(ctx context.Context, key string, r io.Reader, contentType string) (int64, error) {
	n, err := s.d.Blobs.Put(ctx, key, r, contentType)
	if err != nil {
		return 0, fmt.Errorf("store blob %s: %w", key, err)
	}
	return n, nil
}

// FromToken resolves an upload token to its completed document, for
// sending by uploadToken. The token's PUT window does not limit this.
func (s *Service) FromToken(ctx context.Context, p core.Principal, token string) (*Document, error) {
	return s.fromToken(ctx, p, token, s.d.Store.GetUploadDocument)
}

// FromTokenToUse is FromToken for a caller whose transaction goes on to
// use the document (UseDocument): it may answer from memory, and so answer
// a document purged since, which that UseDocument refuses
// (Store.UploadDocumentToUse).
func (s *Service) FromTokenToUse(ctx context.Context, p core.Principal, token string) (*Document, error) {
	return s.fromToken(ctx, p, token, s.d.Store.UploadDocumentToUse)
}

func (s *Service) fromToken(ctx context.Context, p core.Principal, token string,
	get func(ctx context.Context, uploadID, ownerID string, mode core.Mode) (*Document, error)) (*Document, error) {
	c, err := verifyUploadToken(s.dc.UploadSecret, token)
	if err != nil {
		return nil, err
	}
	if c.OwnerID != p.OwnerID || c.Mode != p.Mode {
		return nil, core.NotFound("upload")
	}
	// One read on the way every send takes; only a refusal reads the upload
	// to say why.
	d, err := get(ctx, c.UploadID, p.OwnerID, p.Mode)
	if !errors.Is(err, core.ErrNoRows) {
		return d, core.StoreErr(err, "document")
	}
	u, err := s.d.Store.GetUpload(ctx, c.UploadID)
	if err != nil {
		return nil, core.StoreErr(err, "upload")
	}
	if u.DocumentID == nil {
		return nil, core.Errorf(core.KindConflict, CodeUploadPending, "nothing has been uploaded with this token yet; PUT the file to uploadUrl first")
	}
	return nil, core.NotFound("document")
}

// Get returns one of the principal's documents.
func (s *Service) Get(ctx context.Context, p core.Principal, id string) (*Document, error) {
	if err := core.Authorize(p, core.OpGetDocument); err != nil {
		return nil, err
	}
	d, err := s.d.Store.GetDocument(ctx, p.OwnerID, p.Mode, id)
	return d, core.StoreErr(err, "document")
}

// Store keeps uploads and documents.
type Store interface {
	Tx
	core.Transactor
}

// Tx is a transaction of documents.
type Tx interface {
	core.Tx
	Queries
}

// Config bounds documents; zero values take the defaults.
type Config struct {
	// UploadSecret signs upload capability tokens; every replica needs the
	// same one (cmd/faxhub keeps it in the database). At least 32 bytes.
	UploadSecret   []byte
	MaxUploadBytes int64         // default 50 MB
	MaxPages       int           // default 350
	UploadTTL      time.Duration // default 1 hour
}

// SetDefaults fills zero values with the defaults.
func (c *Config) SetDefaults() {
	c.MaxUploadBytes = cmp.Or(c.MaxUploadBytes, 50<<20)
	c.MaxPages = cmp.Or(c.MaxPages, 350)
	c.UploadTTL = cmp.Or(c.UploadTTL, time.Hour)
}

// Deps are the ports documents drive.
type Deps struct {
	Store     Store
	Blobs     core.BlobStore
	Converter Converter
	Logger    *slog.Logger
	// Core charges the upload rate.
	Kernel *core.Kernel
}

// Service keeps uploads and documents.
type Service struct {
	cfg    core.Config
	dc     Config
	st     core.StorageConfig
	d      Deps
	kernel *core.Kernel
}

// New returns the service; cfg is the kernel's configuration with its
// defaults applied, st the storage policy (upload leases and rates, quota,
// retention).
func New(cfg core.Config, dc Config, st core.StorageConfig, d Deps) (*Service, error) {
	dc.SetDefaults()
	st.SetDefaults()
	if len(dc.UploadSecret) < 32 {
		return nil, errors.New("documents: UploadSecret must be at least 32 bytes")
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg, dc: dc, st: st, d: d, kernel: d.Kernel}, nil
}

// MaxPages is the most pages a document (and so a fax) may have.
func (s *Service) MaxPages() int { return s.dc.MaxPages }

// MaxUploadBytes is the largest file an upload takes.
func (s *Service) MaxUploadBytes() int64 { return s.dc.MaxUploadBytes }

func (s *Service) now() time.Time { return core.Clock(s.cfg.Now).Now() }

// inTx runs fn in one transaction of the store, typed as documents'.
func (s *Service) inTx(ctx context.Context, fn func(tx Tx) error) error {
	return s.d.Store.InTx(ctx, func(tx core.Tx) error { return fn(tx.(Tx)) })
}
