package faxes

import (
	"cmp"
	"context"
	"errors"

	"github.com/faxhub/faxhub/core"
)

// ResendRequest is the body of resendFax: every field is optional.
//
// The merge rule: the new fax has the earlier fax's destination, sender
// and options (cover page, header, resolution, retry policy), except what
// the request gives: to, from, and each option given replaces the earlier
// one whole (a coverPage replaces the cover page, its fields are not
// merged; coverText replaces the cover page's message; cover: true adds a
// cover page). sendAt is never carried over (the earlier time has passed):
// a resend goes now unless it gives one.
type ResendRequest struct {
	To        string `json:"to,omitempty"`
	From      string `json:"from,omitempty"`
	Cover     bool   `json:"cover,omitempty"`
	CoverText string `json:"coverText,omitempty"`
	Options
}

// Resend sends a new fax, paid with the principal's credits like a send,
// of the document of one of its earlier faxes (ResendRequest says what it
// takes from it), while that document is retained: a purged one is 410
// document_purged. The new fax names the earlier one (resendOf).
// Idempotent as Send is, in the same key namespace.
func (s *Service) Resend(ctx context.Context, p core.Principal, idemKey, faxID string, r ResendRequest) (*Fax, bool, error) {
	if err := s.checkSend(p, core.OpSendFax, idemKey); err != nil {
		return nil, false, err
	}
	reqHash := core.HashRequest(struct {
		ResendOf string        `json:"resendOf"`
		Request  ResendRequest `json:"request"`
	}{faxID, r})
	return s.sendWithCredits(ctx, p, idemKey, reqHash, func() (*Fax, error) {
		old, err := s.d.Store.GetFax(ctx, p.OwnerID, p.Mode, faxID)
		if err != nil {
			return nil, core.StoreErr(err, "fax")
		}
		doc, err := s.d.Store.GetDocument(ctx, p.OwnerID, p.Mode, old.DocumentID)
		if errors.Is(err, core.ErrNoRows) {
			return nil, core.Errorf(core.KindGone, CodeDocumentPurged, "the document of fax %s is no longer kept; upload it again and send it", old.ID).
				With("documentId", old.DocumentID)
		} else if err != nil {
			return nil, core.StoreErr(err, "document")
		}
		f, err := s.newCreditFax(ctx, p, resendOf(old, doc.ID, r))
		if err != nil {
			return nil, err
		}
		f.Options.ResendOf = old.ID
		return f, nil
	})
}

// resendOf is the send request of a resend of old (the merge rule of
// ResendRequest).
func resendOf(old *Fax, docID string, r ResendRequest) SendRequest {
	o := old.Options
	o.SendAt, o.ResendOf = nil, ""
	if o.CoverPage != nil {
		cp := *o.CoverPage
		o.CoverPage = &cp
	}
	sr := SendRequest{To: cmp.Or(r.To, old.To), From: cmp.Or(r.From, old.From), DocumentID: docID, Cover: r.Cover, CoverText: r.CoverText}
	if o.CoverPage == nil && old.Cover {
		// A fax from before cover pages had fields: its note.
		sr.Cover, sr.CoverText = true, cmp.Or(r.CoverText, old.CoverText)
	}
	if r.CoverPage != nil {
		o.CoverPage = r.CoverPage
	}
	if r.CoverText != "" && o.CoverPage != nil {
		o.CoverPage.Message = "" // coverText replaces it
		sr.Cover = true
	}
	if r.Header != "" {
		o.Header = r.Header
	}
	if r.Resolution != "" {
		o.Resolution = r.Resolution
	}
	if r.SendAt != nil {
		o.SendAt = r.SendAt
	}
	if r.Retry != nil {
		o.Retry = r.Retry
	}
	sr.Options = o
	return sr
}
