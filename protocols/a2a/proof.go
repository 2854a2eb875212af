package a2a

import (
	"context"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
)

// The skills of previews, proof of delivery and broadcasts, each answered
// with a message (nothing waits for the owner). Files travel by core's
// signed links, never through A2A.
//
// There is no send_fax_batch skill: a broadcast is paid with account
// credits, and A2A never spends them (the spec); a fax reached through
// A2A is paid by the owner at its checkout page, and core has no checkout
// of a batch. Broadcasts sent through REST, MCP or the console are read
// and canceled here (cancel_fax_batch releases holds, it spends nothing).

type (
	// previewFaxArgs are create_fax's arguments, to optional.
	previewFaxArgs createFaxArgs
	faxProofArgs   struct {
		FaxID string `json:"faxId"`
	}
	batchArgs struct {
		BatchID string `json:"batchId"`
	}
)

// previewView is preview_fax's answer: the preview's files flat beside
// its id (as MCP's preview_fax answers).
type previewView struct {
	PreviewID  string `json:"previewId"`
	DocumentID string `json:"documentId"`
	faxes.Files
	Resolution faxes.Resolution `json:"resolution"`
	Quote      *core.Quote      `json:"quote,omitempty"`
}

// proofSkills are the skills of previews, proof and broadcasts, in card
// order after list_faxes.
func proofSkills() []skill {
	faxID := object([]string{"faxId"}, map[string]any{"faxId": str("the fax id (a task's fax artifact, list_faxes, a batch's faxes)")})
	batchID := object([]string{"batchId"}, map[string]any{"batchId": str("the batch id of a broadcast (REST POST /api/v1/batches, MCP send_fax_batch)")})
	preview := object([]string{"uploadToken"}, withOptions(map[string]any{
		"to":          str("optional destination fax number in international (E.164) format; given, the answer carries the quote"),
		"uploadToken": str("the uploadToken of a completed upload (create_upload); it still drafts the fax afterwards"),
		"cover":       map[string]any{"type": "boolean", "default": false, "description": "add a cover page (with the owner's sender fields); coverPage implies it"},
		"coverText":   map[string]any{"type": "string", "maxLength": faxes.MaxCoverText, "description": "short note for the cover page (needs cover true; or coverPage.message); never PHI"},
		"from":        str("optional sender: one of the owner's active fax numbers (E.164 or its id, see list_numbers); omit for the default sender"),
	}))
	return []skill{
		{
			ID: "preview_fax", Name: "Preview a fax's pages", Op: core.OpQuote,
			Description: "Show the pages of a fax as they will be faxed, before drafting or paying: the document with its cover page and header line at the fax resolution, black and white. Takes create_fax's arguments (to optional: given, the answer carries the quote). Answers a message with pageImages (a link to a PNG of each page), url (a link to the PDF), pages, sha256 and expiresAt (about an hour): give the links to the user. Nothing is sent or charged." + phiNote,
			Tags:        []string{"fax", "preview", "pages"},
			Examples:    []string{`{"skill":"preview_fax","arguments":{"uploadToken":"<uploadToken>","coverPage":{"recipientName":"Dr. Ada"},"header":"Acme Clinic"}}`},
			Schema:      preview,
			newArgs:     func() any { return &previewFaxArgs{} },
		},
		{
			ID: "get_fax_document", Name: "Get the document as faxed", Op: core.OpGetFax,
			Description: "Get links to a fax's document exactly as transmitted (cover page and header line included): url (the PDF), pageImages (a PNG of each page), pages, sha256 and expiresAt. Before its first attempt: invalid params with code fax_not_yet_faxed (preview_fax shows the pages before sending); past retention document_purged.",
			Tags:        []string{"fax", "document", "proof"},
			Examples:    []string{`{"skill":"get_fax_document","arguments":{"faxId":"fax_..."}}`},
			Schema:      faxID,
			newArgs:     func() any { return &faxProofArgs{} },
		},
		{
			ID: "get_fax_report", Name: "Get a fax's transmission report", Op: core.OpGetFax,
			Description: "Get a link (url, expiresAt) to a finished fax's transmission report, a PDF like a fax machine's confirmation page: date and time, destination, pages sent, duration, result, a reduced page 1 and the document's sha256. A fax still in progress: code fax_not_finished.",
			Tags:        []string{"fax", "report", "proof"},
			Examples:    []string{`{"skill":"get_fax_report","arguments":{"faxId":"fax_..."}}`},
			Schema:      faxID,
			newArgs:     func() any { return &faxProofArgs{} },
		},
		{
			ID: "get_fax_receipt", Name: "Get a fax's signed delivery receipt", Op: core.OpGetFax,
			Description: "Get a finished fax's signed delivery receipt: receipt, a JWS (EdDSA) over the fax id, destination, pages, the sha256 of the document as faxed, outcome and times, verifiable offline with the key at jwksUri. A fax still in progress: code fax_not_finished.",
			Tags:        []string{"fax", "receipt", "proof"},
			Examples:    []string{`{"skill":"get_fax_receipt","arguments":{"faxId":"fax_..."}}`},
			Schema:      faxID,
			newArgs:     func() any { return &faxProofArgs{} },
		},
		{
			ID: "get_fax_batch", Name: "Get a broadcast's status", Op: core.OpGetBatch,
			Description: "Get a broadcast's summary: its faxes with their status, counts by status (scheduled, queued, sending, delivered, partial, failed, canceled), total and price; completedAt once every fax ended. Broadcasts are sent with credits through REST or MCP (A2A never spends credits).",
			Tags:        []string{"fax", "batch", "broadcast", "status"},
			Examples:    []string{`{"skill":"get_fax_batch","arguments":{"batchId":"bat_..."}}`},
			Schema:      batchID,
			newArgs:     func() any { return &batchArgs{} },
		},
		{
			ID: "cancel_fax_batch", Name: "Cancel a broadcast", Op: core.OpCancelBatch,
			Description: "Cancel every fax of a broadcast that has not started (scheduled or queued); their held credits are released, faxes already sending or finished go on. Answers the summary. Confirm with the user first.",
			Tags:        []string{"fax", "batch", "broadcast", "cancel"},
			Examples:    []string{`{"skill":"cancel_fax_batch","arguments":{"batchId":"bat_..."}}`},
			Schema:      batchID,
			newArgs:     func() any { return &batchArgs{} },
		},
	}
}

// proofSkill answers the skills of proofSkills; ok is false for any other.
func (rh *requestHandler) proofSkill(ctx context.Context, p core.Principal, s skill, args any) (result any, ok bool, err error) {
	svc := rh.h.svc
	fail := func(err error) (any, bool, error) { return nil, true, rh.fail(ctx, s.ID, err, targetSkill) }
	switch a := args.(type) {
	case *previewFaxArgs:
		opts, err := (*createFaxArgs)(a).options(s.ID)
		if err != nil {
			return nil, true, err
		}
		pv, err := svc.Faxes.Preview(ctx, p, faxes.SendRequest{To: a.To, UploadToken: a.UploadToken, Cover: a.Cover, CoverText: a.CoverText, From: a.From, Options: opts})
		if err != nil {
			return fail(err)
		}
		return previewView{PreviewID: pv.ID, DocumentID: pv.DocumentID, Files: pv.Files, Resolution: pv.Resolution, Quote: pv.Quote}, true, nil
	case *faxProofArgs:
		var v any
		var err error
		switch s.ID {
		case "get_fax_document":
			v, err = svc.Faxes.FaxedDocument(ctx, p, a.FaxID)
		case "get_fax_report":
			v, err = svc.Faxes.Report(ctx, p, a.FaxID)
		case "get_fax_receipt":
			v, err = svc.Faxes.Receipt(ctx, p, a.FaxID)
		}
		if err != nil {
			return fail(err)
		}
		return v, true, nil
	case *batchArgs:
		var v *faxes.BatchView
		var err error
		if s.ID == "cancel_fax_batch" {
			v, err = svc.Faxes.CancelBatch(ctx, p, a.BatchID)
		} else {
			v, err = svc.Faxes.GetBatch(ctx, p, a.BatchID)
		}
		if err != nil {
			return fail(err)
		}
		return v, true, nil
	}
	return nil, false, nil
}
