package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/numbers"
	"github.com/faxhub/faxhub/core/web"
)

// skill is one entry of the card's skill table: what an agent sends as
// {"skill": id, "arguments": {…}}, the core operation whose scope gates it,
// the JSON Schema of its arguments and the struct they decode into.
type skill struct {
	ID, Name, Description string
	Tags, Examples        []string
	Op                    core.Operation
	// Task: the skill answers a Task (something the owner must do first),
	// not a Message.
	Task bool
	// AP2: the skill needs the AP2 extension activated.
	AP2    bool
	Schema map[string]any
	// newArgs returns a pointer to the skill's argument struct.
	newArgs func() any
}

// MaxFileNameBytes bounds create_upload's fileName (documents.MaxFileNameBytes).
const MaxFileNameBytes = documents.MaxFileNameBytes

// Argument structs: the JSON names must be exactly the schema's
// properties (a test checks it).
type (
	validateFaxArgs struct {
		To    string `json:"to"`
		Pages *int   `json:"pages"`
		Cover bool   `json:"cover"`
	}
	createUploadArgs struct {
		ContentType string `json:"contentType"`
		FileName    string `json:"fileName"`
	}
	// createFaxArgs: the draft and its send options (faxes.Options but
	// resendOf), under REST's names; core checks them all. SendAt is text
	// so that a malformed time is refused naming the field.
	createFaxArgs struct {
		To          string             `json:"to"`
		UploadToken string             `json:"uploadToken"`
		Cover       bool               `json:"cover"`
		CoverText   string             `json:"coverText"`
		From        string             `json:"from"`
		CoverPage   *faxes.CoverPage   `json:"coverPage"`
		Header      string             `json:"header"`
		Resolution  faxes.Resolution   `json:"resolution"`
		SendAt      string             `json:"sendAt"`
		Retry       *faxes.RetryPolicy `json:"retry"`
	}
	getFaxArgs struct {
		FaxID string `json:"faxId"`
	}
	listFaxesArgs struct {
		Status        string `json:"status"`
		CreatedFrom   string `json:"createdFrom"`
		CreatedTo     string `json:"createdTo"`
		StartingAfter string `json:"startingAfter"`
		Limit         int    `json:"limit"`
	}
	noArgs   struct{}
	packArgs struct {
		PackID string `json:"packId"`
	}
	buyCreditsArgs struct {
		PackID         string          `json:"packId"`
		PaymentMandate json.RawMessage `json:"paymentMandate"`
	}
	searchNumbersArgs struct {
		Country  string `json:"country"`
		AreaCode string `json:"areaCode"`
		Locality string `json:"locality"`
		Limit    int    `json:"limit"`
	}
	buyNumberArgs struct {
		Number string `json:"number"`
	}
	listNumbersArgs struct {
		All bool `json:"all"`
	}
	listInboxArgs struct {
		NumberID      string `json:"numberId"`
		StartingAfter string `json:"startingAfter"`
		Limit         int    `json:"limit"`
	}
	readInboxArgs struct {
		ID string `json:"id"`
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

const phiNote = " Never put protected health information (PHI) in arguments."

// skillTable is the skills in card order. packs are the credit packs on
// sale (named in the descriptions and the packId enum).
func skillTable(packs []core.CreditPack) []skill {
	packIDs := make([]string, 0, len(packs))
	packList := make([]string, 0, len(packs))
	for _, p := range packs {
		packIDs = append(packIDs, p.ID)
		packList = append(packList, fmt.Sprintf("%s ($%s for $%s of credit)", p.ID, p.Price, p.Credit))
	}
	packProp := map[string]any{"type": "string", "enum": packIDs, "description": "the credit pack: " + strings.Join(packList, "; ")}
	to := str("destination fax number in international (E.164) format, e.g. +14155550123")
	table := []skill{
		{
			ID: "validate_fax", Name: "Check a destination and price a fax", Op: core.OpQuote,
			Description: "Check that a fax number can be reached and price a number of pages to it. No side effects. Answers a message with the quote (amount in USD, billed pages, tariff)." + phiNote,
			Tags:        []string{"fax", "quote", "pricing"},
			Examples:    []string{`{"skill":"validate_fax","arguments":{"to":"+14155550123","pages":3}}`},
			Schema: object([]string{"to"}, map[string]any{
				"to":    to,
				"pages": map[string]any{"type": "integer", "minimum": 1, "default": 1, "description": "pages to price (default 1)"},
				"cover": map[string]any{"type": "boolean", "default": false, "description": "add a cover page"},
			}),
			newArgs: func() any { return &validateFaxArgs{} },
		},
		{
			ID: "create_upload", Name: "Create an upload for a document", Op: core.OpCreateUpload,
			Description: "Start uploading a document to fax (PDF, image or office file). Answers uploadPageUrl (give it to the user: a page where they pick the file) and uploadUrl, where you may PUT the raw bytes yourself without any Authorization header. Then call create_fax with the uploadToken." + phiNote,
			Tags:        []string{"fax", "upload", "document"},
			Examples:    []string{`{"skill":"create_upload","arguments":{}}`, `{"skill":"create_upload","arguments":{"contentType":"application/pdf"}}`},
			Schema: object(nil, map[string]any{
				"contentType": str("optional media type the file must have, e.g. application/pdf; omit to accept any supported type"),
				"fileName": map[string]any{"type": "string", "maxLength": MaxFileNameBytes,
					"description": fmt.Sprintf("optional file name, only shown to the user (at most %d bytes)", MaxFileNameBytes)},
			}),
			newArgs: func() any { return &createUploadArgs{} },
		},
		{
			ID: "create_fax", Name: "Draft a fax for the owner to pay", Op: core.OpCreateDraft, Task: true,
			Description: "Draft a fax of an uploaded document to a destination. Answers a task in TASK_STATE_INPUT_REQUIRED whose artifact fax-draft carries the quote and checkoutUrl: the owner reviews and pays for exactly this fax there (A2A never spends account credits). Follow it (SendStreamingMessage, SubscribeToTask, or poll GetTask): it becomes WORKING when paid and COMPLETED when delivered, with the fax as artifact. " +
				"Send options: coverPage (recipientName, recipientCompany, senderName, senderCompany, senderPhone, senderFax, subject, message; priced as one more page), header (the line at the top of every page, at most 50 characters), resolution (standard or fine, same price), sendAt (RFC 3339, at most 30 days ahead: once paid the fax is scheduled until then, and CancelTask before it starts cancels it), retry ({attempts 1-5, delayMinutes 1-30} for busy and unanswered calls). A mistake in any is invalid params naming the field." + phiNote,
			Tags: []string{"fax", "send", "checkout", "cover page", "schedule"},
			Examples: []string{`{"skill":"create_fax","arguments":{"to":"+14155550123","uploadToken":"<uploadToken from create_upload>"}}`,
				`{"skill":"create_fax","arguments":{"to":"+14155550123","uploadToken":"<uploadToken>","coverPage":{"recipientName":"Dr. Ada","subject":"Referral"},"header":"Acme Clinic","resolution":"fine","sendAt":"2026-05-01T09:00:00Z","retry":{"attempts":3,"delayMinutes":10}}}`},
			Schema: object([]string{"to", "uploadToken"}, withOptions(map[string]any{
				"to":          to,
				"uploadToken": str("the uploadToken of a completed upload (create_upload)"),
				"cover":       map[string]any{"type": "boolean", "default": false, "description": "add a cover page (with the owner's sender fields); coverPage implies it"},
				"coverText":   map[string]any{"type": "string", "maxLength": faxes.MaxCoverText, "description": "short note for the cover page (needs cover true; or coverPage.message); never PHI"},
				"from":        str("optional sender: one of the owner's active fax numbers (E.164 or its id, see list_numbers); omit for the default sender"),
			})),
			newArgs: func() any { return &createFaxArgs{} },
		},
		{
			ID: "get_fax", Name: "Get a fax's status", Op: core.OpGetFax,
			Description: "Get one fax: status (scheduled, queued, sending, delivered, partial, failed, canceled), pages sent, price, the latest delivery attempt and the send options (coverPage, header, resolution, sendAt, retry).",
			Tags:        []string{"fax", "status"},
			Examples:    []string{`{"skill":"get_fax","arguments":{"faxId":"fax_..."}}`},
			Schema:      object([]string{"faxId"}, map[string]any{"faxId": str("the fax id (a task's fax artifact, list_faxes)")}),
			newArgs:     func() any { return &getFaxArgs{} },
		},
		{
			ID: "list_faxes", Name: "List sent faxes", Op: core.OpListFaxes,
			Description: "List the owner's sent faxes, newest first, optionally by status and by the period they were created in (createdFrom, createdTo); page with startingAfter = nextCursor.",
			Tags:        []string{"fax", "list", "history"},
			Examples:    []string{`{"skill":"list_faxes","arguments":{"limit":10}}`, `{"skill":"list_faxes","arguments":{"status":"delivered"}}`},
			Schema: object(nil, map[string]any{
				"status":        map[string]any{"type": "string", "enum": []string{"scheduled", "queued", "sending", "delivered", "partial", "failed", "canceled"}, "description": "only faxes in this status"},
				"createdFrom":   str("only faxes created at or after this: a date (2026-11-29, from its start in UTC) or an RFC 3339 time"),
				"createdTo":     str("only faxes created before this: a date (2026-11-29, that whole day in UTC included) or an RFC 3339 time"),
				"startingAfter": str("nextCursor of the previous page"),
				"limit":         map[string]any{"type": "integer", "minimum": 1, "maximum": 100, "default": 20, "description": "page size"},
			}),
			newArgs: func() any { return &listFaxesArgs{} },
		},
		{
			ID: "get_credits", Name: "Get the credit balance", Op: core.OpGetCredits,
			Description: "Get the owner's fax credit balance (USD that can be spent now), what is held for faxes in flight, and the credit packs on sale.",
			Tags:        []string{"credits", "balance"},
			Examples:    []string{`{"skill":"get_credits","arguments":{}}`},
			Schema:      object(nil, map[string]any{}),
			newArgs:     func() any { return &noArgs{} },
		},
		{
			ID: "create_credit_checkout", Name: "Create a checkout page for credits", Op: core.OpCreditCheckout,
			Description: "Create a hosted checkout page for a credit pack; give checkoutUrl to the owner, who pays there. No task follows it: read the balance with get_credits after paying.",
			Tags:        []string{"credits", "checkout", "payment"},
			Examples:    []string{`{"skill":"create_credit_checkout","arguments":{"packId":"` + first(packIDs) + `"}}`},
			Schema:      object([]string{"packId"}, map[string]any{"packId": packProp}),
			newArgs:     func() any { return &packArgs{} },
		},
		{
			ID: "buy_credits", Name: "Buy credits under an AP2 mandate", Op: core.OpBuyCredits, Task: true, AP2: true,
			Description: "Buy a credit pack with AP2 (activate the extension " + ExtensionAP2 + "; needs credits:checkout). Answers a task in TASK_STATE_INPUT_REQUIRED with artifact ap2.mandates.CartMandate, signed by faxhub (verify it at the JWKS). Answer on that task (message.taskId) with an ap2.mandates.PaymentMandate data part, or this skill with arguments.paymentMandate; the owner then approves the exact charge with a passkey at approvalUrl, and the task completes with a receipt artifact.",
			Tags:        []string{"credits", "ap2", "payment", "mandate"},
			Examples: []string{`{"skill":"buy_credits","arguments":{"packId":"` + first(packIDs) + `"}}`,
				`{"skill":"buy_credits","arguments":{"paymentMandate":{"payment_mandate_contents":{"payment_mandate_id":"pm_1","payment_details_id":"cart_...","payment_details_total":{"label":"Total","amount":{"currency":"USD","value":10}},"payment_response":{"request_id":"cart_...","method_name":"card","details":{"token":"tok_visa"}},"merchant_agent":"faxhub","timestamp":"2026-01-01T00:00:00Z"}}}}`},
			Schema: map[string]any{"type": "object", "additionalProperties": false,
				"description": "packId to start a purchase; paymentMandate (on the purchase's task) to pay for its cart",
				"oneOf":       []any{map[string]any{"required": []string{"packId"}}, map[string]any{"required": []string{"paymentMandate"}}},
				"properties": map[string]any{
					"packId":         packProp,
					"paymentMandate": map[string]any{"type": "object", "description": "an AP2 v0.1 ap2.mandates.PaymentMandate for the task's cart; send it with message.taskId set"},
				}},
			newArgs: func() any { return &buyCreditsArgs{} },
		},
		{
			ID: "search_numbers", Name: "Search fax numbers to rent", Op: core.OpSearchNumbers,
			Description: "Search fax numbers the owner can rent (in the token's mode) by country, area code or locality, each with its monthly price. No side effects; then buy_number with one of them.",
			Tags:        []string{"numbers", "search", "inbound"},
			Examples:    []string{`{"skill":"search_numbers","arguments":{"areaCode":"415","limit":5}}`},
			Schema: object(nil, map[string]any{
				"country":  str("ISO 3166-1 alpha-2 country code (default US)"),
				"areaCode": map[string]any{"type": "string", "pattern": "^[0-9]{1,6}$", "description": "area code, digits only"},
				"locality": map[string]any{"type": "string", "maxLength": numbers.MaxLocality, "description": "city or town, matched by prefix"},
				"limit":    map[string]any{"type": "integer", "minimum": 1, "maximum": numbers.MaxSearchLimit, "default": 20, "description": "most numbers to return"},
			}),
			newArgs: func() any { return &searchNumbersArgs{} },
		},
		{
			ID: "buy_number", Name: "Reserve a fax number for the owner to pay", Op: core.OpBuyNumber, Task: true,
			Description: "Reserve a number from search_numbers for the owner. Answers a task in TASK_STATE_INPUT_REQUIRED whose status data carries the number and checkoutUrl: the owner pays the first month there (A2A never spends account credits; the reservation lapses at reservedUntil). Follow it (SendStreamingMessage, SubscribeToTask, or poll GetTask): WORKING while the provider provisions it, COMPLETED when it is active, with the number as artifact. CancelTask before payment gives the reservation back.",
			Tags:        []string{"numbers", "buy", "checkout"},
			Examples:    []string{`{"skill":"buy_number","arguments":{"number":"+14155550100"}}`},
			Schema:      object([]string{"number"}, map[string]any{"number": str("the number to rent, in E.164, from search_numbers")}),
			newArgs:     func() any { return &buyNumberArgs{} },
		},
		{
			ID: "list_numbers", Name: "List the owner's fax numbers", Op: core.OpListNumbers,
			Description: "List the owner's fax numbers in the token's mode, newest first: status (awaiting_payment with its checkoutUrl, pending, active, past_due), monthly price, paid-through date. all: true also lists released, failed and unpaid ones.",
			Tags:        []string{"numbers", "list"},
			Examples:    []string{`{"skill":"list_numbers","arguments":{}}`},
			Schema:      object(nil, map[string]any{"all": map[string]any{"type": "boolean", "default": false, "description": "also list numbers no longer held"}}),
			newArgs:     func() any { return &listNumbersArgs{} },
		},
		{
			ID: "list_inbox", Name: "List received faxes", Op: core.OpListInbox,
			Description: "List faxes received on the owner's numbers, newest first, each with a preview of its text; optionally one number's (numberId); page with startingAfter = nextCursor. Read one whole with read_inbox_fax." + phiNote,
			Tags:        []string{"inbox", "inbound", "list"},
			Examples:    []string{`{"skill":"list_inbox","arguments":{"limit":10}}`},
			Schema: object(nil, map[string]any{
				"numberId":      str("only faxes received on this number (its id from list_numbers)"),
				"startingAfter": str("nextCursor of the previous page"),
				"limit":         map[string]any{"type": "integer", "minimum": 1, "maximum": 100, "default": 20, "description": "page size"},
			}),
			newArgs: func() any { return &listInboxArgs{} },
		},
		{
			ID: "read_inbox_fax", Name: "Read a received fax", Op: core.OpReadInbox,
			Description: "Read one received fax as text: sender, pages, its text (textStatus and textNote say plainly what could not be read, e.g. scanned pages without OCR) and downloadUrl, a link to the PDF valid a few minutes for the user. Never the pages' pixels or bytes." + phiNote,
			Tags:        []string{"inbox", "inbound", "text"},
			Examples:    []string{`{"skill":"read_inbox_fax","arguments":{"id":"inb_..."}}`},
			Schema:      object([]string{"id"}, map[string]any{"id": str("the received fax's id from list_inbox")}),
			newArgs:     func() any { return &readInboxArgs{} },
		},
	}
	i := slices.IndexFunc(table, func(s skill) bool { return s.ID == "list_faxes" })
	return slices.Insert(table, i+1, proofSkills()...)
}

// withOptions adds the send options (core's schema, bounds included) to
// a skill's properties.
func withOptions(props map[string]any) map[string]any {
	for k, v := range faxes.OptionsSchema(false) {
		props[k] = v
	}
	return props
}

// options is the arguments' send options for core.
func (a *createFaxArgs) options(skill string) (faxes.Options, error) {
	o := faxes.Options{CoverPage: a.CoverPage, Header: a.Header, Resolution: a.Resolution, Retry: a.Retry}
	if a.SendAt != "" {
		at, err := time.Parse(time.RFC3339, a.SendAt)
		if err != nil {
			return faxes.Options{}, invalidParams("the argument \"sendAt\" of "+skill+" must be an RFC 3339 time, such as 2026-05-01T09:00:00Z",
				map[string]any{"skill": skill, "field": "sendAt"})
		}
		o.SendAt = &at
	}
	return o, nil
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

func (h *Handler) skill(id string) (skill, bool) {
	i := slices.IndexFunc(h.skills, func(s skill) bool { return s.ID == id })
	if i < 0 {
		return skill{}, false
	}
	return h.skills[i], true
}

func (h *Handler) skillIDs() []string {
	ids := make([]string, len(h.skills))
	for i, s := range h.skills {
		ids[i] = s.ID
	}
	return ids
}

// decodeArgs decodes a skill's arguments strictly into its struct: an
// object whose names are exactly the schema's properties (no unknown or
// differently-cased names), of the right types, with the required ones
// present. The error names the failing field.
func decodeArgs(s skill, raw any) (any, error) {
	if raw == nil {
		raw = map[string]any{}
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, invalidParams(fmt.Sprintf("arguments of %s must be a JSON object", s.ID), map[string]any{"skill": s.ID, "field": "arguments"})
	}
	props, _ := s.Schema["properties"].(map[string]any)
	allowed := make([]string, 0, len(props))
	for k := range props {
		allowed = append(allowed, k)
	}
	sort.Strings(allowed)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Contains(allowed, k) {
			return nil, invalidParams(fmt.Sprintf("%s has no argument %q; its arguments are: %s", s.ID, k, strings.Join(allowed, ", ")),
				map[string]any{"skill": s.ID, "field": k, "arguments": allowed})
		}
	}
	if req, ok := s.Schema["required"].([]string); ok {
		for _, k := range req {
			if v, ok := m[k]; !ok || v == nil || v == "" {
				return nil, invalidParams(fmt.Sprintf("%s needs the argument %q", s.ID, k), map[string]any{"skill": s.ID, "field": k})
			}
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, invalidParams("arguments could not be read: "+err.Error(), map[string]any{"skill": s.ID})
	}
	out := s.newArgs()
	// A nested member unknown to the struct (coverPage.faxNumber) is
	// named by its path; the decoder would name it without one.
	if p := web.UnknownMember(b, out); p != "" {
		return nil, invalidParams(fmt.Sprintf("%s has no argument %s", s.ID, p), map[string]any{"skill": s.ID, "field": p})
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, invalidParams(fmt.Sprintf("the argument %q of %s must be a %s", te.Field, s.ID, jsonType(te.Type.Kind().String())),
				map[string]any{"skill": s.ID, "field": te.Field})
		}
		return nil, invalidParams(fmt.Sprintf("arguments of %s are invalid: %v", s.ID, err), map[string]any{"skill": s.ID})
	}
	return out, nil
}

// jsonType names a Go kind the way a JSON Schema does.
func jsonType(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "int", "int64", "int32", "ptr":
		return "integer"
	case "slice":
		return "object (raw JSON)"
	}
	return kind
}
