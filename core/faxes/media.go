package faxes

import (
	"context"
	"errors"
	"fmt"
	"io"
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
	rc, err := s.d.Blobs.Open(ctx, doc.PDFKey)
	if err != nil {
		return nil, 0, fmt.Errorf("open document of %s: %w", faxID, err)
	}
	return rc, doc.PDFBytes, nil
}
