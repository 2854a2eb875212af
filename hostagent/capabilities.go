package hostagent

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/hosts"
)

// capability is one row of the capability table: what discovery and the
// grants show (name, description, input and output JSON Schemas) and the
// struct its arguments decode into strictly.
type capability struct {
	Name        hosts.Capability
	Description string
	Input       map[string]any
	Output      map[string]any
	// Async: the capability answers 202 pending (send_fax).
	Async bool
	// newArgs returns a pointer to the capability's argument struct; its
	// JSON names are exactly Input's properties (a test checks it).
	newArgs func() any
}

// Argument structs (snake_case, as the protocol's own fields).
type (
	validateFaxArgs struct {
		To         string `json:"to"`
		Pages      *int   `json:"pages"`
		DocumentID string `json:"document_id"`
		Cover      bool   `json:"cover"`
		CoverText  string `json:"cover_text"`
	}
	createUploadArgs struct {
		ContentType string `json:"content_type"`
		MaxBytes    int64  `json:"max_bytes"`
	}
	sendFaxArgs struct {
		To            string `json:"to"`
		DocumentID    string `json:"document_id"`
		UploadToken   string `json:"upload_token"`
		ContentBase64 string `json:"content_base64"`
		Cover         bool   `json:"cover"`
		CoverText     string `json:"cover_text"`
		// The send options, snake_case (faxes.OptionsSchema(true));
		// core checks them. SendAt is text so that a malformed time is
		// refused naming the field.
		CoverPage  *coverPageArgs `json:"cover_page"`
		Header     string         `json:"header"`
		Resolution string         `json:"resolution"`
		SendAt     string         `json:"send_at"`
		Retry      *retryArgs     `json:"retry"`
	}
	coverPageArgs struct {
		RecipientName    string `json:"recipient_name"`
		RecipientCompany string `json:"recipient_company"`
		SenderName       string `json:"sender_name"`
		SenderCompany    string `json:"sender_company"`
		SenderPhone      string `json:"sender_phone"`
		SenderFax        string `json:"sender_fax"`
		Subject          string `json:"subject"`
		Message          string `json:"message"`
	}
	retryArgs struct {
		Attempts     int `json:"attempts"`
		DelayMinutes int `json:"delay_minutes"`
	}
	getFaxStatusArgs struct {
		FaxID string `json:"fax_id"`
	}
	listInboxArgs struct {
		NumberID      string `json:"number_id"`
		StartingAfter string `json:"starting_after"`
		Limit         int    `json:"limit"`
	}
	readInboxArgs struct {
		ID string `json:"id"`
	}
	noArgs       struct{}
	checkoutArgs struct {
		Pack string `json:"pack"`
	}
)

func str(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }

func object(required []string, props map[string]any) map[string]any {
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// withOptions adds the send options (core's schema in snake_case, bounds
// included) to a capability's input properties.
func withOptions(props map[string]any) map[string]any {
	for k, v := range faxes.OptionsSchema(true) {
		props[k] = v
	}
	return props
}

// options is the arguments' send options for core.
func (a *sendFaxArgs) options() (faxes.Options, error) {
	o := faxes.Options{Header: a.Header, Resolution: faxes.Resolution(a.Resolution)}
	if c := a.CoverPage; c != nil {
		o.CoverPage = &faxes.CoverPage{RecipientName: c.RecipientName, RecipientCompany: c.RecipientCompany, SenderName: c.SenderName,
			SenderCompany: c.SenderCompany, SenderPhone: c.SenderPhone, SenderFax: c.SenderFax, Subject: c.Subject, Message: c.Message}
	}
	if r := a.Retry; r != nil {
		o.Retry = &faxes.RetryPolicy{Attempts: r.Attempts, DelayMinutes: r.DelayMinutes}
	}
	if a.SendAt != "" {
		at, err := time.Parse(time.RFC3339, a.SendAt)
		if err != nil {
			return faxes.Options{}, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "send_at must be an RFC 3339 time, such as 2026-05-01T09:00:00Z").With("field", "send_at")
		}
		o.SendAt = &at
	}
	return o, nil
}

func outObject(props map[string]any) map[string]any {
	return map[string]any{"type": "object", "properties": props}
}

const phiNote = " Never put protected health information (PHI) in arguments or cover text."

// capabilityTable lists the capabilities in hosts.Capabilities() order
// (a test checks both agree). packs are the credit packs on sale.
func capabilityTable(packs []core.CreditPack) []capability {
	packIDs := make([]string, 0, len(packs))
	packList := make([]string, 0, len(packs))
	for _, p := range packs {
		packIDs = append(packIDs, p.ID)
		packList = append(packList, fmt.Sprintf("%s ($%s for $%s of credit)", p.ID, p.Price, p.Credit))
	}
	to := str("destination fax number in international (E.164) format, e.g. +14155550123")
	cover := map[string]any{"type": "boolean", "default": false, "description": "add a cover page"}
	coverText := map[string]any{"type": "string", "maxLength": 1000, "description": "short note for the cover page (needs cover true); never PHI"}
	docID := str("id of a document already uploaded (document.id in the answer of the PUT to upload_url)")
	quote := outObject(map[string]any{
		"to": str("the destination in E.164"), "country": str("ISO 3166-1 alpha-2"), "pages": map[string]any{"type": "integer"},
		"cover": map[string]any{"type": "boolean"}, "billed_pages": map[string]any{"type": "integer"},
		"amount": str("price in USD, decimal"), "amount_cents": map[string]any{"type": "integer"}, "currency": str("USD"), "tariff": str("tariff name"),
	})
	fax := outObject(map[string]any{
		"fax_id": str("fax id"), "status": map[string]any{"type": "string", "enum": []string{"scheduled", "queued", "sending", "delivered", "partial", "failed", "canceled"}},
		"to": str("destination"), "pages": map[string]any{"type": "integer"}, "pages_sent": map[string]any{"type": "integer"},
		"price": str("USD, decimal"), "currency": str("USD"), "attempts": map[string]any{"type": "integer"},
		"failure_code": str("why it failed, when it did"), "failure_reason": str("human-readable failure"),
		"created_at": str("RFC 3339"), "completed_at": str("RFC 3339, when finished"),
		"cover_page": map[string]any{"type": "object", "description": "the cover page's fields, when it has one"}, "header": str("the header line's text, when given"),
		"resolution": str("standard or fine"), "send_at": str("RFC 3339: when a scheduled fax goes out"),
		"retry": map[string]any{"type": "object", "description": "attempts and delay_minutes, when given"},
	})
	return []capability{
		{
			Name:        hosts.CapValidateFax,
			Description: "Check that a fax number can be reached and price a fax to it, without side effects. Price a number of pages, or a document already uploaded (document_id: its pages are counted). Answers the quote." + phiNote,
			Input: object([]string{"to"}, map[string]any{
				"to":          to,
				"pages":       map[string]any{"type": "integer", "minimum": 1, "default": 1, "description": "pages to price (default 1; not with document_id)"},
				"document_id": docID,
				"cover":       cover,
				"cover_text":  coverText,
			}),
			Output:  quote,
			newArgs: func() any { return &validateFaxArgs{} },
		},
		{
			Name:        hosts.CapCreateUpload,
			Description: "Create a one-use upload for a document to fax (PDF, image or office file). PUT the raw bytes to upload_url with no Authorization header (the token in the URL is the credential); its answer's document.id is send_fax's document_id. Or pass upload_token to send_fax once the PUT has completed." + phiNote,
			Input: object(nil, map[string]any{
				"content_type": str("optional media type the file must have, e.g. application/pdf"),
				"max_bytes":    map[string]any{"type": "integer", "minimum": 1, "description": "optional bound on the file size (default and maximum: the server's upload limit)"},
			}),
			Output: outObject(map[string]any{
				"upload_url": str("PUT the file here, without Authorization"), "upload_token": str("the upload's token"),
				"method": str("PUT"), "expires_at": str("RFC 3339"), "max_bytes": map[string]any{"type": "integer"}, "content_type": str("media type the PUT must carry, if limited"),
			}),
			newArgs: func() any { return &createUploadArgs{} },
		},
		{
			Name: hosts.CapSendFax, Async: true,
			Description: "Ask the owner to send a fax. Never autonomous: every call creates an approval bound to this exact fax (document, destination, pages, cover page, header, resolution, send_at, retry, price) that the owner answers with a passkey. Answers 202 pending with status_url (poll it with a fresh agent JWT): sent (with the fax), declined or expired. Paid with the owner's credits only when approved; declined or expired sends charge nothing. Give exactly one of document_id, upload_token (a completed upload) or content_base64 (a tiny file, at most 256 KiB decoded; needs the create_upload capability too). " +
				"Send options: cover_page (recipient_name, recipient_company, sender_name, sender_company, sender_phone, sender_fax, subject, message; priced as one more page), header (at most 50 characters), resolution (standard or fine, same price), send_at (RFC 3339, at most 30 days ahead: once approved the fax is scheduled until then; approved later, it goes at once), retry ({attempts 1-5, delay_minutes 1-30} for busy and unanswered calls). A mistake in any is a 400 naming the field." + phiNote,
			Input: object([]string{"to"}, withOptions(map[string]any{
				"to":             to,
				"document_id":    docID,
				"upload_token":   str("the upload_token of a completed upload (create_upload, then PUT)"),
				"content_base64": map[string]any{"type": "string", "contentEncoding": "base64", "description": fmt.Sprintf("the whole file, standard base64, at most %d bytes decoded", hosts.MaxInlineDocumentBytes)},
				"cover":          cover,
				"cover_text":     coverText,
			})),
			Output: outObject(map[string]any{
				"status": map[string]any{"type": "string", "enum": []string{"pending"}}, "status_url": str("poll with a fresh agent JWT"),
				"id": str("the send request id (dsn_…)"), "approval_id": str("the owner's approval"), "expires_at": str("RFC 3339: the owner must decide before"),
				"approval_url": str("the owner's page of the approval (their inbox lists it too): show it to the owner"),
				"send":         map[string]any{"type": "object", "description": "what the owner is asked to approve: id, to, country, pages, cover, document_id, document_sha256, price, currency, created_at, expires_at, and the send options as checked (cover_page with the owner's sender fields, header, resolution, send_at, retry)"},
			}),
			newArgs: func() any { return &sendFaxArgs{} },
		},
		{
			Name:        hosts.CapGetFaxStatus,
			Description: "Get one fax's delivery status (queued, sending, delivered, partial, failed, canceled), pages sent and failure reason.",
			Input:       object([]string{"fax_id"}, map[string]any{"fax_id": str("the fax id (from a sent send_fax status)")}),
			Output:      fax,
			newArgs:     func() any { return &getFaxStatusArgs{} },
		},
		{
			Name:        hosts.CapGetCredits,
			Description: "Get the owner's credit balance: USD that can be spent now and USD held for faxes in flight.",
			Input:       object(nil, map[string]any{}),
			Output: outObject(map[string]any{
				"mode": str("test or live"), "balance": str("USD available"), "balance_cents": map[string]any{"type": "integer"},
				"held": str("USD held"), "held_cents": map[string]any{"type": "integer"}, "currency": str("USD"),
			}),
			newArgs: func() any { return &noArgs{} },
		},
		{
			Name:        hosts.CapCreateCreditCheckout,
			Description: "Create a hosted checkout page for a credit pack; give checkout_url to the owner, who pays there. Packs: " + strings.Join(packList, "; ") + ".",
			Input:       object([]string{"pack"}, map[string]any{"pack": map[string]any{"type": "string", "enum": packIDs, "description": "the credit pack to buy"}}),
			Output: outObject(map[string]any{
				"checkout_url": str("the owner pays here"), "pack": str("pack id"), "amount": str("USD"), "credit": str("USD of credit"),
				"currency": str("USD"), "expires_at": str("RFC 3339"),
			}),
			newArgs: func() any { return &checkoutArgs{} },
		},
		{
			Name:        hosts.CapListInbox,
			Description: "List the faxes the owner received on their numbers, newest first: sender, number, pages, status and a preview of each one's text. Page with starting_after (the last id of a page)." + phiNote,
			Input: object(nil, map[string]any{
				"number_id":      str("only faxes received on this number (num_…)"),
				"starting_after": str("continue after this received fax id"),
				"limit":          map[string]any{"type": "integer", "minimum": 1, "maximum": core.MaxListLimit, "description": "page size (default 20)"},
			}),
			Output: outObject(map[string]any{
				"faxes":       map[string]any{"type": "array", "items": map[string]any{"type": "object", "description": "id, number_id, from, to, pages, status, text_status, text_preview, received_at"}},
				"has_more":    map[string]any{"type": "boolean"},
				"next_cursor": str("starting_after for the next page"),
			}),
			newArgs: func() any { return &listInboxArgs{} },
		},
		{
			Name:        hosts.CapReadInboxFax,
			Description: "Read one received fax: its text (text_status and text_note say plainly what could not be read, e.g. scanned pages without OCR) and download_url, a link to the PDF that works for a few minutes. The document itself is never returned." + phiNote,
			Input:       object([]string{"id"}, map[string]any{"id": str("the received fax id (inb_…)")}),
			Output: outObject(map[string]any{
				"id": str("inb_…"), "number_id": str("num_…"), "from": str("sender"), "to": str("the owner's number"),
				"pages": map[string]any{"type": "integer"}, "status": str("receiving, received or failed"), "received_at": str("RFC 3339"),
				"text": str("the fax's text, pages separated by form feeds"), "text_status": str("extracted, ocr_unavailable, empty, truncated or failed"),
				"text_method": str("text, ocr, text+ocr or none"), "text_note": str("what could not be read, in words"),
				"download_url": str("the PDF, for a few minutes (received faxes only)"), "download_expires_at": str("RFC 3339"),
			}),
			newArgs: func() any { return &readInboxArgs{} },
		},
	}
}

// capability returns the table row of name.
func (h *Handler) capability(name string) (capability, bool) {
	i := slices.IndexFunc(h.caps, func(c capability) bool { return string(c.Name) == name })
	if i < 0 {
		return capability{}, false
	}
	return h.caps[i], true
}

// capabilityJSON is a capability as discovery and active grants show it.
func (c capability) json() map[string]any {
	return map[string]any{"name": c.Name, "description": c.Description, "input": c.Input, "output": c.Output}
}
