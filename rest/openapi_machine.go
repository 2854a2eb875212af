package rest

import (
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/machine"
	"github.com/faxhub/faxhub/rest/mpp"
)

// machineLimits are the numbers the machine operations' descriptions state.
type machineLimits struct {
	maxPDF, maxBody int64
	maxPages        int
	challengeTTL    int // minutes
	statusTTL       int // days
}

// paymentInfo is the operation's x-payment-info (draft-payment-discovery):
// one offer per configured method, amount null because the price depends
// on the destination and the pages; the 402 challenge is authoritative.
func paymentInfo(offers []MachineOffer) obj {
	list := make([]any, 0, len(offers))
	for _, o := range offers {
		list = append(list, obj{"intent": o.Intent, "method": o.Method, "amount": nil, "currency": o.Currency,
			"description": "one fax, priced per destination and page"})
	}
	return obj{"offers": list}
}

// paymentProblemResponse is the 402 of createMachineFax: a problem of the
// payment protocol with one WWW-Authenticate challenge per method on offer.
func paymentProblemResponse() obj {
	examples := obj{}
	for _, t := range mpp.AllProblemTypes() {
		if t.Status() != http.StatusPaymentRequired {
			continue
		}
		examples[paymentCode(t)] = obj{"summary": t.Title(), "value": paymentProblemExample(t)}
	}
	return obj{
		"description": "Payment required: pay one of the challenges in WWW-Authenticate and retry the same request (same body, same request_id) with \"Authorization: Payment <credential>\". A credential that failed (expired, declined, malformed, for another body) gets a fresh 402 whose type says why.",
		"headers": obj{
			"WWW-Authenticate": obj{"description": "one Payment challenge per method on offer (id, realm, method, intent, request, expires, digest, opaque), ordered by Accept-Payment", "schema": obj{"type": "string"}},
			"Cache-Control":    obj{"description": "no-store", "schema": obj{"type": "string"}},
			"Retry-After":      obj{"description": "seconds to wait before presenting the same credential again (a Tempo transfer not mined yet)", "schema": obj{"type": "integer", "minimum": 1}},
		},
		"content": obj{"application/problem+json": obj{"schema": ref("PaymentProblem"), "examples": examples}},
	}
}

func paymentProblemExample(t mpp.ProblemType) obj {
	return obj{"type": string(t), "title": t.Title(), "status": t.Status(), "detail": paymentProblemDetails[t],
		"challengeId": "XmJ98SdsAdzwP9Oa-8In322Uh6yweMO6rywdomWk_V4", "code": paymentCode(t), "instance": "/api/v1/machine/faxes"}
}

// paymentProblemDetails are example details of the payment problems.
var paymentProblemDetails = map[mpp.ProblemType]string{
	mpp.ProblemPaymentRequired:       "this fax costs 0.21 USD; pay one of the challenges and retry the same request",
	mpp.ProblemPaymentInsufficient:   "the payment is less than the amount of the challenge",
	mpp.ProblemPaymentExpired:        "the challenge expired; pay one of the fresh challenges",
	mpp.ProblemVerificationFailed:    "the card was declined",
	mpp.ProblemMalformedCredential:   "the Payment credential is not base64url JSON",
	mpp.ProblemInvalidChallenge:      "the challenge was not issued by this server or was already used",
	mpp.ProblemMethodUnsupported:     "this server does not accept the method of the credential",
	mpp.ProblemPaymentActionRequired: "the card needs the cardholder's action (3-D Secure), which a machine cannot take",
}

// machinePaymentCodes are the payment problems' codes, in the Problem
// code enum too: REST clients switch on code everywhere.
func machinePaymentCodes() map[string]string {
	m := map[string]string{}
	for _, t := range mpp.AllProblemTypes() {
		m[paymentCode(t)] = paymentProblemDetails[t]
	}
	return m
}

func (s *specBuilder) machinePaths(opts Options, lim machineLimits, quote obj) obj {
	const (
		number    = "+12125550100"
		requestID = "8f14e45f-ceea-467f-a8f4-1c1b5b5c2e3d"
		ts        = "2026-01-02T15:04:05Z"
	)
	statusURL := opts.APIURL + "/api/v1/machine/faxes/status/ms1.ZmF4XzAx.c2lnbmF0dXJl"
	order := obj{"id": "fax_5v2k8m0q3r7t9w1y4z6b8d0f2h", "status": "queued", "to": number, "pages": 2, "cover": false, "mode": "test",
		"amount": "50", "currency": "usd", "price": "0.14", "method": "stripe", "requestId": requestID, "statusUrl": statusURL,
		"pagesSent": 0, "createdAt": ts}
	machineQuote := obj{}
	for k, v := range quote {
		machineQuote[k] = v
	}
	offers := []any{}
	for _, o := range opts.MachineOffers {
		amount, min := "21", false
		if o.Method == "stripe" {
			amount, min = "50", true
		} else if o.Method == "tempo" {
			amount = "210000"
		}
		offers = append(offers, obj{"method": o.Method, "intent": o.Intent, "amount": amount, "currency": o.Currency, "mode": "test", "minimumApplied": min, "refundsFailedFaxes": o.Method == "stripe"})
	}
	machineQuote["offers"] = offers

	off := e(503, machine.CodeMachinePaymentsOff, machine.CodeMachinePaymentsMissing, machine.CodeMachineBusy)
	docErrs := []errs{
		e(400, documents.CodeEmptyFile, CodeInvalidBase64), e(413, documents.CodeFileTooLarge),
		e(415, core.CodeUnsupportedContentType, documents.CodeUnsupportedType),
		e(422, core.CodeInvalidDestination, core.CodePremiumDestination, core.CodeUnsupportedDestination, documents.CodeTooManyPages, documents.CodeCorruptDocument, documents.CodeEncryptedDocument),
		e(429, core.CodeRateLimited),
	}
	create := obj{
		"operationId": "createMachineFax", "tags": []string{"machine"},
		"summary": "Send a fax paid per request (HTTP 402, Machine Payments Protocol)",
		"description": fmt.Sprintf("No account: the first request answers 402 with one WWW-Authenticate: Payment challenge per method on offer (filtered and ordered by Accept-Payment); the challenge's request carries the authoritative amount for this destination and document. Pay one and send the same body again with \"Authorization: Payment <credential>\" (one credential; two are a 400): 200 with the order and a Payment-Receipt header. "+
			"base64 is the PDF in standard base64 (padding optional, line breaks ignored): at most %d bytes decoded, %d bytes of body, %d pages. "+
			"request_id (1 to 200 printable ASCII characters, a fresh UUID per fax) covers the challenge and the charge: the same request_id with the same body gets the same challenges while they are live (%d minutes) and, once paid, the stored 200 with its receipt; with another body it is a 409. "+
			"The order's statusUrl carries its own capability (valid %d days): GET it without credentials. A fax that fails is refunded through its method where the method can refund (stripe: yes; tempo push transfers: no, see refundsFailedFaxes in the quote). Details: %s/llms.txt",
			lim.maxPDF, lim.maxBody, lim.maxPages, lim.challengeTTL, lim.statusTTL, opts.BaseURL),
		"security": noAuth(),
		"parameters": []any{
			obj{"name": "Accept-Payment", "in": "header", "required": false, "description": "methods the client can pay with, best first: \"stripe/charge, tempo/charge;q=0.5\"", "schema": obj{"type": "string"}},
		},
		"requestBody": jsonRequest("MachineFaxRequest", true, obj{"to": number, "base64": "JVBERi0xLjQK…", "request_id": requestID}),
		"responses": func() obj {
			r := s.responses(s.jsonResponse("the paid order (or, for a paid request_id, the stored one)", "MachineOrder", order), commonErrs(), docErrs, []errs{
				e(400, machine.CodeMultipleCredentials),
				e(409, machine.CodeRequestIDConflict, machine.CodePaymentInProgress),
				e(503, machine.CodePaymentProcessorUnavailable), off,
			})
			r["200"].(obj)["headers"] = obj{mpp.ReceiptHeader: obj{"description": "base64url JSON receipt {status, method, timestamp, reference, challengeId, externalId}", "schema": obj{"type": "string"}}}
			r["402"] = paymentProblemResponse()
			// method-unsupported is a payment problem answered with 400.
			bad := r["400"].(obj)["content"].(obj)["application/problem+json"].(obj)
			bad["examples"].(obj)[paymentCode(mpp.ProblemMethodUnsupported)] = obj{"summary": mpp.ProblemMethodUnsupported.Title(), "value": paymentProblemExample(mpp.ProblemMethodUnsupported)}
			bad["schema"] = obj{"oneOf": []any{ref("Problem"), ref("PaymentProblem")}}
			r["409"].(obj)["headers"] = obj{"Retry-After": obj{"description": "payment_in_progress: seconds until the concurrent request settling this credential is done", "schema": obj{"type": "integer", "minimum": 1}}}
			return r
		}(),
	}
	if len(opts.MachineOffers) > 0 {
		create["x-payment-info"] = paymentInfo(opts.MachineOffers)
	}
	return obj{
		"/api/v1/machine/faxes/validate": obj{"post": obj{
			"operationId": "validateMachineFax", "tags": []string{"machine"},
			"summary":     "Validate and price a machine-paid fax",
			"description": "No credential and no side effects: the quote and what each method on offer would charge for it (in its base units; a method's minimum applies to small prices). Send the document (base64, as for createMachineFax) or just its page count (pages), not both. Answers 503 machine_payments_disabled when machine payments are off on this server.",
			"security":    noAuth(),
			"requestBody": jsonRequest("MachineValidateRequest", true, obj{"to": number, "pages": 2, "cover": false}),
			"responses": s.responses(s.jsonResponse("the quote with the offers", "MachineQuote", machineQuote), commonErrs(), docErrs,
				[]errs{e(415, core.CodeUnsupportedContentType), off}),
		}},
		"/api/v1/machine/faxes": obj{"post": create},
		"/api/v1/machine/faxes/status/{token}": obj{"get": obj{
			"operationId": "getMachineFaxStatus", "tags": []string{"machine"},
			"summary":     "Follow a machine-paid fax",
			"description": "The statusUrl of a paid order: the token in the path is the capability, so no credential is needed (keep the URL private). Answers the order with its current status, pages sent and refund state.",
			"security":    noAuth(),
			"parameters":  []any{pathParam("token", "the token of the order's statusUrl")},
			"responses":   s.responses(s.jsonResponse("the order", "MachineOrder", order), commonErrs(), []errs{e(404, machine.CodeStatusToken), off}),
		}},
	}
}

func machineSchemas() obj {
	str := func(desc string) obj { return obj{"type": "string", "description": desc} }
	dateTime := obj{"type": "string", "format": "date-time"}
	statuses := make([]string, len(faxes.Statuses))
	for i, st := range faxes.Statuses {
		statuses[i] = string(st)
	}
	payCodes := []string{}
	for _, t := range mpp.AllProblemTypes() {
		payCodes = append(payCodes, paymentCode(t))
	}
	slices.Sort(payCodes)
	return obj{
		"MachineFaxRequest": obj{"type": "object", "additionalProperties": false, "required": []string{"to", "base64", "request_id"}, "properties": withProps(obj{
			"to":         str("destination fax number, E.164"),
			"base64":     str("the PDF, standard base64 (padding optional, line breaks ignored)"),
			"request_id": obj{"type": "string", "minLength": 1, "maxLength": 200, "description": "client idempotency key covering the challenge and the charge; a fresh UUID per fax"},
			"cover":      obj{"type": "boolean", "default": false, "description": "add a cover page (billed as one page)"},
		}, machineOptionProps())},
		"MachineValidateRequest": obj{
			"type": "object", "additionalProperties": false, "required": []string{"to"},
			"oneOf": []any{obj{"required": []string{"base64"}}, obj{"required": []string{"pages"}}},
			"properties": withProps(obj{
				"to":     str("destination fax number, E.164"),
				"base64": str("the PDF, as for createMachineFax"),
				"pages":  obj{"type": "integer", "minimum": 1},
				"cover":  obj{"type": "boolean", "default": false},
			}, machineOptionProps()),
		},
		"MachineQuote": obj{"allOf": []any{ref("Quote"), obj{"type": "object", "required": []string{"offers"}, "properties": obj{
			"offers": obj{"type": "array", "items": obj{"type": "object", "required": []string{"method", "intent", "amount", "currency", "mode", "refundsFailedFaxes"}, "properties": obj{
				"method": obj{"type": "string"}, "intent": obj{"type": "string"},
				"amount":             str("what the challenge will ask, in the method's base units (cents for usd, 10^-6 for a 6-decimal token)"),
				"currency":           str("usd, or the token address"),
				"mode":               obj{"type": "string", "enum": []string{"live", "test"}},
				"minimumApplied":     obj{"type": "boolean", "description": "the method's minimum charge is more than the price"},
				"refundsFailedFaxes": obj{"type": "boolean", "description": "a fax that fails is refunded through this method"},
			}}},
		}}}},
		"MachineOrder": obj{"type": "object", "required": []string{"id", "status", "to", "pages", "cover", "mode", "amount", "currency", "price", "method", "requestId", "statusUrl", "pagesSent", "createdAt"}, "properties": withProps(obj{
			"id": str("fax_…"), "status": obj{"type": "string", "enum": statuses}, "to": str("E.164 destination"),
			"pages": obj{"type": "integer"}, "cover": obj{"type": "boolean"}, "mode": obj{"type": "string", "enum": []string{"live", "test"}},
			"amount": str("what was charged, in the method's base units"), "currency": str("usd, or the token address"),
			"price": str("the fax's price in decimal USD"), "method": str("stripe or tempo"), "requestId": str("the request_id"),
			"statusUrl": obj{"type": "string", "format": "uri", "description": "GET without credentials to follow the fax"},
			"pagesSent": obj{"type": "integer"}, "failureCode": obj{"type": "string"}, "failureReason": obj{"type": "string"},
			"refund":    obj{"type": "string", "enum": []string{"due", "refunded", "not_refundable"}, "description": "set when the fax failed or arrived in part"},
			"createdAt": dateTime, "completedAt": dateTime,
		}, machineOptionProps())},
		"PaymentProblem": obj{
			"type": "object", "description": "RFC 9457 problem details of the payment protocol (draft-ryan-httpauth-payment) plus faxhub's code, the type's last segment.",
			"required": []string{"type", "title", "status", "code"}, "additionalProperties": true,
			"properties": obj{
				"type":        str("https://paymentauth.org/problems/<code>"),
				"title":       obj{"type": "string"},
				"status":      obj{"type": "integer", "enum": []int{400, 402}},
				"detail":      obj{"type": "string"},
				"challengeId": str("the id of the first challenge offered with this answer"),
				"code":        obj{"type": "string", "enum": payCodes},
				"instance":    obj{"type": "string"},
			},
		},
	}
}

// machineOptionProps are the send options a machine's fax takes (and its order
// shows): sendFax's but sendAt, which a machine cannot use (it pays up
// front, with no account to hold money against: docs/payments.md).
func machineOptionProps() obj {
	o := faxOptionProps()
	delete(o, "sendAt")
	return o
}

// withProps adds props to an object schema's properties.
func withProps(props, more obj) obj {
	maps.Copy(props, more)
	return props
}
