package mcp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/numbers"
)

// MaxInlineBytes is the largest file create_upload takes inline as base64
// (decoded size). Anything larger goes through uploadUrl or uploadPageUrl.
const MaxInlineBytes = 256 << 10

const phiWarning = " Never send protected health information (PHI) through this tool or any MCP call: faxhub's MCP server is not a HIPAA channel."

// Instructions are the server instructions every client receives.
const Instructions = `faxhub sends faxes for the signed-in owner. Typical flow:
1. create_upload → give the user uploadPageUrl (a page where they pick the file), or PUT the bytes to uploadUrl yourself (no Authorization header; the token in the URL is the credential), or pass a tiny file inline as contentBase64 (at most 256 KB).
2. create_fax_draft {to, uploadToken} → a priced draft and a checkoutUrl where the owner can review and pay for exactly this fax.
3. Either the owner pays at checkoutUrl, or send_fax {draftId} pays with account credits (needs fax:send).
4. get_fax_status {faxId} until the status is delivered, partial or failed.
preview_fax takes create_fax_draft's arguments and returns links to the pages as they will be faxed (cover page and header included), without sending. Once faxed: get_fax_document (the PDF as transmitted), get_fax_report (the transmission report) and get_fax_receipt (a signed delivery receipt).
send_fax_batch sends one document to up to 100 numbers with credits (get_fax_batch, cancel_fax_batch follow it).
validate_fax prices a destination without side effects; get_credits shows the balance; create_credit_checkout sells credit packs.
Fax numbers: search_numbers → buy_number {number} reserves one and returns a checkoutUrl where the owner pays the first month (buying never spends credits); list_numbers shows them; an active number can be the from of create_fax_draft.
Received faxes: list_inbox lists them with a preview of their text; read_inbox_fax {id} gives the whole text and a short-lived download link for the PDF.
Protected health information (PHI) must never be sent through MCP: do not put PHI in tool arguments, inline files or cover text. Documents with PHI must be sent by the owner from the faxhub console or API, not through a chat app.`

// toolOps maps each tool to the core operation (and so the scope) that
// gates it; the HTTP layer uses it for 403 insufficient_scope.
var toolOps = map[string]core.Operation{
	"create_upload":          core.OpCreateUpload,
	"create_fax_draft":       core.OpCreateDraft,
	"validate_fax":           core.OpQuote,
	"send_fax":               core.OpSendFax,
	"get_fax_status":         core.OpGetFax,
	"cancel_fax":             core.OpCancelFax,
	"list_faxes":             core.OpListFaxes,
	"get_credits":            core.OpGetCredits,
	"create_credit_checkout": core.OpCreditCheckout,
	"list_inbox":             core.OpListInbox,
	"read_inbox_fax":         core.OpReadInbox,
	"search_numbers":         core.OpSearchNumbers,
	"buy_number":             core.OpBuyNumber,
	"list_numbers":           core.OpListNumbers,
	"preview_fax":            core.OpQuote,
	"get_fax_document":       core.OpGetFax,
	"get_fax_report":         core.OpGetFax,
	"get_fax_receipt":        core.OpGetFax,
	"send_fax_batch":         core.OpSendBatch,
	"get_fax_batch":          core.OpGetBatch,
	"cancel_fax_batch":       core.OpCancelBatch,
}

func boolp(b bool) *bool { return &b }

func ann(title string, readOnly, destructive, idempotent, openWorld bool) *mcp.ToolAnnotations {
	a := &mcp.ToolAnnotations{Title: title, ReadOnlyHint: readOnly, IdempotentHint: idempotent, OpenWorldHint: boolp(openWorld)}
	if !readOnly {
		a.DestructiveHint = boolp(destructive)
	}
	return a
}

func scopeNote(tool string) string {
	return fmt.Sprintf(" Requires the %s scope.", core.ScopeFor(toolOps[tool]))
}

// ---- inputs and outputs (schemas are inferred from these types)

type createUploadIn struct {
	ContentType   string `json:"contentType,omitempty" jsonschema:"optional media type the file must have, e.g. application/pdf; omit to accept any supported document or image"`
	FileName      string `json:"fileName,omitempty" jsonschema:"optional file name, only shown to the user (at most 255 bytes)"`
	ContentBase64 string `json:"contentBase64,omitempty" jsonschema:"optional: the whole file base64-encoded, for tiny files only (at most 256 KB decoded); larger files must be PUT to uploadUrl"`
}

type uploadOut struct {
	UploadURL     string `json:"uploadUrl" jsonschema:"PUT the raw file bytes here, without an Authorization header"`
	UploadToken   string `json:"uploadToken" jsonschema:"pass to create_fax_draft once the file is uploaded"`
	UploadPageURL string `json:"uploadPageUrl" jsonschema:"a web page where a person can pick or drop the file; give it to the user"`
	Method        string `json:"method"`
	ExpiresAt     string `json:"expiresAt" jsonschema:"RFC 3339 time after which the upload URL no longer accepts a file"`
	MaxBytes      int64  `json:"maxBytes"`
	Uploaded      bool   `json:"uploaded" jsonschema:"true when the file was given inline and is already stored"`
	Pages         int    `json:"pages,omitempty" jsonschema:"pages of the stored document, when uploaded"`
}

// createDraftIn is create_fax_draft's input: the draft and its send
// options, as REST's draft body names them. Its schema is
// createDraftSchema (the options' bounds are core's: faxes.OptionsSchema);
// the arguments are decoded strictly (decodeArguments) and every rule is
// checked by core, whose errors name the field.
type createDraftIn struct {
	To          string `json:"to"`
	UploadToken string `json:"uploadToken"`
	Cover       bool   `json:"cover,omitempty"`
	CoverText   string `json:"coverText,omitempty"`
	From        string `json:"from,omitempty"`
	// The send options (faxes.Options but resendOf, which only resending
	// sets). SendAt is text so that a malformed time is refused naming
	// the field.
	CoverPage  *faxes.CoverPage   `json:"coverPage,omitempty"`
	Header     string             `json:"header,omitempty"`
	Resolution faxes.Resolution   `json:"resolution,omitempty"`
	SendAt     string             `json:"sendAt,omitempty"`
	Retry      *faxes.RetryPolicy `json:"retry,omitempty"`
}

// createDraftSchema is create_fax_draft's input schema.
func createDraftSchema() map[string]any {
	props := faxes.OptionsSchema(false)
	props["to"] = map[string]any{"type": "string", "description": "destination fax number in international format, e.g. +14155550123"}
	props["uploadToken"] = map[string]any{"type": "string", "description": "the uploadToken of a completed upload"}
	props["cover"] = map[string]any{"type": "boolean", "description": "add a cover page (with the owner's sender fields); coverPage implies it"}
	props["coverText"] = map[string]any{"type": "string", "maxLength": faxes.MaxCoverText, "description": "short note for the cover page (needs cover true; or coverPage.message); never PHI"}
	props["from"] = map[string]any{"type": "string", "description": "optional sender: one of the owner's active fax numbers (E.164 or its id, see list_numbers); omit for the default sender"}
	return map[string]any{"type": "object", "properties": props, "required": []string{"to", "uploadToken"}, "additionalProperties": false}
}

// options is the input's send options for core.
func (in createDraftIn) options() (faxes.Options, error) {
	o := faxes.Options{CoverPage: in.CoverPage, Header: in.Header, Resolution: in.Resolution, Retry: in.Retry}
	if in.SendAt != "" {
		at, err := time.Parse(time.RFC3339, in.SendAt)
		if err != nil {
			return faxes.Options{}, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "sendAt must be an RFC 3339 time, such as 2026-05-01T09:00:00Z").With("field", "sendAt")
		}
		o.SendAt = &at
	}
	return o, nil
}

// validateIn is validate_fax's input. Pages is a pointer so that core
// tells an absent count (one page) from a 0 (refused); its schema is
// validateSchema, written out because the SDK would infer a nullable
// integer from the pointer, which the tool never accepted.
type validateIn struct {
	To    string `json:"to"`
	Pages *int   `json:"pages,omitempty"`
	Cover bool   `json:"cover,omitempty"`
}

const validateSchema = `{"type":"object","properties":{` +
	`"to":{"type":"string","description":"destination fax number in international format"},` +
	`"pages":{"type":"integer","description":"number of pages to price (default 1)"},` +
	`"cover":{"type":"boolean","description":"add a cover page"}},` +
	`"required":["to"],"additionalProperties":false}`

type sendIn struct {
	DraftID string `json:"draftId" jsonschema:"the draftId from create_fax_draft"`
	// ApprovalID names the owner's approval this retry follows (the
	// elicitationId send_fax answered with); optional: the same draftId
	// finds it too.
	ApprovalID string `json:"approvalId,omitempty" jsonschema:"when send_fax asked for the owner's approval: its elicitationId (the approval id); optional, the same draftId finds it"`
}

type getFaxIn struct {
	FaxID string `json:"faxId" jsonschema:"the faxId returned by send_fax or list_faxes"`
}

type cancelFaxIn struct {
	FaxID string `json:"faxId" jsonschema:"the faxId of a scheduled or queued fax"`
}

type listFaxesIn struct {
	Status        string `json:"status,omitempty" jsonschema:"only faxes in this status"`
	CreatedFrom   string `json:"createdFrom,omitempty" jsonschema:"only faxes created at or after this: a date (2026-11-29, from its start in UTC) or an RFC 3339 time"`
	CreatedTo     string `json:"createdTo,omitempty" jsonschema:"only faxes created before this: a date (2026-11-29, that whole day in UTC included) or an RFC 3339 time"`
	StartingAfter string `json:"startingAfter,omitempty" jsonschema:"nextCursor of the previous page"`
	Limit         int    `json:"limit,omitempty" jsonschema:"page size, 1 to 100 (default 20)"`
}

type listFaxesOut struct {
	Faxes      []faxes.FaxView `json:"faxes"`
	HasMore    bool            `json:"hasMore"`
	NextCursor string          `json:"nextCursor,omitempty"`
}

type empty struct{}

type creditsOut struct {
	Mode           string `json:"mode"`
	Available      string `json:"balance" jsonschema:"USD that can be spent now"`
	AvailableCents int64  `json:"balanceCents"`
	Held           string `json:"held" jsonschema:"USD held for faxes being sent"`
	Currency       string `json:"currency"`
}

type checkoutIn struct {
	PackID string `json:"packId" jsonschema:"the credit pack to buy"`
}

type checkoutOut struct {
	CheckoutURL string `json:"checkoutUrl" jsonschema:"give this to the owner; they pay there"`
	PackID      string `json:"packId"`
	Amount      string `json:"amount"`
	Credit      string `json:"credit"`
	Currency    string `json:"currency"`
	ExpiresAt   string `json:"expiresAt"`
}

// ---- tools

func (h *Handler) addTools(s *mcp.Server) {
	mcp.AddTool(s, tool(&mcp.Tool{Name: "create_upload", Annotations: ann("Create an upload", false, false, false, false),
		Description: "Start uploading a document to fax (PDF, image or office file). Returns uploadPageUrl — give it to the user so they can pick the file in their browser — and uploadUrl, where a client can PUT the raw bytes itself without any Authorization header. Tiny files (at most 256 KB) may be passed inline as contentBase64 instead; the result then says uploaded: true. Then call create_fax_draft with the uploadToken." + scopeNote("create_upload") + phiWarning}),
		h.createUpload)
	addStrictTool(s, tool(&mcp.Tool{Name: "create_fax_draft", Annotations: ann("Draft a fax", false, false, false, false),
		Description: "Price a fax of an uploaded document to a destination, without paying. Returns the draft, its quote and checkoutUrl, a page where the signed-in owner reviews destination, pages and price and pays for exactly this fax. Alternatively send_fax pays the draft with account credits. " +
			"Send options: coverPage (cover page fields: recipientName, recipientCompany, senderName, senderCompany, senderPhone, senderFax, subject, message; priced as one more page), header (the line printed at the top of every page, at most 50 characters), resolution (standard or fine, same price), sendAt (RFC 3339, at most 30 days ahead: the fax is scheduled until then and can be canceled with cancel_fax), retry ({attempts 1-5, delayMinutes 1-30} for busy and unanswered calls). A mistake in any of them is an invalid_request error naming the field. preview_fax shows the pages as they will be faxed before paying." + scopeNote("create_fax_draft") + phiWarning,
		InputSchema: createDraftSchema()}),
		h.createDraft)
	mcp.AddTool(s, tool(&mcp.Tool{Name: "validate_fax", Annotations: ann("Check a destination and price", true, false, true, false),
		Description: "Check that a fax number can be reached and price a number of pages to it. No side effects." + scopeNote("validate_fax") + phiWarning,
		InputSchema: json.RawMessage(validateSchema)}),
		h.validate)
	mcp.AddTool(s, tool(&mcp.Tool{Name: "send_fax", Annotations: ann("Send a drafted fax with credits", false, true, true, true),
		Description: "Send a draft now, paying with the owner's account credits, and queue it for delivery. Spends money: confirm with the user first. Calling again for the same draft never charges twice (it returns the existing fax). If the credits do not cover the price the call fails with insufficient_credits; then give the user the draft's checkoutUrl, or a credit pack from create_credit_checkout. The fax goes from the number chosen as from on create_fax_draft, if any. When the owner must approve the fax (this app may only draft, or the owner asks to approve every send from chat apps) the call answers with a URL elicitation of the owner's approval page and sends nothing: give the user the link, and once the owner approved with their passkey call send_fax again with the same draftId (and approvalId, the elicitationId); declined or expired approvals charge nothing." + scopeNote("send_fax") + " With only fax:draft the owner approves each fax." + phiWarning}),
		h.sendFax)
	mcp.AddTool(s, tool(&mcp.Tool{Name: "cancel_fax", Annotations: ann("Cancel a fax", false, true, true, false),
		Description: "Cancel a fax that has not started sending (status scheduled or queued): it will not be sent and what was paid returns to the owner (credits held are released; a fax paid at checkout is refunded as credits). A fax being sent is called back where the provider can; it then ends canceled or, if too late, delivered. Confirm with the user first." + scopeNote("cancel_fax") + phiWarning}),
		h.cancelFax)
	mcp.AddTool(s, tool(&mcp.Tool{Name: "get_fax_status", Annotations: ann("Get a fax's status", true, false, true, false),
		Description: "Get one fax's delivery status (scheduled, queued, sending, delivered, partial, failed, canceled), pages sent, failure reason and the options it is sent with (coverPage, header, resolution, sendAt, retry)." + scopeNote("get_fax_status") + phiWarning}),
		h.getFax)
	mcp.AddTool(s, tool(&mcp.Tool{Name: "list_faxes", Annotations: ann("List sent faxes", true, false, true, false),
		Description: "List the owner's sent faxes, newest first, optionally by status and by the period they were created in (createdFrom, createdTo); page with startingAfter = nextCursor." + scopeNote("list_faxes") + phiWarning}),
		h.listFaxes)
	mcp.AddTool(s, tool(&mcp.Tool{Name: "get_credits", Annotations: ann("Get the credit balance", true, false, true, false),
		Description: "Get the owner's fax credit balance: USD that can be spent now (balance) and USD held for faxes in flight (held)." + scopeNote("get_credits") + phiWarning}),
		h.getCredits)
	packs := make([]string, 0, len(h.svc.Credits.Packs()))
	for _, p := range h.svc.Credits.Packs() {
		packs = append(packs, fmt.Sprintf("%s (%s, $%s for $%s of credit)", p.ID, p.Name, core.FormatUSD(p.PriceMicros), core.FormatUSD(p.CreditMicros)))
	}
	mcp.AddTool(s, tool(&mcp.Tool{Name: "create_credit_checkout", Annotations: ann("Buy credits", false, false, false, true),
		Description: "Create a checkout page for a credit pack; give checkoutUrl to the owner, who pays there. Packs: " + strings.Join(packs, "; ") + "." + scopeNote("create_credit_checkout") + phiWarning}),
		h.creditCheckout)
	h.addNumberTools(s)
	h.addInboxTools(s)
	h.addProofTools(s)
}

func principal(ctx context.Context) (core.Principal, error) {
	p, ok := core.PrincipalFrom(ctx)
	if !ok {
		return core.Principal{}, core.Errorf(core.KindUnauthenticated, core.CodeUnauthenticated, "authentication required")
	}
	return p, nil
}

// toolError turns a core error into the text an LLM reads: the code, the
// message and what to do.
func (h *Handler) toolError(ctx context.Context, tool string, err error) error {
	e := core.AsError(err)
	if e.Kind == core.KindInternal {
		h.opts.Logger.ErrorContext(ctx, "mcp tool failed", "tool", tool, "err", err)
		return errors.New("internal_error: something went wrong on faxhub's side; try again in a moment")
	}
	msg := e.Code + ": " + e.Message
	if f, ok := e.Fields["field"].(string); ok && f != "" {
		msg += " (field: " + f + ")"
	}
	if i, ok := e.Fields["recipient"].(int); ok {
		// A broadcast refused for one recipient names it.
		msg += fmt.Sprintf(" (recipient: %d, to: %v)", i, e.Fields["to"])
	}
	switch e.Code {
	case core.CodeInsufficientScope:
		msg += fmt.Sprintf(". The tool %s needs the %s scope; the owner must authorize this app again with it.", tool, core.ScopeFor(toolOps[tool]))
	case credits.CodeInsufficientCredits:
		if id, _ := e.Fields["draftId"].(string); id != "" {
			mode, _ := e.Fields["mode"].(string)
			msg += ". Nothing was charged. The owner can pay for this fax directly at " + h.svc.Tasks.DraftCheckoutURL(&faxes.Draft{ID: id, Mode: core.Mode(mode)}) + " or buy credits with create_credit_checkout."
		}
	case credits.CodeUnknownPack:
		msg += fmt.Sprintf(" (packs: %v)", e.Fields["packs"])
	case faxes.CodeProviderUnavailable:
		msg += ". This server cannot send faxes in this mode yet."
	case numbers.CodeNumberUnavailable:
		msg += ". Call search_numbers and pick another number."
	case numbers.CodeFromNumberNotOwned:
		msg += ". list_numbers shows the owner's numbers; omit from to use the default sender."
	}
	return errors.New(msg)
}

func (h *Handler) createUpload(ctx context.Context, _ *mcp.CallToolRequest, in createUploadIn) (*mcp.CallToolResult, uploadOut, error) {
	const tool = "create_upload"
	p, err := principal(ctx)
	if err != nil {
		return nil, uploadOut{}, h.toolError(ctx, tool, err)
	}
	if err := documents.CheckFileName(in.FileName); err != nil {
		return nil, uploadOut{}, h.toolError(ctx, tool, err)
	}
	var data []byte
	if in.ContentBase64 != "" {
		if base64.StdEncoding.DecodedLen(len(in.ContentBase64)) > MaxInlineBytes+2 {
			return nil, uploadOut{}, fmt.Errorf("file_too_large: inline files are limited to %d bytes (256 KB); call create_upload without contentBase64 and PUT the file to uploadUrl, or give the user uploadPageUrl", MaxInlineBytes)
		}
		data, err = base64.StdEncoding.DecodeString(in.ContentBase64)
		if err != nil {
			return nil, uploadOut{}, errors.New("invalid_request: contentBase64 is not valid standard base64")
		}
		if len(data) > MaxInlineBytes {
			return nil, uploadOut{}, fmt.Errorf("file_too_large: inline files are limited to %d bytes (256 KB); PUT larger files to uploadUrl", MaxInlineBytes)
		}
	}
	c, err := h.svc.Documents.CreateUpload(ctx, p, in.ContentType, 0)
	if err != nil {
		return nil, uploadOut{}, h.toolError(ctx, tool, err)
	}
	page, err := h.url("mcp.uploadPage")
	if err != nil {
		return nil, uploadOut{}, h.toolError(ctx, tool, err)
	}
	out := uploadOut{
		UploadURL: c.UploadURL, UploadToken: c.UploadToken, UploadPageURL: page + "#" + c.UploadToken,
		Method: c.Method, ExpiresAt: core.RFC3339(c.ExpiresAt), MaxBytes: c.MaxBytes,
	}
	if data != nil {
		doc, err := h.svc.Documents.ReceiveUpload(ctx, c.UploadToken, bytes.NewReader(data))
		if err != nil {
			return nil, uploadOut{}, h.toolError(ctx, tool, err)
		}
		out.Uploaded, out.Pages = true, doc.Pages
	}
	return nil, out, nil
}

func (h *Handler) createDraft(ctx context.Context, _ *mcp.CallToolRequest, in createDraftIn) (*mcp.CallToolResult, faxes.DraftOptionsView, error) {
	const tool = "create_fax_draft"
	p, err := principal(ctx)
	if err != nil {
		return nil, faxes.DraftOptionsView{}, h.toolError(ctx, tool, err)
	}
	if in.UploadToken == "" {
		return nil, faxes.DraftOptionsView{}, errors.New("invalid_request: uploadToken is required; call create_upload first and upload the file (field: uploadToken)")
	}
	opts, err := in.options()
	if err != nil {
		return nil, faxes.DraftOptionsView{}, h.toolError(ctx, tool, err)
	}
	d, err := h.svc.Faxes.CreateDraft(ctx, p, faxes.CreateDraftRequest{To: in.To, UploadToken: in.UploadToken, Cover: in.Cover, CoverText: in.CoverText, From: in.From, Options: opts})
	if err != nil {
		return nil, faxes.DraftOptionsView{}, h.toolError(ctx, tool, err)
	}
	return nil, faxes.PresentDraftOptions(d, h.svc.Tasks.DraftCheckoutURL(&d.Draft)), nil
}

func (h *Handler) validate(ctx context.Context, _ *mcp.CallToolRequest, in validateIn) (*mcp.CallToolResult, core.Quote, error) {
	const tool = "validate_fax"
	p, err := principal(ctx)
	if err != nil {
		return nil, core.Quote{}, h.toolError(ctx, tool, err)
	}
	q, err := h.svc.Faxes.Quote(ctx, p, faxes.QuoteRequest{To: in.To, Pages: in.Pages, Cover: in.Cover})
	if err != nil {
		return nil, core.Quote{}, h.toolError(ctx, tool, err)
	}
	return nil, q, nil
}

func (h *Handler) sendFax(ctx context.Context, req *mcp.CallToolRequest, in sendIn) (*mcp.CallToolResult, faxes.FaxView, error) {
	const tool = "send_fax"
	p, err := principal(ctx)
	if err != nil {
		return nil, faxes.FaxView{}, h.toolError(ctx, tool, err)
	}
	if in.DraftID == "" {
		return nil, faxes.FaxView{}, errors.New("invalid_request: draftId is required; call create_fax_draft first")
	}
	cs, err := h.svc.Faxes.SendChatDraft(ctx, p, in.DraftID, approvalRef(req, in))
	if err != nil {
		return nil, faxes.FaxView{}, h.toolError(ctx, tool, err)
	}
	if cs.Fax == nil {
		res, err := h.askOwner(ctx, req, cs)
		return res, faxes.FaxView{}, err
	}
	out := faxes.PresentFax(cs.Fax)
	out.AlreadyPaid = cs.Replayed
	return nil, out, nil
}

func (h *Handler) getFax(ctx context.Context, _ *mcp.CallToolRequest, in getFaxIn) (*mcp.CallToolResult, faxes.FaxView, error) {
	const tool = "get_fax_status"
	p, err := principal(ctx)
	if err != nil {
		return nil, faxes.FaxView{}, h.toolError(ctx, tool, err)
	}
	o, err := h.svc.Faxes.Get(ctx, p, in.FaxID)
	if err != nil {
		return nil, faxes.FaxView{}, h.toolError(ctx, tool, err)
	}
	return nil, faxes.PresentFax(o), nil
}

// cancelFax cancels through core's one cancel rule (faxes.Cancel).
func (h *Handler) cancelFax(ctx context.Context, _ *mcp.CallToolRequest, in cancelFaxIn) (*mcp.CallToolResult, faxes.FaxView, error) {
	const tool = "cancel_fax"
	p, err := principal(ctx)
	if err != nil {
		return nil, faxes.FaxView{}, h.toolError(ctx, tool, err)
	}
	if in.FaxID == "" {
		return nil, faxes.FaxView{}, errors.New("invalid_request: faxId is required (field: faxId)")
	}
	o, err := h.svc.Faxes.Cancel(ctx, p, in.FaxID)
	if err != nil {
		return nil, faxes.FaxView{}, h.toolError(ctx, tool, err)
	}
	return nil, faxes.PresentFax(o), nil
}

func (h *Handler) listFaxes(ctx context.Context, _ *mcp.CallToolRequest, in listFaxesIn) (*mcp.CallToolResult, listFaxesOut, error) {
	const tool = "list_faxes"
	p, err := principal(ctx)
	if err != nil {
		return nil, listFaxesOut{}, h.toolError(ctx, tool, err)
	}
	page, err := h.svc.Faxes.List(ctx, p, faxes.ListRequest{Status: in.Status, CreatedFrom: in.CreatedFrom, CreatedTo: in.CreatedTo,
		StartingAfter: in.StartingAfter, Limit: in.Limit})
	if err != nil {
		return nil, listFaxesOut{}, h.toolError(ctx, tool, err)
	}
	out := listFaxesOut{Faxes: make([]faxes.FaxView, 0, len(page.Data)), HasMore: page.HasMore, NextCursor: page.Next}
	for i := range page.Data {
		out.Faxes = append(out.Faxes, faxes.PresentFax(&page.Data[i]))
	}
	return nil, out, nil
}

func (h *Handler) getCredits(ctx context.Context, _ *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, creditsOut, error) {
	const tool = "get_credits"
	p, err := principal(ctx)
	if err != nil {
		return nil, creditsOut{}, h.toolError(ctx, tool, err)
	}
	c, err := h.svc.Credits.Get(ctx, p, "", 1)
	if err != nil {
		return nil, creditsOut{}, h.toolError(ctx, tool, err)
	}
	return nil, creditsOut{Mode: string(p.Mode), Available: c.Available, AvailableCents: c.AvailableCents, Held: c.Held, Currency: c.Currency}, nil
}

func (h *Handler) creditCheckout(ctx context.Context, _ *mcp.CallToolRequest, in checkoutIn) (*mcp.CallToolResult, checkoutOut, error) {
	const tool = "create_credit_checkout"
	p, err := principal(ctx)
	if err != nil {
		return nil, checkoutOut{}, h.toolError(ctx, tool, err)
	}
	cs, err := h.svc.Checkout.StartCreditPack(ctx, p, in.PackID)
	if err != nil {
		return nil, checkoutOut{}, h.toolError(ctx, tool, err)
	}
	return nil, checkoutOut{CheckoutURL: cs.CheckoutURL, PackID: cs.PackID, Amount: cs.Amount, Credit: cs.Credit, Currency: cs.Currency, ExpiresAt: core.RFC3339(cs.ExpiresAt)}, nil
}
