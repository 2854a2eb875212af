package faxes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/faxhub/faxhub/core"
)

const (
	providerMediaSecret = "provider-media"
	// ProviderMediaTTL covers a provider's own retries of the download.
	ProviderMediaTTL = time.Hour
	// CodeMediaLinkInvalid: a media link that is malformed, forged,
	// expired, or for a fax no longer being sent.
	CodeMediaLinkInvalid = "media_link_invalid"
)

func badMediaLink(why string) error {
	return core.Errorf(core.KindNotFound, CodeMediaLinkInvalid, "this media link is %s", why)
}

// providerMediaURL signs a media link for faxID.
func (s *Service) providerMediaURL(ctx context.Context, faxID string) (string, error) {
	tok, _, err := s.kernel.SignLink(ctx, providerMediaSecret, "provider-media", faxID, ProviderMediaTTL)
	if err != nil {
		return "", err
	}
	return s.kernel.URL(core.LinkProviderMedia, nil, "token", tok), nil
}

// OpenProviderMedia opens the fax-ready PDF a media link names, with its
// size, while its fax is sending.
func (s *Service) OpenProviderMedia(ctx context.Context, token string) (io.ReadCloser, int64, error) {
	faxID, err := s.kernel.OpenLink(ctx, providerMediaSecret, "provider-media", core.PrefixFax, token, badMediaLink)
	if err != nil {
		return nil, 0, err
	}
	f, err := s.d.Store.GetFaxByID(ctx, faxID)
	if errors.Is(err, core.ErrNoRows) {
		return nil, 0, badMediaLink("for a fax that no longer exists")
	} else if err != nil {
		return nil, 0, fmt.Errorf("read fax %s: %w", faxID, err)
	}
	if f.Status != Sending && f.Status != Queued {
		return nil, 0, badMediaLink("for a fax that is no longer being sent")
	}
	doc, err := s.d.Store.GetDocument(ctx, f.OwnerID, f.Mode, f.DocumentID)
	if errors.Is(err, core.ErrNoRows) {
		return nil, 0, badMediaLink("for a document that no longer exists")
	} else if err != nil {
		return nil, 0, fmt.Errorf("read document of %s: %w", faxID, err)
	}
	if f.FaxedSHA256 != "" {
		// The document as faxed (cover page, header line): what the
		// provider transmits. Its size is read from the blob itself.
		return s.spool(ctx, s.faxedKeyOf(ctx, f))
	}
	rc, err := s.d.Blobs.Open(ctx, doc.PDFKey)
	if err != nil {
		return nil, 0, fmt.Errorf("open document of %s: %w", faxID, err)
	}
	return rc, doc.PDFBytes, nil
}

// spool copies the blob at key to a private temporary file, for readers
// that read it at random or need its size first (the blob port streams and
// has no size of its own): a provider's download (its Content-Length), the
// composer and the rasterizer. The file is unlinked at once, so it is gone
// once closed, whatever happens.
func (s *Service) spool(ctx context.Context, key string) (*os.File, int64, error) {
	rc, err := s.d.Blobs.Open(ctx, key)
	if err != nil {
		return nil, 0, fmt.Errorf("open %s: %w", key, err)
	}
	defer rc.Close()
	tmp, err := unlinkedTemp()
	if err != nil {
		return nil, 0, fmt.Errorf("spool %s: %w", key, err)
	}
	n, err := io.Copy(tmp, rc)
	if err == nil {
		_, err = tmp.Seek(0, io.SeekStart)
	}
	if err != nil {
		tmp.Close()
		return nil, 0, fmt.Errorf("spool %s: %w", key, err)
	}
	return tmp, n, nil
}

// unlinkedTemp is a private temporary file no other process can open by
// name, removed with its last close.
func unlinkedTemp() (*os.File, error) {
	f, err := os.CreateTemp("", "faxhub-fax-*.pdf")
	if err != nil {
		return nil, err
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
