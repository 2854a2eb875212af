package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
)

// The tools of previews, proof of delivery and broadcasts: each a thin
// call of core's (faxes.Preview, FaxedDocument, Report, Receipt,
// SendBatch, GetBatch, CancelBatch). Files travel by core's signed links,
// never through MCP.

// previewOut is preview_fax's result: the preview's files flat beside
// its id, so a model reads the links at the top level.
type previewOut struct {
	PreviewID  string `json:"previewId" jsonschema:"the preview's id"`
	DocumentID string `json:"documentId" jsonschema:"the document previewed"`
	faxes.Files
	Resolution faxes.Resolution `json:"resolution" jsonschema:"the resolution the page images are rendered at"`
	Quote      *core.Quote      `json:"quote,omitempty" jsonschema:"the price, when to was given"`
}

type faxIDIn struct {
	FaxID string `json:"faxId" jsonschema:"the faxId returned by send_fax, send_fax_batch or list_faxes"`
}

type batchIDIn struct {
	BatchID string `json:"batchId" jsonschema:"the batch id returned by send_fax_batch"`
}

// batchIn is send_fax_batch's input: one document, its recipients, the
// options every recipient's fax is sent with (as create_fax_draft takes
// them) and an optional idempotency key. Its schema is batchSchema; it is
// decoded strictly and core checks every rule.
type batchIn struct {
	UploadToken    string                 `json:"uploadToken,omitempty"`
	DocumentID     string                 `json:"documentId,omitempty"`
	Recipients     []faxes.BatchRecipient `json:"recipients"`
	Cover          bool                   `json:"cover,omitempty"`
	CoverText      string                 `json:"coverText,omitempty"`
	From           string                 `json:"from,omitempty"`
	CoverPage      *faxes.CoverPage       `json:"coverPage,omitempty"`
	Header         string                 `json:"header,omitempty"`
	Resolution     faxes.Resolution       `json:"resolution,omitempty"`
	SendAt         string                 `json:"sendAt,omitempty"`
	Retry          *faxes.RetryPolicy     `json:"retry,omitempty"`
	IdempotencyKey string                 `json:"idempotencyKey,omitempty"`
}

// batchOut is a batch's summary; alreadyPaid is true when the answer is
// the one an earlier identical call got (nothing was charged again).
type batchOut struct {
	faxes.BatchView
	AlreadyPaid bool `json:"alreadyPaid,omitempty"`
}

// previewSchema is preview_fax's input schema: create_fax_draft's, with
// to optional (without it the pages are shown and nothing is priced).
func previewSchema() map[string]any {
	s := createDraftSchema()
	s["required"] = []string{"uploadToken"}
	props := s["properties"].(map[string]any)
	props["to"] = map[string]any{"type": "string", "description": "optional destination fax number in international format; given, the preview carries the quote"}
	return s
}

// batchSchema is send_fax_batch's input schema.
func batchSchema() map[string]any {
	props := faxes.OptionsSchema(false)
	text := func(desc string) map[string]any {
		return map[string]any{"type": "string", "maxLength": faxes.MaxCoverField, "description": desc}
	}
	props["uploadToken"] = map[string]any{"type": "string", "description": "the uploadToken of a completed upload (or documentId)"}
	props["documentId"] = map[string]any{"type": "string", "description": "the documentId of an earlier fax's document, while it is retained (or uploadToken)"}
	props["recipients"] = map[string]any{"type": "array", "minItems": 1, "maxItems": faxes.MaxBatchRecipients,
		"description": fmt.Sprintf("the destinations, 1 to %d; each is a fax of its own, priced and sent on its own", faxes.MaxBatchRecipients),
		"items": map[string]any{"type": "object", "additionalProperties": false, "required": []string{"to"}, "properties": map[string]any{
			"to": map[string]any{"type": "string", "description": "destination fax number in international format, e.g. +14155550123"},
			"coverPage": map[string]any{"type": "object", "additionalProperties": false,
				"description": "this recipient's own cover page fields, in place of the batch's coverPage ones; given, the recipient's fax has a cover page",
				"properties":  map[string]any{"recipientName": text("the recipient's name"), "recipientCompany": text("the recipient's company")}},
		}}}
	props["cover"] = map[string]any{"type": "boolean", "description": "add a cover page (with the owner's sender fields) to every fax; coverPage implies it"}
	props["coverText"] = map[string]any{"type": "string", "maxLength": faxes.MaxCoverText, "description": "short note for the cover pages (needs cover true; or coverPage.message); never PHI"}
	props["from"] = map[string]any{"type": "string", "description": "optional sender: one of the owner's active fax numbers (E.164 or its id, see list_numbers); omit for the default sender"}
	props["idempotencyKey"] = map[string]any{"type": "string", "maxLength": core.MaxIdempotencyKey,
		"description": "optional: a fresh value per broadcast. Omitted, the key is derived from the arguments, so calling again with the same arguments never sends (or charges) twice; give a new key to send the same broadcast again on purpose"}
	return map[string]any{"type": "object", "properties": props, "required": []string{"recipients"}, "additionalProperties": false}
}

// key is the batch's idempotency key: the one given, or one derived from
// the arguments (as send_fax is idempotent by its draft, the same
// broadcast asked twice is sent once).
func (in batchIn) key() string {
	if in.IdempotencyKey != "" {
		return in.IdempotencyKey
	}
	b, _ := json.Marshal(in)
	sum := sha256.Sum256(b)
	return "mcp_batch_" + hex.EncodeToString(sum[:])
}

func (h *Handler) addProofTools(s *mcp.Server) {
	addStrictTool(s, tool(&mcp.Tool{Name: "preview_fax", Annotations: ann("Preview a fax's pages", false, false, false, false),
		Description: "Show the pages of a fax as they will be faxed, before sending: the document with its cover page and header line, at the fax resolution, in black and white. Takes create_fax_draft's arguments (to optional: given, the result carries the quote). Returns pageImages (a link to a PNG of each page), url (a link to the PDF), pages, sha256 and expiresAt (the links work about an hour): give the links to the user to look at. Nothing is sent or charged." + scopeNote("preview_fax") + phiWarning,
		InputSchema: previewSchema()}),
		h.previewFax)
	mcp.AddTool(s, tool(&mcp.Tool{Name: "get_fax_document", Annotations: ann("Get the document as faxed", true, false, true, false),
		Description: "Get links to a fax's document exactly as it was transmitted (cover page and header line included): url (the PDF), pageImages (a PNG of each page), pages, sha256 (equal to the fax's faxedSha256) and expiresAt. Before the first attempt the error is fax_not_yet_faxed (preview_fax shows the pages before sending); past retention document_purged." + scopeNote("get_fax_document") + phiWarning}),
		byFaxID(h, "get_fax_document", h.svc.Faxes.FaxedDocument))
	mcp.AddTool(s, tool(&mcp.Tool{Name: "get_fax_report", Annotations: ann("Get a fax's transmission report", true, false, true, false),
		Description: "Get a link (url, expiresAt) to a finished fax's transmission report, a PDF like a fax machine's confirmation page: date and time, destination, pages sent, duration, result, a reduced page 1 and the document's sha256. A fax still in progress is fax_not_finished." + scopeNote("get_fax_report") + phiWarning}),
		byFaxID(h, "get_fax_report", h.svc.Faxes.Report))
	mcp.AddTool(s, tool(&mcp.Tool{Name: "get_fax_receipt", Annotations: ann("Get a fax's signed delivery receipt", true, false, false, false),
		Description: "Get a finished fax's signed delivery receipt: receipt, a JWS (EdDSA) over the fax id, destination, pages, the sha256 of the document as faxed, the outcome and times, verifiable offline by anyone with the key at jwksUri. A fax still in progress is fax_not_finished." + scopeNote("get_fax_receipt") + phiWarning}),
		byFaxID(h, "get_fax_receipt", h.svc.Faxes.Receipt))
	addStrictTool(s, tool(&mcp.Tool{Name: "send_fax_batch", Annotations: ann("Broadcast a fax with credits", false, true, true, true),
		Description: fmt.Sprintf("Send one document (uploadToken or documentId) to up to %d recipients at once, paying with the owner's account credits: each recipient is a fax of its own, priced and sent on its own. Spends money: confirm the recipients and the total with the user first. All or nothing: a number that cannot be faxed refuses the whole broadcast, naming the recipient, and nothing is charged; too few credits is insufficient_credits. Takes create_fax_draft's send options for every fax, and per recipient coverPage {recipientName, recipientCompany}. Calling again with the same arguments never charges twice (idempotencyKey: give a fresh one to broadcast the same again). Returns the batch summary (id, counts by status, price, faxes); follow it with get_fax_batch.", faxes.MaxBatchRecipients) + scopeNote("send_fax_batch") + phiWarning,
		InputSchema: batchSchema()}),
		h.sendBatch)
	mcp.AddTool(s, tool(&mcp.Tool{Name: "get_fax_batch", Annotations: ann("Get a broadcast's status", true, false, true, false),
		Description: "Get a broadcast's summary: its faxes with their status, counts by status (scheduled, queued, sending, delivered, partial, failed, canceled), total and price; completedAt once every fax ended." + scopeNote("get_fax_batch") + phiWarning}),
		byBatchID(h, "get_fax_batch", h.svc.Faxes.GetBatch))
	mcp.AddTool(s, tool(&mcp.Tool{Name: "cancel_fax_batch", Annotations: ann("Cancel a broadcast", false, true, true, false),
		Description: "Cancel every fax of a broadcast that has not started (scheduled or queued): their held credits are released. Faxes already sending or finished go on. Returns the summary. Confirm with the user first." + scopeNote("cancel_fax_batch") + phiWarning}),
		byBatchID(h, "cancel_fax_batch", h.svc.Faxes.CancelBatch))
}

func (h *Handler) previewFax(ctx context.Context, _ *mcp.CallToolRequest, in createDraftIn) (*mcp.CallToolResult, previewOut, error) {
	const tool = "preview_fax"
	p, err := principal(ctx)
	if err != nil {
		return nil, previewOut{}, h.toolError(ctx, tool, err)
	}
	if in.UploadToken == "" {
		return nil, previewOut{}, errors.New("invalid_request: uploadToken is required; call create_upload first and upload the file (field: uploadToken)")
	}
	opts, err := in.options()
	if err != nil {
		return nil, previewOut{}, h.toolError(ctx, tool, err)
	}
	pv, err := h.svc.Faxes.Preview(ctx, p, faxes.SendRequest{To: in.To, UploadToken: in.UploadToken, Cover: in.Cover, CoverText: in.CoverText, From: in.From, Options: opts})
	if err != nil {
		return nil, previewOut{}, h.toolError(ctx, tool, err)
	}
	return nil, previewOut{PreviewID: pv.ID, DocumentID: pv.DocumentID, Files: pv.Files, Resolution: pv.Resolution, Quote: pv.Quote}, nil
}

// byFaxID is a tool that takes a fax id and answers what get returns for
// it; byBatchID the same for a batch id.
func byFaxID[T any](h *Handler, tool string, get func(context.Context, core.Principal, string) (*T, error)) mcp.ToolHandlerFor[faxIDIn, T] {
	return func(ctx context.Context, _ *mcp.CallToolRequest, in faxIDIn) (*mcp.CallToolResult, T, error) {
		return byID(ctx, h, tool, "faxId", in.FaxID, get)
	}
}

func byBatchID[T any](h *Handler, tool string, get func(context.Context, core.Principal, string) (*T, error)) mcp.ToolHandlerFor[batchIDIn, T] {
	return func(ctx context.Context, _ *mcp.CallToolRequest, in batchIDIn) (*mcp.CallToolResult, T, error) {
		return byID(ctx, h, tool, "batchId", in.BatchID, get)
	}
}

// byID is one place for a by-id tool's principal, missing id and error.
func byID[T any](ctx context.Context, h *Handler, tool, field, id string, get func(context.Context, core.Principal, string) (*T, error)) (*mcp.CallToolResult, T, error) {
	var zero T
	p, err := principal(ctx)
	if err != nil {
		return nil, zero, h.toolError(ctx, tool, err)
	}
	if id == "" {
		return nil, zero, fmt.Errorf("invalid_request: %s is required (field: %s)", field, field)
	}
	out, err := get(ctx, p, id)
	if err != nil {
		return nil, zero, h.toolError(ctx, tool, err)
	}
	return nil, *out, nil
}

func (h *Handler) sendBatch(ctx context.Context, _ *mcp.CallToolRequest, in batchIn) (*mcp.CallToolResult, batchOut, error) {
	const tool = "send_fax_batch"
	p, err := principal(ctx)
	if err != nil {
		return nil, batchOut{}, h.toolError(ctx, tool, err)
	}
	opts, err := createDraftIn{CoverPage: in.CoverPage, Header: in.Header, Resolution: in.Resolution, SendAt: in.SendAt, Retry: in.Retry}.options()
	if err != nil {
		return nil, batchOut{}, h.toolError(ctx, tool, err)
	}
	v, replayed, err := h.svc.Faxes.SendBatch(ctx, p, in.key(), faxes.BatchRequest{
		UploadToken: in.UploadToken, DocumentID: in.DocumentID, Recipients: in.Recipients,
		Cover: in.Cover, CoverText: in.CoverText, From: in.From, Options: opts,
	})
	if err != nil {
		return nil, batchOut{}, h.toolError(ctx, tool, err)
	}
	return nil, batchOut{BatchView: *v, AlreadyPaid: replayed}, nil
}
