package rest

import (
	"fmt"
	"maps"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/numbers"
)

// Broadcasts (batches) and resends in /openapi.json.

// batchCodes are the problem codes only these operations (and listFaxes'
// period) return.
func batchCodes() map[string]string {
	return map[string]string{
		faxes.CodeDocumentPurged: "the document of fax fax_5v2k8m0q3r7t9w1y4z6b8d0f2h is no longer kept; upload it again and send it",
		faxes.CodeInvalidPeriod:  "created_from must be a date (2026-11-29) or an RFC 3339 time (2026-11-29T13:00:00Z) between 2000 and 9999",
	}
}

const (
	exBatchID = "bat_3c5e7g9j1l3n5q7s9u1w3y5a7c"
	exFaxA    = "fax_5v2k8m0q3r7t9w1y4z6b8d0f2h"
	exFaxB    = "fax_5v2k8m0q3r7t9w1y4z6b8d0f2j"
)

// batchExample is a batch's summary in the examples.
func batchExample(status string, set obj) obj {
	b := obj{"id": exBatchID, "mode": "test", "documentId": "doc_7c9e1g3j5k7m9p1r3t5v7x9z1b", "createdAt": "2026-01-02T15:04:05Z",
		"total": 2, "counts": obj{"scheduled": 0, "queued": 2, "sending": 0, "delivered": 0, "partial": 0, "failed": 0, "canceled": 0},
		"currency": core.Currency, "price": "0.28", "priceCents": 28,
		"faxes": []any{obj{"id": exFaxA, "status": status, "to": "+12125550100"}, obj{"id": exFaxB, "status": status, "to": "+12125550101"}}}
	for k, v := range set {
		b[k] = v
	}
	return b
}

func (s *specBuilder) batchPaths(limit obj, sendErrs []errs) obj {
	idempotencyKey := obj{"$ref": "#/components/parameters/IdempotencyKey"}
	replayed := obj{"Idempotent-Replayed": obj{"description": "true when this is the stored response of an earlier request with the same key", "schema": obj{"type": "string", "enum": []string{"true"}}}}
	withReplayed := func(r obj) obj {
		r["200"].(obj)["headers"] = replayed
		return r
	}
	completed := batchExample("delivered", obj{"completedAt": "2026-01-02T15:05:00Z",
		"counts": obj{"scheduled": 0, "queued": 0, "sending": 0, "delivered": 2, "partial": 0, "failed": 0, "canceled": 0}})
	canceled := batchExample("canceled", obj{"completedAt": "2026-01-02T15:04:30Z",
		"counts": obj{"scheduled": 0, "queued": 0, "sending": 0, "delivered": 0, "partial": 0, "failed": 0, "canceled": 2}})
	listed := batchExample("queued", nil)
	delete(listed, "faxes")
	resent := obj{"id": exFaxB, "mode": "test", "status": "queued", "to": "+12125550100", "documentId": "doc_7c9e1g3j5k7m9p1r3t5v7x9z1b", "pages": 2,
		"cover": false, "currency": core.Currency, "paymentMethod": "credits", "pagesSent": 0, "attemptCount": 0,
		"createdAt": "2026-01-02T15:04:05Z", "updatedAt": "2026-01-02T15:04:05Z", "price": "0.14", "priceCents": 14, "latestAttempt": nil,
		"resendOf": exFaxA}
	return obj{
		"/api/v1/batches": obj{
			"post": withScope(core.OpSendBatch, obj{
				"operationId": "sendBatch", "tags": []string{"batches"},
				"summary":     "Broadcast one document to up to 100 recipients, paid with prepaid credits",
				"description": fmt.Sprintf("Each recipient becomes a fax of its own (its own id, price, credit hold, events), named by the batch (batchId). All or nothing: every recipient is checked and priced first, and the first refusal refuses the whole request, naming the recipient (its index in recipient, and to); then the batch and every fax, hold and job are created in one transaction, and too few credits for the total (price) create nothing (402). The options (cover, coverText, coverPage, header, resolution, sendAt, retry, from) apply to every recipient, as in sendFax; a recipient's coverPage (recipientName, recipientCompany) gives its fax a cover page with those fields in place of the batch's. 1 to %d recipients. A batch of n counts as n sends against the send rate limit, charged at once (docs/limits.md). Idempotency-Key is required: the same key and body return the batch as created with Idempotent-Replayed: true; the same key with another body is a 409. batch.completed is sent when the batch's last fax ends.", faxes.MaxBatchRecipients),
				"parameters":  []any{idempotencyKey},
				"requestBody": jsonRequest("SendBatchRequest", true, obj{"uploadToken": "u1.eyJ1IjoidXBsXzAxIn0.c2lnbmF0dXJl",
					"recipients": []any{obj{"to": "+12125550100", "coverPage": obj{"recipientName": "Ada"}}, obj{"to": "+12125550101"}}}),
				"responses": withReplayed(s.responses(s.jsonResponse("the batch as created (or, on replay, the batch the key created)", "Batch", batchExample("queued", nil)), authErrs(), sendErrs)),
			}),
			"get": withScope(core.OpListBatches, obj{
				"operationId": "listBatches", "tags": []string{"batches"},
				"summary":     "List batches, newest first",
				"description": "Cursor pagination: pass nextCursor as starting_after. Listed batches have neither counts filled in nor faxes; getBatch has them.",
				"parameters": []any{limit,
					queryParam("starting_after", "the id of the last batch of the previous page (its nextCursor)", obj{"type": "string"})},
				"responses": s.responses(s.jsonResponse("a page of batches", "BatchList", obj{"data": []any{listed}, "hasMore": false}), authErrs()),
			}),
		},
		"/api/v1/batches/{id}": obj{"get": withScope(core.OpGetBatch, obj{
			"operationId": "getBatch", "tags": []string{"batches"},
			"summary":     "Get a batch's status summary",
			"description": "How many of its faxes are in each status, its total price, and every fax (id, status, to). completedAt is set when the last fax ended.",
			"parameters":  []any{pathParam("id", "the batch id (bat_…)")},
			"responses":   s.responses(s.jsonResponse("the batch", "Batch", completed), authErrs(), []errs{e(404, core.CodeNotFound)}),
		})},
		"/api/v1/batches/{id}/cancel": obj{"post": withScope(core.OpCancelBatch, obj{
			"operationId": "cancelBatch", "tags": []string{"batches"},
			"summary":     "Cancel every fax of a batch that has not started",
			"description": "Scheduled and queued faxes are canceled as cancelFax cancels them (their holds released, fax.canceled each); faxes being sent or ended go on as they are. Answers the summary after.",
			"parameters":  []any{pathParam("id", "the batch id (bat_…)")},
			"responses":   s.responses(s.jsonResponse("the batch after", "Batch", canceled), authErrs(), []errs{e(404, core.CodeNotFound)}),
		})},
		"/api/v1/faxes/{id}/resend": obj{"post": withScope(core.OpSendFax, obj{
			"operationId": "resendFax", "tags": []string{"faxes"},
			"summary":     "Send an earlier fax's document again, paid with prepaid credits",
			"description": "A new fax (resendOf names the earlier one), priced and held like sendFax, of the earlier fax's document while it is kept (410 document_purged after). Every field is optional: the new fax has the earlier one's to, from and options, except what the body gives; each option given replaces the earlier one whole (coverPage replaces the cover page, coverText its message), and sendAt is never carried over. Idempotency-Key is required, in the same namespace as sendFax's.",
			"parameters":  []any{idempotencyKey, pathParam("id", "the earlier fax's id (fax_…)")},
			"requestBody": jsonRequest("ResendFaxRequest", false, obj{"to": "+12125550101"}),
			"responses": withReplayed(s.responses(s.jsonResponse("the new fax (or, on replay, the fax the key created)", "Fax", resent), authErrs(),
				batchSendErrs(), []errs{e(410, faxes.CodeDocumentPurged)})),
		})},
	}
}

// batchSendErrs are what sendBatch and resendFax answer besides authErrs.
func batchSendErrs() []errs {
	return []errs{
		e(400, core.CodeIdempotencyKeyRequired, numbers.CodeFromNumberNotOwned), e(402, credits.CodeInsufficientCredits),
		e(403, documents.CodeUploadInvalid), e(404, core.CodeNotFound),
		e(409, core.CodeIdempotencyConflict, documents.CodeUploadPending), e(415, core.CodeUnsupportedContentType),
		e(422, core.CodeInvalidDestination, core.CodePremiumDestination, core.CodeUnsupportedDestination),
		e(429, core.CodeRateLimited), e(503, faxes.CodeProviderUnavailable),
	}
}

func batchSchemas() obj {
	str := func(desc string) obj { return obj{"type": "string", "description": desc} }
	dateTime := obj{"type": "string", "format": "date-time"}
	count := obj{"type": "integer", "minimum": 0}
	options := obj{
		"cover":     obj{"type": "boolean", "default": false, "description": "add a cover page (billed as one page) with the owner's sender fields"},
		"coverText": obj{"type": "string", "maxLength": faxes.MaxCoverText, "description": "the cover page's message"},
		"from":      str("the sender: one of your active fax numbers in the key's mode (E.164 or its num_… id)"),
	}
	// The send options, as sendFax takes them.
	maps.Copy(options, faxOptionProps())
	props := func(extra obj) obj {
		out := obj{}
		for k, v := range options {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	return obj{
		"SendBatchRequest": obj{
			"type": "object", "additionalProperties": false, "required": []string{"recipients"},
			"oneOf": []any{obj{"required": []string{"uploadToken"}}, obj{"required": []string{"documentId"}}},
			"properties": props(obj{
				"uploadToken": str("the token of a completed upload"),
				"documentId":  str("the id of a stored document"),
				"recipients": obj{"type": "array", "minItems": 1, "maxItems": faxes.MaxBatchRecipients, "items": obj{
					"type": "object", "additionalProperties": false, "required": []string{"to"}, "properties": obj{
						"to": str("destination fax number in E.164 form"),
						"coverPage": obj{"type": "object", "additionalProperties": false, "description": "this recipient's cover page fields; gives its fax a cover page", "properties": obj{
							"recipientName":    obj{"type": "string", "maxLength": faxes.MaxCoverField},
							"recipientCompany": obj{"type": "string", "maxLength": faxes.MaxCoverField},
						}},
					}}},
			}),
		},
		"ResendFaxRequest": obj{
			"type": "object", "additionalProperties": false,
			"properties": props(obj{"to": str("the destination; default the earlier fax's")}),
		},
		"Batch": obj{"type": "object", "required": []string{"id", "mode", "documentId", "createdAt", "total", "counts", "currency", "price", "priceCents"},
			"properties": obj{
				"id": str("bat_…"), "mode": obj{"type": "string", "enum": []string{"live", "test"}}, "documentId": str("the document every fax sends"),
				"createdAt": dateTime, "completedAt": obj{"type": "string", "format": "date-time", "description": "when the last fax ended"},
				"total": obj{"type": "integer", "description": "the batch's faxes (its recipients)"},
				"counts": obj{"type": "object", "additionalProperties": false, "required": []string{"scheduled", "queued", "sending", "delivered", "partial", "failed", "canceled"},
					"properties": obj{"scheduled": count, "queued": count, "sending": count, "delivered": count, "partial": count, "failed": count, "canceled": count}},
				"currency": obj{"type": "string", "enum": []string{core.Currency}},
				"price":    str("decimal USD: every fax's price"), "priceCents": obj{"type": "integer"},
				"faxes": obj{"type": "array", "maxItems": faxes.MaxBatchRecipients, "description": "every fax of the batch in id order; absent in lists", "items": obj{
					"type": "object", "required": []string{"id", "status", "to"},
					"properties": obj{"id": str("fax_…"), "status": obj{"type": "string"}, "to": str("E.164")}}},
			}},
		"BatchList": obj{"type": "object", "required": []string{"data", "hasMore"}, "properties": obj{
			"data": obj{"type": "array", "items": ref("Batch")}, "hasMore": obj{"type": "boolean"},
			"nextCursor": str("present when hasMore: pass it as starting_after"),
		}},
	}
}
