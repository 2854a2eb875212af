package rest

import (
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/checkout"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/machine"
	"github.com/faxhub/faxhub/core/numbers"
	"github.com/faxhub/faxhub/core/services"
)

// obj is a JSON object of the OpenAPI document.
type obj = map[string]any

// problemDetails maps every problem code a route of this adapter can
// return to an example detail. It is the single source of the Problem
// schema's code enum and of the per-response examples; the package tests
// hold it against core/errors.go so a new core code cannot go unmentioned.
func problemDetails() map[string]string {
	m := map[string]string{
		core.CodeInternal:                       "an internal error occurred; it has been logged",
		core.CodeInvalidRequest:                 "limit must be an integer from 1 to 100",
		core.CodeUnauthenticated:                `send your API key as "Authorization: Bearer <API key>"`,
		accounts.CodeInvalidAPIKey:              "the API key is not valid or has been revoked",
		core.CodeInsufficientScope:              "this credential lacks the fax:send scope",
		core.CodeNotFound:                       "fax not found",
		core.CodeMethodNotAllowed:               "DELETE is not allowed here; use GET, HEAD",
		core.CodeUnsupportedContentType:         "send the body as application/json",
		core.CodeRequestTimeout:                 "the request body did not arrive in time (1 bytes in 30s); send it without pauses",
		core.CodeIdempotencyKeyRequired:         "the Idempotency-Key header is required; use a fresh random value per fax",
		core.CodeIdempotencyConflict:            "this Idempotency-Key was already used with a different request",
		credits.CodeInsufficientCredits:         "this fax costs 0.14 USD but only 0.05 USD of test credits are available",
		core.CodeRateLimited:                    "too many requests; retry in 1 s",
		core.CodeInvalidDestination:             `"+1555" is not a valid fax number; give it in E.164 form, e.g. +12125550100`,
		core.CodePremiumDestination:             "premium-rate numbers cannot be faxed",
		core.CodeUnsupportedDestination:         "faxhub does not send to AQ yet",
		documents.CodeUploadInvalid:             "the upload token is not valid",
		documents.CodeUploadExpired:             "the upload token expired at 2026-01-02T16:04:05Z; create a new upload",
		documents.CodeUploadUsed:                "this upload token has already been used (or an upload with it is in progress)",
		documents.CodeUploadPending:             "nothing has been uploaded with this token yet; PUT the file to uploadUrl first",
		documents.CodeFileTooLarge:              "the file is larger than this upload allows (1048576 bytes)",
		documents.CodeStorageQuota:              "your unsent documents use 1073000000 of 1073741824 bytes; this file needs 1048576 more. Send them, or wait: unsent documents are deleted 7 days after upload",
		documents.CodeEmptyFile:                 "the upload body is empty",
		documents.CodeTooManyPages:              "the document has 400 pages; the limit is 350",
		documents.CodeUnsupportedType:           "this file type is not supported; send a PDF, an image or an office document",
		documents.CodeContentTypeMismatch:       "this upload was created for application/pdf but the file is image/png",
		documents.CodeLibreOfficeMissing:        "converting Word and Excel files needs LibreOffice, which is not installed on this server",
		documents.CodeConversionFailed:          "the document could not be converted to PDF",
		documents.CodeCorruptDocument:           "the PDF is damaged and cannot be read",
		documents.CodeEncryptedDocument:         "the PDF is password-protected; upload an unprotected copy",
		credits.CodeUnknownPack:                 `unknown credit pack "pack_7"`,
		checkout.CodeCheckoutUnavailable:        "live-mode checkout is not configured on this server (set the Stripe settings to enable it)",
		faxes.CodeProviderUnavailable:           "live-mode faxing is not configured on this server",
		faxes.CodeFaxNotCancelable:              "a fax that is sending can no longer be canceled",
		machine.CodeMachinePaymentsOff:          "machine payments are disabled on this server; use an API key with prepaid credits",
		machine.CodeMachinePaymentsMissing:      "machine payments are enabled but no payment method is configured on this server",
		CodeInvalidBase64:                       "base64 is not valid standard base64",
		machine.CodeRequestIDConflict:           "this request_id was used with another body; use a fresh request_id for another fax",
		machine.CodeMultipleCredentials:         "send one Payment credential, not 2",
		machine.CodePaymentInProgress:           "a request with this credential is being settled; retry in 1 s to get its answer",
		machine.CodePaymentProcessorUnavailable: "the payment processor did not answer; retry the same request with the same credential",
		machine.CodeStatusToken:                 "this status link is not valid or has expired",
		machine.CodeMachineBusy:                 "other machine payment documents are being read; retry in a few seconds",
	}
	maps.Copy(m, machinePaymentCodes())
	maps.Copy(m, numberCodes())
	maps.Copy(m, webhookCodes())
	maps.Copy(m, faxProofCodes())
	maps.Copy(m, batchCodes())
	return m
}

// errs is one documented error status and the codes it can carry.
type errs struct {
	status int
	codes  []string
}

func e(status int, codes ...string) errs { return errs{status, codes} }

// commonErrs are what every operation under /api/v1 can return: malformed
// requests (including credentials in the query string) and internal
// failures.
func commonErrs() []errs {
	return []errs{e(400, core.CodeInvalidRequest), e(500, core.CodeInternal)}
}

func authErrs() []errs {
	return append(commonErrs(), e(401, core.CodeUnauthenticated, accounts.CodeInvalidAPIKey), e(403, core.CodeInsufficientScope))
}

type specBuilder struct {
	details map[string]string
	// examples collects each problem example once, for components.examples.
	examples obj
}

func ref(name string) obj { return obj{"$ref": "#/components/schemas/" + name} }

func (s *specBuilder) jsonResponse(desc, schema string, example any) obj {
	return obj{"description": desc, "content": obj{"application/json": obj{"schema": ref(schema), "example": example}}}
}

func (s *specBuilder) problemExample(status int, code string) obj {
	detail, ok := s.details[code]
	if !ok {
		// A code without an entry would be missing from the enum too.
		panic("rest: OpenAPI problem code without an example: " + code)
	}
	return obj{
		"type": "urn:faxhub:error:" + code, "title": http.StatusText(status), "status": status,
		"code": code, "detail": detail, "instance": "/api/v1/…",
	}
}

// responses merges the success response with the errors, grouping codes by
// status (an operation lists e.g. 400 both from commonErrs and its own).
func (s *specBuilder) responses(ok obj, groups ...[]errs) obj {
	byStatus := map[int][]string{}
	for _, g := range groups {
		for _, er := range g {
			for _, c := range er.codes {
				if !slices.Contains(byStatus[er.status], c) {
					byStatus[er.status] = append(byStatus[er.status], c)
				}
			}
		}
	}
	out := obj{"200": ok}
	for status, codes := range byStatus {
		examples := obj{}
		for _, c := range codes {
			name := fmt.Sprintf("%s_%d", c, status)
			s.examples[name] = obj{"summary": c, "value": s.problemExample(status, c)}
			examples[c] = obj{"$ref": "#/components/examples/" + name}
		}
		resp := obj{
			"description": fmt.Sprintf("%s: code is one of %v", http.StatusText(status), codes),
			"content":     obj{"application/problem+json": obj{"schema": ref("Problem"), "examples": examples}},
		}
		switch status {
		case 401:
			resp["headers"] = obj{"WWW-Authenticate": obj{"description": `Bearer realm="faxhub"`, "schema": obj{"type": "string"}}}
		case 429:
			resp["headers"] = obj{"Retry-After": obj{"description": "seconds to wait before retrying", "schema": obj{"type": "integer", "minimum": 1}}}
		}
		out[fmt.Sprint(status)] = resp
	}
	return out
}

func jsonRequest(schema string, required bool, example any) obj {
	return obj{"required": required, "content": obj{"application/json": obj{"schema": ref(schema), "example": example}}}
}

func pathParam(name, desc string) obj {
	return obj{"name": name, "in": "path", "required": true, "description": desc, "schema": obj{"type": "string"}}
}

func queryParam(name, desc string, schema obj) obj {
	return obj{"name": name, "in": "query", "required": false, "description": desc, "schema": schema}
}

// noAuth marks an operation that needs no credential.
func noAuth() []any { return []any{} }

// oauthScheme is the OAuth 2 security scheme: faxhub's authorization
// server (issuer {api_url}/api/auth, docs/oauth.md) issues access tokens
// for the resource {api_url}/api/v1. The paths are the authorization
// server's documented ones (rest does not import the oauth adapter).
func oauthScheme(opts Options) obj {
	issuer := opts.APIURL + "/api/auth"
	scopes := obj{}
	for _, sc := range core.FaxScopes() {
		scopes[string(sc)] = scopeDescriptions[sc]
	}
	scopes["offline_access"] = "a refresh token, to stay signed in"
	return obj{
		"type": "oauth2",
		"description": "An OAuth access token from faxhub's authorization server (issuer " + issuer + ", metadata at " +
			opts.APIURL + "/.well-known/oauth-authorization-server/api/auth): authorization code with PKCE S256 (required) and resource=" +
			opts.APIURL + apiPrefix + " (RFC 8707); the owner approves the app and its scopes. Tokens for other resources (/mcp, /a2a) are refused here, and the account's settings (webhook endpoints, the credit alert, fax settings) need an API key. The command-line client's public client id is faxhub-cli (loopback redirect http://127.0.0.1:<port>/callback).",
		"flows": obj{"authorizationCode": obj{
			"authorizationUrl": issuer + "/oauth2/authorize", "tokenUrl": issuer + "/oauth2/token", "refreshUrl": issuer + "/oauth2/token",
			"scopes": scopes,
		}},
	}
}

// scopeDescriptions say what each product scope allows, for the OAuth
// scheme.
var scopeDescriptions = map[core.Scope]string{
	core.ScopeFaxRead:         "read faxes and numbers",
	core.ScopeFaxDraft:        "upload documents, quote and prepare faxes and numbers",
	core.ScopeFaxSend:         "send and cancel faxes (spends credits), release numbers",
	core.ScopeInboxRead:       "read received faxes",
	core.ScopeCreditsRead:     "read the balance and ledger",
	core.ScopeCreditsCheckout: "start a credit-pack checkout",
}

func openAPIDocument(opts Options, cfg services.Config, machine machineLimits) obj {
	s := &specBuilder{details: problemDetails(), examples: obj{}}

	servers := []any{obj{"url": opts.BaseURL, "description": "main origin"}}
	if opts.APIURL != opts.BaseURL {
		servers = append(servers, obj{"url": opts.APIURL, "description": "API origin (same paths)"})
	}

	const (
		ts     = "2026-01-02T15:04:05Z"
		token  = "u1.eyJ1IjoidXBsXzAxIn0.c2lnbmF0dXJl"
		faxID  = "fax_5v2k8m0q3r7t9w1y4z6b8d0f2h"
		docID  = "doc_7c9e1g3j5k7m9p1r3t5v7x9z1b"
		number = "+12125550100"
	)
	exampleMax := min(10<<20, cfg.Documents.MaxUploadBytes)
	document := obj{"id": docID, "mode": "test", "sourceType": "application/pdf", "sourceBytes": 48213,
		"pdfBytes": 48213, "pages": 2, "sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "createdAt": ts}
	attempt := obj{"id": "att_3b5d7f9h1k3m5p7r9t1v3x5z7c", "number": 1, "provider": "simulated", "providerRef": "sim_123",
		"status": "delivered", "retryable": false, "pagesSent": 2, "durationMs": 41000, "startedAt": ts, "finishedAt": "2026-01-02T15:04:46Z"}
	queued := obj{"id": faxID, "mode": "test", "status": "queued", "to": number, "documentId": docID, "pages": 2,
		"cover": false, "currency": "usd", "paymentMethod": "credits", "pagesSent": 0, "attemptCount": 0,
		"createdAt": ts, "updatedAt": ts, "price": "0.14", "priceCents": 14, "latestAttempt": nil,
		"sentBy": obj{"kind": "api_key", "id": "key_01kb2m4p6r8t0v2x4z6b8d0f2h", "name": "billing backend"}}
	delivered := maps.Clone(queued)
	delivered["status"], delivered["pagesSent"], delivered["attemptCount"] = "delivered", 2, 1
	delivered["completedAt"], delivered["updatedAt"], delivered["latestAttempt"] = "2026-01-02T15:04:46Z", "2026-01-02T15:04:46Z", attempt
	ledgerHold := obj{"id": "led_1a3c5e7g9j1l3n5q7s9u1w3y5a", "mode": "test", "kind": "hold", "faxId": faxID,
		"reason": "hold for fax " + faxID + " to " + number, "createdAt": ts, "amount": "-0.14", "amountCents": -14}
	quote := obj{"to": number, "country": "US", "pages": 2, "cover": true, "billedPages": 3, "currency": "usd",
		"amount": "0.21", "amountCents": 21, "tariff": "nanp"}

	uploadTypes := make([]string, 0)
	for _, k := range documents.SupportedUploadTypes() {
		uploadTypes = append(uploadTypes, string(k))
	}
	slices.Sort(uploadTypes)
	statuses := make([]string, len(faxes.Statuses))
	for i, st := range faxes.Statuses {
		statuses[i] = string(st)
	}
	codes := slices.Sorted(maps.Keys(s.details))

	idempotencyKey := obj{"$ref": "#/components/parameters/IdempotencyKey"}
	limit := queryParam("limit", fmt.Sprintf("page size, 1 to %d (default %d)", core.MaxListLimit, core.DefaultListLimit),
		obj{"type": "integer", "minimum": 1, "maximum": core.MaxListLimit, "default": core.DefaultListLimit})
	quoteErrs := []errs{e(415, core.CodeUnsupportedContentType),
		e(422, core.CodeInvalidDestination, core.CodePremiumDestination, core.CodeUnsupportedDestination, documents.CodeTooManyPages)}

	paths := obj{
		"/api/v1/uploads": obj{"post": obj{
			"operationId": "createUpload", "tags": []string{"uploads"},
			"summary":     "Create an upload capability",
			"description": fmt.Sprintf("Returns a single-use uploadUrl valid for %d minutes. PUT the file's bytes to it (no Authorization header needed), then send the fax with the uploadToken. maxBytes defaults to and may not exceed the server maximum (%d bytes); contentType, if given, limits the upload to that type.", int(cfg.Documents.UploadTTL.Minutes()), cfg.Documents.MaxUploadBytes),
			"requestBody": jsonRequest("CreateUploadRequest", false, obj{"contentType": "application/pdf", "maxBytes": exampleMax}),
			"responses": s.responses(s.jsonResponse("the upload capability", "UploadCapability", obj{
				"uploadToken": token, "uploadUrl": opts.APIURL + "/api/v1/uploads/" + token, "method": "PUT",
				"key": "upl_2d4f6h8k0m2p4r6t8v0x2z4b6d", "contentType": "application/pdf", "maxBytes": exampleMax, "expiresAt": "2026-01-02T16:04:05Z",
			}), authErrs(), []errs{e(413, documents.CodeFileTooLarge, documents.CodeStorageQuota, core.CodeInvalidRequest), e(415, documents.CodeUnsupportedType, core.CodeUnsupportedContentType), e(429, core.CodeRateLimited)}),
		}},
		"/api/v1/uploads/{token}": obj{"options": obj{
			"operationId": "preflightUpload", "tags": []string{"uploads"},
			"summary":     "CORS preflight of putUpload",
			"description": "A browser page of any origin (the MCP App in a chat host's sandboxed frame) may PUT to an upload URL: the token in the path is the credential and no cookie or Authorization header is used. Answers 204 with Access-Control-Allow-Origin: *, Access-Control-Allow-Methods: PUT, Access-Control-Allow-Headers: Content-Type; putUpload's answers carry the same headers.",
			"security":    noAuth(),
			"parameters":  []any{pathParam("token", "the uploadToken from createUpload")},
			"responses":   obj{"204": obj{"description": "the PUT is allowed from any origin"}},
		}, "put": obj{
			"operationId": "putUpload", "tags": []string{"uploads"},
			"summary":     "Upload the file of an upload capability",
			"description": fmt.Sprintf("Needs no Authorization header: the token in the path is the capability, and it can be used once. The body is the raw file bytes; any Content-Type header is accepted because the type is detected from the content (PDF, PNG, JPEG, TIFF, GIF, DOC, DOCX, XLS, XLSX, ODT, ODS, RTF). Office files and images are converted to PDF. A body whose Content-Length exceeds %d bytes is refused before it is read; otherwise the token's maxBytes is enforced while streaming. Documents may have at most %d pages. A failed PUT leaves the token usable until it expires. A PUT in progress holds the token (409 upload_token_used to a second PUT); if its connection or process dies the token is usable again within a minute. The body must arrive at 64 KiB/s on average after 30 s. Conversions are queued fairly per owner: more than 4 waiting for one owner answer 429 rate_limited with Retry-After.", cfg.Documents.MaxUploadBytes, cfg.Documents.MaxPages),
			"security":    noAuth(),
			"parameters":  []any{pathParam("token", "the uploadToken from createUpload")},
			"requestBody": obj{"required": true, "content": obj{"*/*": obj{"schema": obj{"type": "string", "contentMediaType": "application/octet-stream"}}}},
			"responses": s.responses(s.jsonResponse("the file was stored; send it with uploadToken or document.id", "UploadResult",
				obj{"stored": true, "uploadToken": token, "document": document}),
				commonErrs(), []errs{
					e(400, documents.CodeEmptyFile), e(403, documents.CodeUploadInvalid), e(409, documents.CodeUploadUsed), e(410, documents.CodeUploadExpired),
					e(413, documents.CodeFileTooLarge, documents.CodeStorageQuota), e(415, documents.CodeUnsupportedType, documents.CodeContentTypeMismatch, documents.CodeLibreOfficeMissing),
					e(422, documents.CodeCorruptDocument, documents.CodeEncryptedDocument, documents.CodeTooManyPages, documents.CodeConversionFailed),
					e(429, core.CodeRateLimited),
				}),
		}},
		"/api/v1/faxes": obj{
			"post": obj{
				"operationId": "sendFax", "tags": []string{"faxes"},
				"summary":     "Send a fax, paid with prepaid credits",
				"description": "Queues a fax of an uploaded document (uploadToken after its PUT, or documentId) and places a hold on credits for its price; the hold is captured when the fax is delivered and released if it fails or is canceled. The send options (coverPage, header, resolution, sendAt, retry: docs/api.md#send-options) are checked here, each bad one a 400 naming its field; with sendAt the fax is scheduled until then. createPreview shows the pages first. Idempotency-Key is required: repeating a request with the same key and body returns the original fax with Idempotent-Replayed: true instead of sending again; the same key with a different body is a 409.",
				"parameters":  []any{idempotencyKey},
				"requestBody": jsonRequest("SendFaxRequest", true, obj{"to": number, "uploadToken": token}),
				"responses": func() obj {
					r := s.responses(s.jsonResponse("the queued fax (or, on replay, the fax the key created)", "Fax", queued), authErrs(), []errs{
						e(400, core.CodeIdempotencyKeyRequired, numbers.CodeFromNumberNotOwned), e(402, credits.CodeInsufficientCredits),
						e(403, documents.CodeUploadInvalid), e(404, core.CodeNotFound),
						e(409, core.CodeIdempotencyConflict, documents.CodeUploadPending), e(415, core.CodeUnsupportedContentType),
						e(422, core.CodeInvalidDestination, core.CodePremiumDestination, core.CodeUnsupportedDestination),
						e(429, core.CodeRateLimited), e(503, faxes.CodeProviderUnavailable),
					})
					r["200"].(obj)["headers"] = obj{"Idempotent-Replayed": obj{"description": "true when this is the stored response of an earlier request with the same key", "schema": obj{"type": "string", "enum": []string{"true"}}}}
					return r
				}(),
			},
			"get": obj{
				"operationId": "listFaxes", "tags": []string{"faxes"},
				"summary":     "List faxes, newest first",
				"description": "Cursor pagination: pass nextCursor as starting_after to get the next page (with the same filters). Faxes in lists have latestAttempt null; use getFax for it. Only the caller's own faxes in the key's mode (test or live) are listed. created_from and created_to select a period: a date (2026-11-29, a whole day in UTC) or an RFC 3339 time; from is inclusive, to exclusive for a time and inclusive of its day for a date; a bound that is neither, outside 2000–9999, or a period that ends before it starts is 400 invalid_period naming the field.",
				"parameters": []any{limit,
					queryParam("starting_after", "the id of the last fax of the previous page (its nextCursor)", obj{"type": "string"}),
					queryParam("status", "only faxes in this status", obj{"type": "string", "enum": statuses}),
					queryParam("created_from", "only faxes created at or after this time, or on or after this date (UTC)", obj{"type": "string", "maxLength": 40, "examples": []any{"2026-11-01", "2026-11-01T09:00:00Z"}}),
					queryParam("created_to", "only faxes created before this time, or on or before this date (UTC)", obj{"type": "string", "maxLength": 40, "examples": []any{"2026-11-30"}}),
				},
				"responses": s.responses(s.jsonResponse("a page of faxes", "FaxList", obj{"data": []any{queued}, "hasMore": true, "nextCursor": faxID}), authErrs(), []errs{e(400, faxes.CodeInvalidPeriod)}),
			},
		},
		"/api/v1/faxes/{id}": obj{"get": obj{
			"operationId": "getFax", "tags": []string{"faxes"},
			"summary":    "Get a fax with its latest provider attempt",
			"parameters": []any{pathParam("id", "the fax id (fax_…)")},
			"responses":  s.responses(s.jsonResponse("the fax", "Fax", delivered), authErrs(), []errs{e(404, core.CodeNotFound)}),
		}},
		"/api/v1/faxes/{id}/attempts": obj{"get": obj{
			"operationId": "listFaxAttempts", "tags": []string{"faxes"},
			"summary":     "List every provider attempt of a fax, oldest first",
			"description": "Not paginated: a fax has at most a few attempts.",
			"parameters":  []any{pathParam("id", "the fax id (fax_…)")},
			"responses":   s.responses(s.jsonResponse("the attempts", "AttemptList", obj{"data": []any{attempt}}), authErrs(), []errs{e(404, core.CodeNotFound)}),
		}},
		"/api/v1/faxes/{id}/cancel": obj{"post": obj{
			"operationId": "cancelFax", "tags": []string{"faxes"},
			"summary":     "Cancel a queued fax",
			"description": "Only a queued fax can be canceled; its credit hold is released. Once sending has started a fax cannot be called back (409 fax_not_cancelable).",
			"parameters":  []any{pathParam("id", "the fax id (fax_…)")},
			"responses": s.responses(s.jsonResponse("the canceled fax", "Fax", func() obj {
				o := maps.Clone(queued)
				o["status"], o["failureCode"], o["failureReason"], o["completedAt"] = "canceled", "canceled", "canceled by the owner", ts
				return o
			}()), authErrs(), []errs{e(404, core.CodeNotFound), e(409, faxes.CodeFaxNotCancelable)}),
		}},
		"/api/v1/credits": obj{"get": obj{
			"operationId": "getCredits", "tags": []string{"credits"},
			"summary":     "Get the credit balance and ledger",
			"description": "The balance and ledger of the key's mode. balance is what can be spent; held is reserved for faxes in flight. The ledger is newest first, paginated like listFaxes (hasMore, nextCursor).",
			"parameters": []any{limit,
				queryParam("starting_after", "the id of the last ledger entry of the previous page (nextCursor)", obj{"type": "string"})},
			"responses": s.responses(s.jsonResponse("balance and a page of the ledger", "Credits", obj{
				"mode": "test", "currency": "usd", "balance": "9.86", "balanceCents": 986, "held": "0.14", "heldCents": 14,
				"ledger": []any{ledgerHold}, "hasMore": false,
			}), authErrs()),
		}},
		"/api/v1/credits/packs": obj{"get": obj{
			"operationId": "listCreditPacks", "tags": []string{"credits"},
			"summary": "List the credit packs on sale",
			"responses": s.responses(s.jsonResponse("the packs", "CreditPackList", obj{"data": []any{
				obj{"id": "pack_10", "name": "10 USD of fax credits", "price": "10.00", "credit": "10.00"}}}), authErrs()),
		}},
		"/api/v1/credits/checkout": obj{"post": obj{
			"operationId": "createCreditCheckout", "tags": []string{"credits"},
			"summary":     "Start a hosted checkout for a credit pack",
			"description": "Returns a checkoutUrl for a person to pay at; the credits appear in the ledger once it is paid. Test keys get a test checkout page.",
			"requestBody": jsonRequest("CheckoutRequest", true, obj{"packId": "pack_10"}),
			"responses": s.responses(s.jsonResponse("the checkout session", "CheckoutSession", obj{
				"id": "chk_0a2c4e6g8j0l2n4q6s8u0w2y4a", "checkoutUrl": opts.BaseURL + "/checkout/test/chk_0a2c4e6g8j0l2n4q6s8u0w2y4a",
				"expiresAt": "2026-01-02T16:04:05Z", "amount": "10.00", "amountCents": 1000, "currency": "usd", "packId": "pack_10", "credit": "10.00",
			}), authErrs(), []errs{e(400, credits.CodeUnknownPack), e(415, core.CodeUnsupportedContentType), e(503, checkout.CodeCheckoutUnavailable)}),
		}},
		"/api/v1/quote": obj{"post": obj{
			"operationId": "quoteFax", "tags": []string{"faxes"},
			"summary":     "Price a fax without sending it",
			"description": "A convenience for backends: checks the destination and prices the pages (plus an optional cover page) with no side effects. Needs the fax:draft scope, which API keys carry.",
			"requestBody": jsonRequest("QuoteRequest", true, obj{"to": number, "pages": 2, "cover": true}),
			"responses":   s.responses(s.jsonResponse("the quote", "Quote", quote), authErrs(), quoteErrs),
		}},
		"/openapi.json": obj{"get": obj{
			"operationId": "getOpenAPI", "tags": []string{"meta"}, "summary": "This document", "security": noAuth(),
			"responses": obj{"200": obj{"description": "the OpenAPI 3.1 description", "content": obj{"application/json": obj{"schema": obj{"type": "object"}}}}},
		}},
		"/llms.txt": obj{"get": obj{
			"operationId": "getLLMsTxt", "tags": []string{"meta"}, "summary": "A short guide to this API for LLM agents", "security": noAuth(),
			"responses": obj{"200": obj{"description": "plain text", "content": obj{"text/plain": obj{"schema": obj{"type": "string"}}}}},
		}},
	}
	maps.Copy(paths, s.machinePaths(opts, machine, quote))
	maps.Copy(paths, s.numberPaths(opts, cfg, limit))
	maps.Copy(paths, s.eventPaths(limit))
	maps.Copy(paths, s.webhookPaths(opts, cfg, limit))
	maps.Copy(paths, s.faxProofPaths(opts, cfg))
	maps.Copy(paths, s.batchPaths(limit, batchSendErrs()))

	str := func(desc string) obj { return obj{"type": "string", "description": desc} }
	dateTime := obj{"type": "string", "format": "date-time"}
	integer := func(desc string) obj { return obj{"type": "integer", "description": desc} }
	modeSchema := obj{"type": "string", "enum": []string{"live", "test"}}
	object := func(required []string, props obj) obj {
		return obj{"type": "object", "required": required, "properties": props}
	}
	list := func(item string) obj {
		return object([]string{"data"}, obj{"data": obj{"type": "array", "items": ref(item)}})
	}
	page := func(item string) obj {
		return object([]string{"data", "hasMore"}, obj{
			"data":       obj{"type": "array", "items": ref(item)},
			"hasMore":    obj{"type": "boolean"},
			"nextCursor": str("present when hasMore: pass it as starting_after"),
		})
	}

	schemas := obj{
		"Problem": obj{
			"type": "object", "description": "RFC 9457 problem details. Switch on code; extension members (limit, required_scope, price, available, checkoutPath, allow, …) carry details.",
			"required": []string{"type", "title", "status", "code"}, "additionalProperties": true,
			"properties": obj{
				"type": str("urn:faxhub:error:<code>"), "title": str("the HTTP status text"), "status": obj{"type": "integer"},
				"detail": str("what went wrong and what to do, for people"), "instance": str("the request path"),
				"requestId": str("the request's id, also in the X-Request-Id header and on the server's log lines of the request: quote it when reporting a problem"),
				"code":      obj{"type": "string", "enum": codes, "description": "stable machine-readable error code"},
			},
		},
		"CreateUploadRequest": obj{"type": "object", "additionalProperties": false, "properties": obj{
			"contentType": obj{"type": "string", "enum": uploadTypes, "description": "limit the upload to this type"},
			"maxBytes":    obj{"type": "integer", "minimum": 1, "maximum": cfg.Documents.MaxUploadBytes, "description": "upper bound of the file size; default the server maximum"},
		}},
		"UploadCapability": object([]string{"uploadToken", "uploadUrl", "expiresAt"}, obj{
			"uploadToken": str("HMAC token; it is the credential of the PUT and names the document when sending"),
			"uploadUrl":   obj{"type": "string", "format": "uri", "description": "PUT the file bytes here"},
			"method":      obj{"type": "string", "enum": []string{"PUT"}},
			"key":         str("the upload's id"),
			"contentType": str("present when the upload is limited to one type"),
			"maxBytes":    integer("the largest file this upload accepts"),
			"expiresAt":   dateTime,
		}),
		"UploadResult": object([]string{"stored", "uploadToken", "document"}, obj{
			"stored":      obj{"type": "boolean", "const": true},
			"uploadToken": str("the token of this upload, for sendFax"),
			"document":    ref("Document"),
		}),
		"Document": object([]string{"id", "mode", "sourceType", "sourceBytes", "pdfBytes", "pages", "sha256", "createdAt"}, obj{
			"id": str("doc_…; usable as documentId in sendFax"), "mode": modeSchema,
			"sourceType":  str("media type detected from the uploaded bytes"),
			"sourceBytes": integer("size of the uploaded file"), "pdfBytes": integer("size of the fax-ready PDF"),
			"pages": integer("pages of the fax-ready PDF"), "sha256": str("hex SHA-256 of the uploaded bytes"), "createdAt": dateTime,
		}),
		"SendFaxRequest": obj{
			"type": "object", "additionalProperties": false, "required": []string{"to"},
			"oneOf": []any{obj{"required": []string{"uploadToken"}}, obj{"required": []string{"documentId"}}},
			"properties": func() obj {
				p := obj{
					"to":          str("destination fax number in E.164 form, e.g. +12125550100"),
					"uploadToken": str("the token of a completed upload"),
					"documentId":  str("the id of a stored document"),
					"cover":       obj{"type": "boolean", "default": false, "description": "add a cover page (billed as one page) with your fax settings' sender; coverPage implies it"},
					"coverText":   obj{"type": "string", "maxLength": faxes.MaxCoverText, "description": "note on the cover page (coverPage.message); needs cover: true"},
					"from":        str("the sender: one of your active fax numbers in the key's mode (E.164 or its num_… id); default the provider's"),
				}
				maps.Copy(p, faxOptionProps())
				return p
			}(),
		},
		"Fax": object([]string{"id", "mode", "status", "to", "documentId", "pages", "cover", "currency", "paymentMethod", "pagesSent", "attemptCount", "createdAt", "updatedAt", "price", "priceCents", "latestAttempt"}, obj{
			"id": str("fax_…"), "mode": modeSchema,
			"status":        obj{"type": "string", "enum": statuses, "description": "queued → sending → delivered | partial | failed; scheduled (sendAt) → sending; scheduled | queued → canceled"},
			"to":            str("E.164 destination"),
			"from":          str("the sender number (E.164), when the fax was sent from one of your numbers"),
			"documentId":    str("the document sent"),
			"pages":         integer("document pages"),
			"cover":         obj{"type": "boolean"},
			"coverText":     obj{"type": "string"},
			"currency":      obj{"type": "string", "enum": []string{core.Currency}},
			"paymentMethod": obj{"type": "string", "enum": []string{string(faxes.PayCredits), string(faxes.PayCheckout), string(faxes.PayMachine)}},
			"pagesSent":     obj{"type": "integer"},
			"attemptCount":  integer("provider attempts so far"),
			"failureCode":   str("why the last attempt failed (busy, no_answer, …) or canceled"),
			"failureReason": obj{"type": "string"},
			"draftId":       obj{"type": "string"},
			"createdAt":     dateTime, "updatedAt": dateTime, "completedAt": dateTime,
			"nextAttemptAt": obj{"type": "string", "format": "date-time", "description": "when a retry is scheduled"},
			"price":         str("decimal USD"), "priceCents": obj{"type": "integer"},
			"latestAttempt": obj{"anyOf": []any{ref("Attempt"), obj{"type": "null"}}, "description": "set by getFax, cancelFax and sendFax once an attempt exists; null in lists"},
			"coverPage":     faxOptionProps()["coverPage"], "header": faxOptionProps()["header"], "resolution": faxOptionProps()["resolution"],
			"sendAt": faxOptionProps()["sendAt"], "retry": faxOptionProps()["retry"],
			"resendOf":    str("the fax whose document this one resends"),
			"batchId":     str("the broadcast (bat_…) this fax is one recipient of"),
			"faxedSha256": str("hex SHA-256 of the document as faxed (cover page and header line included), once the first attempt composed it"),
			"faxedPages":  integer("pages of the document as faxed, the cover page included"),
			"sentBy":      obj{"allOf": []any{ref("SentBy")}, "description": "the door the fax came in by; on every fax answered, absent only in events emitted before faxhub recorded it"},
		}),
		"SentBy": object([]string{"kind"}, obj{
			"kind": obj{"type": "string", "enum": sentByKinds(), "description": "the door the fax came in by: an API key, a chat app (OAuth grant), an agent registration, a delegated agent, a paying machine, the owner in the console; unknown for faxes made before faxes recorded it"},
			"id":   str("the credential's id (key_…, the grant's, the registration's or the delegated agent's id); absent for the console and machines. Never a secret"),
			"name": str("how the owner knows it: the key's or agent's name, the app's client_name; a machine's payment method"),
		}),
		"Attempt": object([]string{"id", "number", "provider", "status", "retryable", "pagesSent", "durationMs", "startedAt"}, obj{
			"id": str("att_…"), "number": integer("1 for the first try"), "provider": obj{"type": "string"}, "providerRef": obj{"type": "string"},
			"status":      obj{"type": "string", "enum": []string{string(faxes.AttemptSending), string(faxes.AttemptDelivered), string(faxes.AttemptPartial), string(faxes.AttemptFailed)}},
			"failureCode": obj{"type": "string"}, "failureReason": obj{"type": "string"}, "retryable": obj{"type": "boolean"},
			"pagesSent": obj{"type": "integer"}, "durationMs": obj{"type": "integer"}, "startedAt": dateTime, "finishedAt": dateTime,
		}),
		"FaxList":     page("Fax"),
		"AttemptList": list("Attempt"),
		"LedgerEntry": object([]string{"id", "mode", "kind", "reason", "createdAt", "amount", "amountCents"}, obj{
			"id": str("led_…"), "mode": modeSchema,
			"kind":  obj{"type": "string", "enum": []string{string(credits.LedgerGrant), string(credits.LedgerPurchase), string(credits.LedgerHold), string(credits.LedgerCapture), string(credits.LedgerRelease), string(credits.LedgerRefund), string(credits.LedgerReversal)}},
			"faxId": obj{"type": "string"}, "holdId": obj{"type": "string"}, "reason": obj{"type": "string"}, "createdAt": dateTime,
			"amount": str("signed decimal USD; holds are negative, captures zero"), "amountCents": obj{"type": "integer", "description": "rounded down (toward minus infinity)"},
		}),
		"Credits": object([]string{"mode", "currency", "balance", "balanceCents", "held", "heldCents", "ledger", "hasMore"}, obj{
			"mode": modeSchema, "currency": obj{"type": "string", "enum": []string{core.Currency}},
			"balance": str("decimal USD that can be spent now"), "balanceCents": obj{"type": "integer", "description": "the balance in cents, rounded down"},
			"held": str("decimal USD reserved for faxes in flight"), "heldCents": obj{"type": "integer", "description": "rounded up"},
			"ledger":     obj{"type": "array", "items": ref("LedgerEntry"), "description": "newest first"},
			"hasMore":    obj{"type": "boolean"},
			"nextCursor": str("pass as starting_after for the next page; absent on the last page"),
		}),
		"CreditPack": object([]string{"id", "name", "price", "credit"}, obj{
			"id": obj{"type": "string"}, "name": obj{"type": "string"},
			"price": str("decimal USD charged"), "credit": str("decimal USD credited"),
		}),
		"CreditPackList":  list("CreditPack"),
		"CheckoutRequest": obj{"type": "object", "additionalProperties": false, "required": []string{"packId"}, "properties": obj{"packId": str("a pack id from listCreditPacks")}},
		"CheckoutSession": object([]string{"id", "checkoutUrl", "expiresAt", "amount", "amountCents", "currency"}, obj{
			"id": str("chk_…"), "checkoutUrl": obj{"type": "string", "format": "uri", "description": "open this to pay"},
			"expiresAt": dateTime, "amount": str("decimal USD"), "amountCents": obj{"type": "integer"},
			"currency": obj{"type": "string", "enum": []string{core.Currency}}, "packId": obj{"type": "string"}, "credit": str("decimal USD credited when paid"),
		}),
		"QuoteRequest": obj{"type": "object", "additionalProperties": false, "required": []string{"to"}, "properties": obj{
			"to":    str("destination fax number, E.164"),
			"pages": obj{"type": "integer", "minimum": 1, "maximum": cfg.Documents.MaxPages, "default": 1, "description": "pages to price; absent means 1"},
			"cover": obj{"type": "boolean", "default": false},
		}},
		"Quote": object([]string{"to", "country", "pages", "cover", "billedPages", "currency", "amount", "amountCents", "tariff"}, obj{
			"to": str("normalised E.164"), "country": str("ISO 3166-1 alpha-2"), "pages": obj{"type": "integer"}, "cover": obj{"type": "boolean"},
			"billedPages": integer("pages plus the cover page"), "currency": obj{"type": "string", "enum": []string{core.Currency}},
			"amount": str("decimal USD"), "amountCents": obj{"type": "integer"}, "tariff": obj{"type": "string"},
		}),
	}

	maps.Copy(schemas, machineSchemas())
	maps.Copy(schemas, numberSchemas())
	maps.Copy(schemas, eventSchemas())
	maps.Copy(schemas, webhookSchemas())
	maps.Copy(schemas, faxProofSchemas())
	maps.Copy(schemas, batchSchemas())

	return obj{
		"openapi": "3.1.0",
		// x-service-info (draft-payment-discovery): where the guide is.
		"x-service-info": obj{"categories": []string{"communication", "fax"}, "docs": obj{
			"apiReference": opts.BaseURL + "/openapi.json", "llms": opts.BaseURL + "/llms.txt", "homepage": opts.BaseURL,
		}},
		"info": obj{
			"title": "faxhub API", "version": "1.0.0",
			"description": "Send faxes paid with prepaid credits, or per request over HTTP 402 without an account (the machine operations). Authenticate with \"Authorization: Bearer <API key>\" (fxk_live_… or fxk_test_…; test keys use a simulated provider and test credits and never see live data), or with an OAuth access token for the resource " + opts.APIURL + apiPrefix + " (the oauth2 scheme). Errors are application/problem+json with a stable code. A guide for agents is at " + opts.BaseURL + "/llms.txt.",
		},
		"servers":  servers,
		"security": []any{obj{"apiKey": []string{}}, obj{"oauth2": []string{}}},
		"tags": []any{
			obj{"name": "uploads", "description": "getting a document in: an upload capability, then a PUT of the bytes"},
			obj{"name": "faxes", "description": "sending, pricing, following and canceling faxes"},
			obj{"name": "batches", "description": "broadcasts: one document to up to 100 recipients, each a fax of its own"},
			obj{"name": "credits", "description": "prepaid balance, ledger and credit-pack checkout"},
			obj{"name": "numbers", "description": "renting fax numbers to receive on and send from"},
			obj{"name": "inbox", "description": "faxes received on your numbers, their text and their PDFs"},
			obj{"name": "events", "description": "the event log: what happened to your faxes, numbers, credits, approvals and agents, listed and delivered to webhooks"},
			obj{"name": "webhooks", "description": "endpoints that receive your events as they happen, signed as Standard Webhooks says; their delivery logs"},
			obj{"name": "machine", "description": "per-request payment for machines without an account"},
			obj{"name": "meta", "description": "descriptions of this API"},
		},
		"paths": paths,
		// OpenAPI 3.1: what faxhub posts to webhook endpoints (rest/openapi_events.go).
		"webhooks": eventWebhooks(),
		"components": obj{
			"securitySchemes": obj{"apiKey": obj{
				"type": "http", "scheme": "bearer", "bearerFormat": "API key (fxk_live_… / fxk_test_…)",
				"description": "An API key created by the account owner. Never put it in a URL: query parameters api_key, key and access_token are refused.",
			}, "oauth2": oauthScheme(opts)},
			"parameters": obj{"IdempotencyKey": obj{
				"name": "Idempotency-Key", "in": "header", "required": true,
				"description": "a fresh random value (e.g. a UUID) per fax; reuse it only to retry the same request",
				"schema":      obj{"type": "string", "minLength": 1, "maxLength": core.MaxIdempotencyKey},
			}},
			"schemas":  schemas,
			"examples": s.examples,
		},
	}
}

// sentByKinds are the values of a fax's sentBy.kind.
func sentByKinds() []string {
	return []string{string(core.PrincipalAPIKey), string(core.PrincipalOAuthGrant), string(core.PrincipalAgent), string(core.PrincipalDelegated),
		string(core.PrincipalMachinePayer), string(core.PrincipalOwnerSession), string(faxes.SentByUnknown)}
}
