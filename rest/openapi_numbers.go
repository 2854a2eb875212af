package rest

import (
	"fmt"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/inbox"
	"github.com/faxhub/faxhub/core/numbers"
	"github.com/faxhub/faxhub/core/services"
)

// The numbers and inbox operations of /openapi.json. Each operation names
// the scope core requires of it (core.ScopeFor), in its security
// requirement and its description, so the document cannot disagree with
// the authorization table.

// numberCodes are the problem codes of the numbers and inbox operations.
func numberCodes() map[string]string {
	return map[string]string{
		numbers.CodeNumberUnavailable:    "+12125550142 is not available; search again",
		numbers.CodeNumberState:          "this number is released already",
		core.CodeNumbersNotOffered:       "faxhub does not rent fax numbers in FR",
		numbers.CodeTooManyNumbers:       "this account has 3 numbers waiting for payment; pay or cancel one first",
		numbers.CodeFromNumberNotOwned:   "from must be one of your active test-mode fax numbers",
		numbers.CodeProviderFailed:       "the fax provider could not search numbers just now; try again shortly",
		numbers.CodeNumbersNotConfigured: "live-mode fax numbers are not configured on this server (docs/providers.md)",
		inbox.CodeTestModeOnly:           "only a test-mode API key can simulate a received fax; live faxes arrive from the provider",
		inbox.CodeDownloadLink:           "this download link is expired",
		inbox.CodeNumberNotReceiving:     "+12125550142 is released and does not receive faxes",
		faxes.CodeMediaLinkInvalid:       "this media link is for a fax that is no longer being sent",
	}
}

// scoped is the security requirement and description sentence of an
// operation that core gates with op's scope: an API key (whose scopes are
// all of them) or an OAuth access token granted that scope.
func scoped(op core.Operation) ([]any, string) {
	sc := string(core.ScopeFor(op))
	return []any{obj{"apiKey": []string{sc}}, obj{"oauth2": []string{sc}}}, " Needs the " + sc + " scope."
}

// withScope sets o's security and appends the scope to its description.
func withScope(op core.Operation, o obj) obj {
	sec, sentence := scoped(op)
	o["security"] = sec
	desc, _ := o["description"].(string)
	o["description"] = desc + sentence
	return o
}

func (s *specBuilder) numberPaths(opts Options, cfg services.Config, limit obj) obj {
	const (
		ts     = "2026-01-02T15:04:05Z"
		numID  = "num_4b6d8f0h2k4m6p8r0t2v4x6z8b"
		inbID  = "inb_6d8f0h2k4m6p8r0t2v4x6z8b0d"
		e164   = "+12125550142"
		sender = "+14155550100"
	)
	available := obj{"number": e164, "country": "US", "region": "NY", "locality": "New York", "monthlyPrice": "2.00", "monthlyCents": 200, "currency": "usd"}
	awaiting := obj{"id": numID, "mode": "test", "number": e164, "country": "US", "region": "NY", "locality": "New York",
		"status": "awaiting_payment", "provider": "simulated", "reservedUntil": "2026-01-02T16:04:05Z", "createdAt": ts, "updatedAt": ts,
		"monthlyPrice": "2.00", "monthlyCents": 200, "currency": "usd", "checkoutUrl": opts.BaseURL + "/console/numbers/" + numID + "?mode=test"}
	active := obj{"id": numID, "mode": "test", "number": e164, "country": "US", "region": "NY", "locality": "New York",
		"status": "active", "provider": "simulated", "paidThrough": "2026-02-02T15:04:05Z", "activatedAt": ts, "createdAt": ts, "updatedAt": ts,
		"monthlyPrice": "2.00", "monthlyCents": 200, "currency": "usd"}
	pendingNum := obj{"id": numID, "mode": "test", "number": e164, "country": "US", "region": "NY", "locality": "New York",
		"status": "pending", "provider": "simulated", "paidThrough": "2026-02-02T15:04:05Z", "createdAt": ts, "updatedAt": ts,
		"monthlyPrice": "2.00", "monthlyCents": 200, "currency": "usd"}
	released := obj{}
	for k, v := range active {
		released[k] = v
	}
	released["status"], released["releasedAt"] = "released", ts
	received := obj{"id": inbID, "mode": "test", "numberId": numID, "from": sender, "to": e164, "pages": 1, "status": "received",
		"provider": "simulated", "bytes": 48213, "text": "INVOICE 2026-001\nAmount due: 120.00 USD", "textStatus": "extracted", "textMethod": "text",
		"receivedAt": ts, "createdAt": ts, "updatedAt": ts, "processedAt": ts}
	listed := obj{}
	for k, v := range received {
		listed[k] = v
	}
	delete(listed, "text")
	listed["textPreview"] = "INVOICE 2026-001\nAmount due: 120.00 USD"
	receiving := obj{"id": inbID, "mode": "test", "numberId": numID, "from": sender, "to": e164, "pages": 0, "status": "receiving",
		"provider": "simulated", "bytes": 0, "receivedAt": ts, "createdAt": ts, "updatedAt": ts}

	numberIDParam := pathParam("id", "the number id (num_…)")
	inboxIDParam := pathParam("id", "the received fax id (inb_…)")
	notFound := e(404, core.CodeNotFound)
	release := func(id string) obj {
		return withScope(core.OpReleaseNumber, obj{
			"operationId": id, "tags": []string{"numbers"},
			"summary":     "Release a number (or cancel an unpaid one)",
			"description": "Gives the number back to the provider; faxes to it are no longer received. The rest of a paid month is not refunded. An awaiting_payment number is canceled instead. A pending number (being provisioned) cannot be released until it is active (409 number_not_in_state), nor can one that is released, failed or canceled already.",
			"parameters":  []any{numberIDParam},
			"responses": s.responses(s.jsonResponse("the released (or canceled) number", "Number", released), authErrs(),
				[]errs{notFound, e(409, numbers.CodeNumberState), e(503, numbers.CodeProviderFailed, numbers.CodeNumbersNotConfigured)}),
		})
	}
	return obj{
		"/api/v1/numbers/available": obj{"get": withScope(core.OpSearchNumbers, obj{
			"operationId": "searchNumbers", "tags": []string{"numbers"},
			"summary":     "Search fax numbers that can be rented",
			"description": fmt.Sprintf("Asks the provider of the key's mode (the simulator in test mode) for fax-capable numbers, less those someone here holds, each priced per month. A search is a call to the provider, so it is rate-limited per owner. Results are at most limit (default %d, at most %d).", 20, numbers.MaxSearchLimit),
			"parameters": []any{
				queryParam("country", "ISO 3166-1 alpha-2 country code (default US)", obj{"type": "string", "pattern": "^[A-Za-z]{2}$", "default": "US"}),
				queryParam("areaCode", "the area code (NANP area code; UK area code without its leading 0), digits only", obj{"type": "string", "pattern": fmt.Sprintf("^[0-9]{1,%d}$", numbers.MaxAreaCode)}),
				queryParam("locality", "city or town, matched case-insensitively by prefix", obj{"type": "string", "maxLength": numbers.MaxLocality}),
				queryParam("limit", fmt.Sprintf("at most this many results, 1 to %d", numbers.MaxSearchLimit), obj{"type": "integer", "minimum": 1, "maximum": numbers.MaxSearchLimit}),
			},
			"responses": s.responses(s.jsonResponse("numbers that can be bought", "AvailableNumberList", obj{"data": []any{available}}), authErrs(),
				[]errs{e(422, core.CodeNumbersNotOffered), e(429, core.CodeRateLimited), e(503, numbers.CodeProviderFailed, numbers.CodeNumbersNotConfigured)}),
		})},
		"/api/v1/numbers": obj{
			"post": withScope(core.OpBuyNumber, obj{
				"operationId": "buyNumber", "tags": []string{"numbers"},
				"summary":     "Buy a number: reserve it and get the checkout link of its first month",
				"description": fmt.Sprintf("Reserves a number from searchNumbers for the key's owner and returns it awaiting_payment with checkoutUrl, where the owner (a person, signed in to the console) pays its first month; it is reserved for %d minutes (longer while a checkout is open). No credits are spent, unless payWithCredits is true (which needs the "+string(core.ScopeFor(core.OpBuyNumberWithCredits))+" scope): then the first month is paid from the balance at once (402 insufficient_credits when it does not cover it) and the number is returned pending, with no checkoutUrl. Once paid it is pending while the provider provisions it, then active (or failed, with the month returned as credits). Later months are paid from the account's credits; without enough credits the number goes past_due and is released after a grace period.", int(cfg.Checkout.TTL.Minutes())),
				"requestBody": jsonRequest("BuyNumberRequest", true, obj{"number": e164}),
				"responses": s.responses(s.jsonResponse("the reserved number", "Number", awaiting), authErrs(), []errs{
					e(402, credits.CodeInsufficientCredits), e(409, numbers.CodeNumberUnavailable, numbers.CodeTooManyNumbers), e(415, core.CodeUnsupportedContentType),
					e(422, core.CodeInvalidDestination, core.CodePremiumDestination, core.CodeUnsupportedDestination, core.CodeNumbersNotOffered),
					e(429, core.CodeRateLimited), e(503, numbers.CodeProviderFailed, numbers.CodeNumbersNotConfigured),
				}),
			}),
			"get": withScope(core.OpListNumbers, obj{
				"operationId": "listNumbers", "tags": []string{"numbers"},
				"summary":     "List your numbers, newest first",
				"description": "The numbers of the key's mode that the owner holds (awaiting_payment, pending, active, past_due); with all=true also the released, failed and canceled ones. Not paginated: an account holds a bounded number of numbers.",
				"parameters":  []any{queryParam("all", "also list numbers no longer held", obj{"type": "boolean", "default": false})},
				"responses":   s.responses(s.jsonResponse("the numbers", "NumberList", obj{"data": []any{active}}), authErrs()),
			}),
		},
		"/api/v1/numbers/{id}": obj{
			"get": withScope(core.OpListNumbers, obj{
				"operationId": "getNumber", "tags": []string{"numbers"},
				"summary":     "Get one of your numbers",
				"description": "awaiting_payment numbers carry checkoutUrl; past_due ones say in failureCode and failureReason why the renewal failed and when the number is released.",
				"parameters":  []any{numberIDParam},
				"responses":   s.responses(s.jsonResponse("the number", "Number", active), authErrs(), []errs{notFound}),
			}),
			"delete": release("deleteNumber"),
		},
		"/api/v1/numbers/{id}/release": obj{"post": release("releaseNumber")},
		"/api/v1/numbers/{id}/pay": obj{"post": withScope(core.OpBuyNumberWithCredits, obj{
			"operationId": "payNumber", "tags": []string{"numbers"},
			"summary":     "Pay a reserved number's first month from credits",
			"description": "The alternative to its checkoutUrl: the first month of an awaiting_payment number is paid from the balance of the key's mode at once and the number is returned pending (then active once provisioned). 402 insufficient_credits changes nothing; a number no longer awaiting payment, or whose reservation lapsed, is 409/410 number_not_in_state.",
			"parameters":  []any{numberIDParam},
			"responses": s.responses(s.jsonResponse("the number, pending", "Number", pendingNum), authErrs(),
				[]errs{notFound, e(402, credits.CodeInsufficientCredits), e(409, numbers.CodeNumberState), e(410, numbers.CodeNumberState)}),
		})},
		"/api/v1/inbox": obj{"get": withScope(core.OpListInbox, obj{
			"operationId": "listInbox", "tags": []string{"inbox"},
			"summary":     "List received faxes, newest first",
			"description": fmt.Sprintf("Faxes received on the owner's numbers in the key's mode, each with textPreview (its first %d characters of text) instead of text. Cursor pagination like listFaxes. A fax is receiving while its document is fetched and read, then received (or failed).", inbox.PreviewChars),
			"parameters": []any{limit,
				queryParam("starting_after", "the id of the last fax of the previous page (its nextCursor)", obj{"type": "string", "maxLength": 64}),
				queryParam("startingAfter", "the same as starting_after (give one of them)", obj{"type": "string", "maxLength": 64}),
				queryParam("numberId", "only faxes received on this number (num_…)", obj{"type": "string", "maxLength": 64}),
			},
			"responses": s.responses(s.jsonResponse("a page of received faxes", "InboundFaxList", obj{"data": []any{listed}, "hasMore": false}), authErrs()),
		})},
		"/api/v1/inbox/{id}": obj{"get": withScope(core.OpReadInbox, obj{
			"operationId": "getInboxFax", "tags": []string{"inbox"},
			"summary":     "Get a received fax with its text",
			"description": fmt.Sprintf("text is the fax's text: from its text layer, or OCR of scanned pages where the server has OCR (textStatus ocr_unavailable otherwise; textNote says what could not be read). At most %d bytes are kept (textStatus truncated). The PDF itself is downloaded through downloadInboxFax.", inbox.MaxText),
			"parameters":  []any{inboxIDParam},
			"responses":   s.responses(s.jsonResponse("the received fax", "InboundFax", received), authErrs(), []errs{notFound}),
		})},
		"/api/v1/inbox/{id}/download": obj{"post": withScope(core.OpReadInbox, obj{
			"operationId": "downloadInboxFax", "tags": []string{"inbox"},
			"summary":     "Get a short-lived link to a received fax's PDF",
			"description": fmt.Sprintf("Returns a signed url valid for %d minutes; GET it without credentials (the url is the capability) for the PDF. Only a received fax has a document (409 while receiving or failed).", int(inbox.DownloadTTL.Minutes())),
			"parameters":  []any{inboxIDParam},
			"responses": s.responses(s.jsonResponse("the download link", "InboxLink", obj{
				"url": opts.APIURL + core.LinkInboxFile.PathPrefix() + inbID + ".t9x2k0.c2lnbmF0dXJlc2lnbmF0dXJl", "expiresAt": "2026-01-02T15:09:05Z",
			}), authErrs(), []errs{notFound, e(409, core.CodeInvalidRequest)}),
		})},
		core.LinkInboxFile.Path(): obj{"get": obj{
			"operationId": "getInboxFile", "tags": []string{"inbox"},
			"summary":     "Download a received fax's PDF through a signed link",
			"description": "The url of downloadInboxFax. Needs no Authorization header: the token is the capability, valid until it expires. A malformed, forged or expired token, or one for a fax no longer available, is a 404 inbox_download_link_invalid.",
			"security":    noAuth(),
			"parameters":  []any{pathParam("token", "the token of the signed link")},
			"responses": s.responses(pdfResponse("the PDF", obj{
				"Content-Disposition": obj{"description": `attachment; filename="<id>.pdf"`, "schema": obj{"type": "string"}},
				"Cache-Control":       obj{"description": "private, no-store", "schema": obj{"type": "string"}},
			}), commonErrs(), []errs{e(404, inbox.CodeDownloadLink)}),
		}},
		"/api/v1/inbox/simulate": obj{"post": withScope(core.OpSimulateInbound, obj{
			"operationId": "simulateInboundFax", "tags": []string{"inbox"},
			"summary":     "Simulate a received fax on one of your test numbers",
			"description": fmt.Sprintf("Test-mode keys only (a live key gets 403 test_mode_only). At most a burst of 20, then one a second, per owner (429 rate_limited). A multipart/form-data body: file (the document: PDF, image or office file, at most %d bytes), to (one of your active test numbers, its id or E.164) and optionally from (the sender shown). The fax is recorded as receiving and processed like one from a provider: GET it until it is received, then read its text.", cfg.Documents.MaxUploadBytes),
			"requestBody": obj{"required": true, "content": obj{"multipart/form-data": obj{"schema": obj{
				"type": "object", "required": []string{"file", "to"}, "additionalProperties": false,
				"properties": obj{
					"file": obj{"type": "string", "contentMediaType": "application/octet-stream", "description": "the document"},
					"to":   obj{"type": "string", "maxLength": maxFormField, "description": "the test number that receives it: num_… or E.164"},
					"from": obj{"type": "string", "maxLength": maxFormField, "description": "the sender shown (default +12125550100)"},
				},
			}}}},
			"responses": s.responses(s.jsonResponse("the received fax, receiving", "InboundFax", receiving), authErrs(), []errs{
				e(400, documents.CodeEmptyFile), e(403, inbox.CodeTestModeOnly), notFound, e(409, inbox.CodeNumberNotReceiving),
				e(413, documents.CodeFileTooLarge), e(415, core.CodeUnsupportedContentType), e(422, core.CodeInvalidDestination), e(429, core.CodeRateLimited),
			}),
		})},
		core.LinkProviderMedia.Path(): obj{"get": obj{
			"operationId": "getProviderMedia", "tags": []string{"meta"},
			"summary":     "The PDF of a fax being sent, for the fax provider",
			"description": "The media link faxhub hands a provider that fetches the document itself. Needs no Authorization header: the token is the capability; it works while its fax is being sent. The answer is the bytes with their Content-Length, never a redirect.",
			"security":    noAuth(),
			"parameters":  []any{pathParam("token", "the token of the media link")},
			"responses": s.responses(pdfResponse("the PDF", obj{
				"Content-Length": obj{"schema": obj{"type": "integer"}},
				"Cache-Control":  obj{"description": "no-store", "schema": obj{"type": "string"}},
			}), commonErrs(), []errs{e(404, faxes.CodeMediaLinkInvalid)}),
		}},
	}
}

func numberSchemas() obj {
	str := func(desc string) obj { return obj{"type": "string", "description": desc} }
	dateTime := obj{"type": "string", "format": "date-time"}
	modeSchema := obj{"type": "string", "enum": []string{"live", "test"}}
	currency := obj{"type": "string", "enum": []string{core.Currency}}
	object := func(required []string, props obj) obj {
		return obj{"type": "object", "required": required, "properties": props}
	}
	numberStatuses := []string{string(numbers.AwaitingPayment), string(numbers.Pending), string(numbers.Active),
		string(numbers.PastDue), string(numbers.Failed), string(numbers.Canceled), string(numbers.Released)}
	return obj{
		"AvailableNumber": object([]string{"number", "country", "monthlyPrice", "monthlyCents", "currency"}, obj{
			"number": str("E.164"), "country": str("ISO 3166-1 alpha-2"), "region": obj{"type": "string"}, "locality": obj{"type": "string"},
			"monthlyPrice": str("decimal USD per month"), "monthlyCents": obj{"type": "integer"}, "currency": currency,
		}),
		"AvailableNumberList": object([]string{"data"}, obj{"data": obj{"type": "array", "items": ref("AvailableNumber")}}),
		"BuyNumberRequest": obj{"type": "object", "additionalProperties": false, "required": []string{"number"}, "properties": obj{
			"number":         str("an E.164 number from searchNumbers"),
			"payWithCredits": obj{"type": "boolean", "default": false, "description": "pay the first month from the account's credits now (needs " + string(core.ScopeFor(core.OpBuyNumberWithCredits)) + ") instead of at checkoutUrl"},
		}},
		"Number": object([]string{"id", "mode", "number", "country", "status", "provider", "createdAt", "updatedAt", "monthlyPrice", "monthlyCents", "currency"}, obj{
			"id": str("num_…"), "mode": modeSchema, "number": str("E.164"), "country": str("ISO 3166-1 alpha-2"),
			"region": obj{"type": "string"}, "locality": obj{"type": "string"},
			"status":        obj{"type": "string", "enum": numberStatuses, "description": "awaiting_payment → pending → active ⇄ past_due → released; awaiting_payment → canceled; pending → failed"},
			"provider":      obj{"type": "string"},
			"reservedUntil": obj{"type": "string", "format": "date-time", "description": "an awaiting_payment number is freed after it"},
			"paidThrough":   obj{"type": "string", "format": "date-time", "description": "the end of the month paid for; renewal from credits is due then"},
			"failureCode":   str("why it failed, was canceled or released, or why its renewal failed (renewal_insufficient_credits)"),
			"failureReason": obj{"type": "string"},
			"createdAt":     dateTime, "updatedAt": dateTime, "activatedAt": dateTime, "releasedAt": dateTime,
			"monthlyPrice": str("decimal USD per month"), "monthlyCents": obj{"type": "integer"}, "currency": currency,
			"checkoutUrl": obj{"type": "string", "format": "uri", "description": "awaiting_payment only: where the owner pays the first month"},
		}),
		"NumberList": object([]string{"data"}, obj{"data": obj{"type": "array", "items": ref("Number")}}),
		"InboundFax": object([]string{"id", "mode", "numberId", "from", "to", "pages", "status", "provider", "bytes", "receivedAt", "createdAt", "updatedAt"}, obj{
			"id": str("inb_…"), "mode": modeSchema, "numberId": str("the number it arrived on"),
			"from": str("the sender as the network reported it (E.164, other caller id, or empty)"), "to": str("E.164 of your number"),
			"pages":    obj{"type": "integer"},
			"status":   obj{"type": "string", "enum": []string{string(inbox.Receiving), string(inbox.Received), string(inbox.Failed)}},
			"provider": obj{"type": "string"}, "bytes": obj{"type": "integer", "description": "size of the PDF"},
			"text":        obj{"type": "string", "description": "getInboxFax only: the fax's text"},
			"textPreview": obj{"type": "string", "description": "listInbox only: the start of the text"},
			"textStatus": obj{"type": "string", "enum": []string{string(inbox.TextExtracted), string(inbox.TextOCRUnavailable), string(inbox.TextEmpty),
				string(inbox.TextFailed), string(inbox.TextTruncated)}},
			"textMethod":    obj{"type": "string", "enum": []string{"text", "ocr", "text+ocr", "none"}},
			"textNote":      str("what could not be read, for people"),
			"failureReason": obj{"type": "string"},
			"receivedAt":    dateTime, "createdAt": dateTime, "updatedAt": dateTime, "processedAt": dateTime,
			"readAt": obj{"type": "string", "format": "date-time", "description": "when the owner or an agent first read it whole"},
		}),
		"InboundFaxList": object([]string{"data", "hasMore"}, obj{
			"data":       obj{"type": "array", "items": ref("InboundFax")},
			"hasMore":    obj{"type": "boolean"},
			"nextCursor": str("present when hasMore: pass it as starting_after"),
		}),
		"InboxLink": object([]string{"url", "expiresAt"}, obj{
			"url": obj{"type": "string", "format": "uri", "description": "GET it without credentials for the PDF"}, "expiresAt": dateTime,
		}),
	}
}
