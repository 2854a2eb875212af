package rest

import (
	"fmt"
	"maps"
	"strings"
	"unicode"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/agents"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/events"
)

// The event log in /openapi.json: the list API (listEvents, getEvent), the
// low-balance alert (getCreditAlert, setCreditAlert), and the top-level
// webhooks map (OpenAPI 3.1), one entry per events.Types() entry, each a
// POST whose body is the event envelope with that type's data schema and
// an example. docs/events.md says the same in prose.

// eventDoc documents one event type.
type eventDoc struct {
	t events.Type
	// when says when it is written.
	when string
	// data names the components schema of its data.
	data string
	// example is an example of its data.
	example obj
}

const (
	evTS      = "2026-01-02T15:04:05Z"
	evFaxID   = "fax_5v2k8m0q3r7t9w1y4z6b8d0f2h"
	evDocID   = "doc_7c9e1g3j5k7m9p1r3t5v7x9z1b"
	evNumID   = "num_4b6d8f0h2k4m6p8r0t2v4x6z8b"
	evInbID   = "inb_6d8f0h2k4m6p8r0t2v4x6z8b0d"
	evAprID   = "apr_2k4m6p8r0t2v4x6z8b0d2f4h6k"
	evRegID   = "agr_8r0t2v4x6z8b0d2f4h6k8m0p2r"
	evDagID   = "dag_0t2v4x6z8b0d2f4h6k8m0p2r4t"
	evHostID  = "hst_v4x6z8b0d2f4h6k8m0p2r4t6v"
	evLedger  = "led_1a3c5e7g9j1l3n5q7s9u1w3y5a"
	evEventID = "evt_01jh2k4m6p8r0t2v4x6z8b0d2f"
)

// eventSchemaName is the components schema of a type's envelope:
// inbound_fax.received → InboundFaxReceivedEvent.
func eventSchemaName(t events.Type) string {
	var b strings.Builder
	up := true
	for _, r := range string(t) {
		switch {
		case r == '.' || r == '_':
			up = true
		case up:
			b.WriteRune(unicode.ToUpper(r))
			up = false
		default:
			b.WriteRune(r)
		}
	}
	return b.String() + "Event"
}

func eventDocs() []eventDoc {
	attempt := func(status, code string, retryable bool, sent int) obj {
		a := obj{"id": "att_3b5d7f9h1k3m5p7r9t1v3x5z7c", "number": 1, "provider": "simulated", "providerRef": "sim_123",
			"status": status, "retryable": retryable, "pagesSent": sent, "durationMs": 41000, "startedAt": evTS}
		if status != "sending" {
			a["finishedAt"] = "2026-01-02T15:04:46Z"
		}
		if code != "" {
			a["failureCode"], a["failureReason"] = code, strings.ReplaceAll(code, "_", " ")
		}
		return a
	}
	fax := func(status string, set obj) obj {
		f := obj{"id": evFaxID, "mode": "test", "status": status, "to": "+12125550100", "documentId": evDocID, "pages": 2,
			"cover": false, "currency": core.Currency, "paymentMethod": "credits", "pagesSent": 0, "attemptCount": 0,
			"createdAt": evTS, "updatedAt": evTS, "price": "0.14", "priceCents": 14, "latestAttempt": nil}
		maps.Copy(f, set)
		return f
	}
	ended := "2026-01-02T15:04:46Z"
	number := func(status string, set obj) obj {
		n := obj{"id": evNumID, "mode": "test", "number": "+12125550142", "country": "US", "region": "NY", "locality": "New York",
			"status": status, "provider": "simulated", "createdAt": evTS, "updatedAt": evTS,
			"monthlyPrice": "2.00", "monthlyCents": 200, "currency": core.Currency}
		maps.Copy(n, set)
		return n
	}
	inbound := func(set obj) obj {
		f := obj{"id": evInbID, "mode": "test", "numberId": evNumID, "from": "+14155550100", "to": "+12125550142", "pages": 1,
			"status": "received", "provider": "simulated", "bytes": 48213, "textStatus": "extracted", "textMethod": "text",
			"receivedAt": evTS, "createdAt": evTS, "updatedAt": evTS, "processedAt": evTS, "path": "/api/v1/inbox/" + evInbID}
		maps.Copy(f, set)
		return f
	}
	entry := func(kind, amount string, cents int, set obj) obj {
		e := obj{"id": evLedger, "mode": "test", "kind": kind, "reason": "", "createdAt": evTS, "amount": amount, "amountCents": cents}
		maps.Copy(e, set)
		return e
	}
	approval := func(status string, set obj) obj {
		a := obj{"id": evAprID, "kind": string(approvals.KindFaxSend), "requester": "Mailer on Laptop",
			"summary": "Send a 2-page fax to +12125550100 for $0.14", "status": status, "requiresUserVerification": true,
			"createdAt": evTS, "expiresAt": "2026-01-02T15:19:05Z"}
		maps.Copy(a, set)
		return a
	}
	return []eventDoc{
		{events.FaxScheduled, "a fax was created with a sendAt ahead: its price is held now, and it stays scheduled until then (cancel releases the hold)", "Fax",
			fax("scheduled", obj{"sendAt": "2026-01-03T09:00:00Z", "nextAttemptAt": "2026-01-03T09:00:00Z"})},
		{events.FaxQueued, "a fax was created (sent with credits, paid at its checkout, approved by the owner for a delegated agent); its credit hold is placed in the same transaction", "Fax",
			fax("queued", nil)},
		{events.FaxSending, "an attempt started: the provider is dialing", "Fax",
			fax("sending", obj{"attemptCount": 1, "latestAttempt": attempt("sending", "", false, 0)})},
		{events.FaxRetrying, "an attempt failed in a way worth retrying (busy, no answer, provider error) and another is scheduled at nextAttemptAt; the fax is queued again", "Fax",
			fax("queued", obj{"attemptCount": 1, "failureCode": "busy", "failureReason": "busy", "nextAttemptAt": "2026-01-02T15:05:16Z", "latestAttempt": attempt("failed", "busy", true, 0)})},
		{events.FaxDelivered, "every page arrived; the credit hold is captured", "Fax",
			fax("delivered", obj{"attemptCount": 1, "pagesSent": 2, "completedAt": ended, "updatedAt": ended, "latestAttempt": attempt("delivered", "", false, 2)})},
		{events.FaxPartial, "the call ended with some pages sent; only those are paid for", "Fax",
			fax("partial", obj{"attemptCount": 1, "pagesSent": 1, "completedAt": ended, "updatedAt": ended, "failureCode": "call_dropped", "failureReason": "call dropped",
				"latestAttempt": attempt("partial", "call_dropped", false, 1)})},
		{events.FaxFailed, "the fax will not be delivered (not retryable, or the attempts ran out); the credit hold is released", "Fax",
			fax("failed", obj{"attemptCount": 3, "completedAt": ended, "updatedAt": ended, "failureCode": "no_answer", "failureReason": "no answer",
				"latestAttempt": attempt("failed", "no_answer", true, 0)})},
		{events.FaxCanceled, "the owner canceled a queued fax; the credit hold is released", "Fax",
			fax("canceled", obj{"completedAt": evTS, "failureCode": "canceled", "failureReason": "canceled by the owner"})},

		{events.BatchCompleted, "the last fax of a batch ended (each fax has its own fax.* events); once per batch, written by the transaction that ended that fax. The data is the batch's summary as getBatch shows it", "Batch",
			batchExample("delivered", obj{"completedAt": ended, "counts": obj{"scheduled": 0, "queued": 0, "sending": 0, "delivered": 2, "partial": 0, "failed": 0, "canceled": 0}})},

		{events.InboundReceived, "a fax that arrived on one of your numbers was processed: status received (its text and PDF can be read at path) or failed (failureReason says why; the sender did reach you). One per fax", "InboundFaxEventData",
			inbound(nil)},
		{events.InboundRead, "the first time the owner or an agent read the received fax whole (getInboxFax, download, an agent's read_inbox_fax); once per fax", "InboundFaxEventData",
			inbound(obj{"readAt": "2026-01-02T15:10:00Z", "readBy": obj{"kind": string(core.PrincipalOAuthGrant), "name": "Claude"}})},

		{events.NumberActive, "the provider provisioned a paid number, or a past_due number's renewal was paid at last: it receives and sends", "Number",
			number("active", obj{"paidThrough": "2026-02-02T15:04:05Z", "activatedAt": evTS})},
		{events.NumberFailed, "the provider could not provision a paid number; its month is returned as credits", "Number",
			number("failed", obj{"failureCode": "provisioning_failed", "failureReason": "the provider could not provision the number"})},
		{events.NumberRenewalFailed, "the month could not be paid from credits: the number is past_due, still works, and is released when the grace period ends unpaid", "Number",
			number("past_due", obj{"paidThrough": "2026-02-02T15:04:05Z", "activatedAt": evTS, "failureCode": "renewal_insufficient_credits",
				"failureReason": "the month from 2026-02-02 (2.00) could not be paid: the test balance is too low; add credits before 2026-02-09 or the number is released"})},
		{events.NumberReleased, "the number was given back: by the owner, or by the sweeper when a past_due number's grace period ended (failureCode renewal_insufficient_credits)", "Number",
			number("released", obj{"paidThrough": "2026-02-02T15:04:05Z", "activatedAt": evTS, "releasedAt": "2026-02-09T15:04:05Z"})},

		{events.CreditsPurchased, "a credit pack was paid and its credits granted: at a hosted checkout (checkoutId) or by an agent's AP2 purchase the owner approved (cartId)", "CreditsPurchasedData",
			obj{"packId": "pack_10", "checkoutId": "chk_0a2c4e6g8j0l2n4q6s8u0w2y4a", "price": "10.00", "priceCents": 1000, "credit": "10.00", "creditCents": 1000,
				"ledgerEntry": entry("purchase", "10.00", 1000, obj{"reason": "credit pack pack_10 (checkout chk_0a2c4e6g8j0l2n4q6s8u0w2y4a)"})}},
		{events.CreditsLow, "a ledger entry (a fax's hold, a number's month, a reversal) took the available balance from at or above your threshold (setCreditAlert) to below it; once per crossing, again after a top-up", "CreditsLowData",
			obj{"mode": "test", "currency": core.Currency, "balance": "4.93", "balanceCents": 493, "held": "0.14", "heldCents": 14,
				"threshold": "5.00", "thresholdCents": 500,
				"ledgerEntry": entry("hold", "-0.14", -14, obj{"faxId": evFaxID, "reason": "hold for fax " + evFaxID + " to +12125550100"})}},

		{events.ApprovalRequested, "an agent or app asked the owner to decide something (consent, agent claim, device approval, a delegated fax, an AP2 charge); the owner decides in the console", "ApprovalEventData",
			approval("pending", nil)},
		{events.ApprovalDecided, "the owner approved or declined, or the request was withdrawn before a decision (expired: superseded or its requester revoked). An approval that lapses at expiresAt writes nothing", "ApprovalEventData",
			approval("approved", obj{"decidedAt": "2026-01-02T15:06:00Z"})},

		{events.AgentRegistered, "an agent registered with one of your enrollment tokens (kind registration), or a delegated host registered an agent (kind delegated: pending the owner's device approval, or active when the host's defaults cover it)", "AgentEventData",
			obj{"id": evRegID, "kind": agents.EventRegistration, "name": "Build bot", "type": "service_auth", "status": "active",
				"scopes": []string{"fax:read", "credits:read"}, "createdAt": evTS}},
		{events.AgentRevoked, "an agent was revoked: by the owner, by itself (its identity assertion), by its host, or with its host", "AgentEventData",
			obj{"id": evDagID, "kind": agents.EventDelegated, "name": "Mailer", "hostId": evHostID, "hostName": "Laptop", "status": "revoked",
				"capabilities": []string{"get_credits", "send_fax"}, "createdAt": evTS, "revokedAt": "2026-01-03T09:00:00Z", "revokedBy": agents.RevokedByOwner}},
	}
}

// eventPaths are listEvents, getEvent and the credit alert.
func (s *specBuilder) eventPaths(limit obj) obj {
	docs := eventDocs()
	first := docs[len(docs)-1]
	envelope := obj{"id": evEventID, "type": string(first.t), "timestamp": evTS, "mode": "test", "data": first.example}
	queued := docs[0]
	queuedEnv := obj{"id": evEventID, "type": string(queued.t), "timestamp": evTS, "mode": "test", "data": queued.example}
	alert := obj{"mode": "test", "currency": core.Currency, "threshold": "5.00", "thresholdCents": 500, "balance": "9.86", "balanceCents": 986, "below": false}
	retention := int(events.Retention.Hours() / 24)
	return obj{
		"/api/v1/events": obj{"get": obj{
			"operationId": "listEvents", "tags": []string{"events"},
			"summary":     "List your events, newest first",
			"description": fmt.Sprintf("The event log of the key's owner and mode: what webhooks deliver, kept %d days, so a client that missed deliveries catches up here. Newest first; page with starting_after (the id of the last event of the previous page, its nextCursor). Only the types the credential may read are listed: faxes and numbers need fax:read, received faxes inbox:read, credits credits:read, approvals and agents the account's own credentials (API keys carry all). Event ids are the webhook-id of their deliveries: dedupe on them. See docs/events.md.", retention),
			"parameters": []any{limit,
				queryParam("starting_after", "the id of the last event of the previous page (its nextCursor)", obj{"type": "string"}),
				obj{"name": "type", "in": "query", "required": false, "style": "form", "explode": true,
					"description": fmt.Sprintf("only these types: repeat the parameter or separate types with commas; \"fax.*\" stands for every type of a resource. An unknown type is a 400. At most %d.", maxTypeFilters),
					"schema":      obj{"type": "array", "maxItems": maxTypeFilters, "items": obj{"type": "string", "examples": []string{"fax.delivered", "fax.*", "fax.delivered,fax.failed"}}}},
			},
			"responses": s.responses(s.jsonResponse("a page of events", "EventList", obj{"data": []any{envelope, queuedEnv}, "hasMore": true, "nextCursor": evEventID}), authErrs()),
		}},
		"/api/v1/events/{id}": obj{"get": obj{
			"operationId": "getEvent", "tags": []string{"events"},
			"summary":     "Get one event",
			"description": fmt.Sprintf("One event of the key's owner and mode, as its webhook delivers it. An event older than %d days, another owner's, or of a type the credential may not read is not found.", retention),
			"parameters":  []any{pathParam("id", "the event id (evt_…), also the webhook-id of its deliveries")},
			"responses":   s.responses(s.jsonResponse("the event", "Event", queuedEnv), authErrs(), []errs{e(404, core.CodeNotFound)}),
		}},
		"/api/v1/credits/alert": obj{
			"get": withScope(core.OpGetCredits, obj{
				"operationId": "getCreditAlert", "tags": []string{"credits"},
				"summary":     "Get the low-balance alert",
				"description": "The low-balance threshold of the key's mode (null: off, the default) and the balance it watches; below says the balance is under it already.",
				"responses":   s.responses(s.jsonResponse("the alert", "CreditAlert", alert), authErrs()),
			}),
			"put": obj{
				"operationId": "setCreditAlert", "tags": []string{"credits"},
				"summary":     "Set or turn off the low-balance alert",
				"description": fmt.Sprintf("With a threshold, credits.low is written (and delivered) when a ledger entry takes the available balance from at or above it to below it: once per crossing; topping up to the threshold again re-arms it. Setting it writes no event, even when the balance is below it already (below: true). threshold is a decimal USD string to the cent, above 0 and at most %s; null turns the alert off. The account's setting: API keys only (and the owner's console), not agents.", core.FormatUSD(credits.MaxThresholdMicros)),
				"security":    []any{obj{"apiKey": []string{}}},
				"requestBody": jsonRequest("SetCreditAlertRequest", true, obj{"threshold": "5.00"}),
				"responses":   s.responses(s.jsonResponse("the alert", "CreditAlert", alert), authErrs(), []errs{e(415, core.CodeUnsupportedContentType)}),
			},
		},
	}
}

// eventSchemas are the envelope of every type, its data schemas, the list
// and the alert.
func eventSchemas() obj {
	str := func(desc string) obj { return obj{"type": "string", "description": desc} }
	dateTime := obj{"type": "string", "format": "date-time"}
	modeSchema := obj{"type": "string", "enum": []string{"live", "test"}}
	currency := obj{"type": "string", "enum": []string{core.Currency}}
	strict := func(required []string, props obj) obj {
		return obj{"type": "object", "additionalProperties": false, "required": required, "properties": props}
	}
	types := make([]string, 0)
	for _, t := range events.Types() {
		types = append(types, string(t))
	}
	envelope := func(typ, data obj, desc string) obj {
		return obj{"type": "object", "additionalProperties": false, "description": desc,
			"required": []string{"id", "type", "timestamp", "mode", "data"},
			"properties": obj{
				"id":        obj{"type": "string", "pattern": "^" + core.PrefixEvent, "description": "the event's id; the webhook-id header of every delivery of it: dedupe on it"},
				"type":      typ,
				"timestamp": obj{"type": "string", "format": "date-time", "description": "when the change happened (RFC 3339, UTC)"},
				"mode":      modeSchema,
				"data":      data,
			}}
	}
	ledgerEntry := ref("LedgerEntry")
	out := obj{
		"Event": envelope(obj{"type": "string", "enum": types}, obj{"type": "object", "description": "the type's data: see the webhooks of this document"},
			"An event: what happened (type), when, in which mode, and the resource as the API shows it then (data)."),
		"EventList": obj{"type": "object", "required": []string{"data", "hasMore"}, "properties": obj{
			"data": obj{"type": "array", "items": ref("Event")}, "hasMore": obj{"type": "boolean"},
			"nextCursor": str("present when hasMore: pass it as starting_after"),
		}},
		"InboundFaxEventData": obj{
			"description": "a received fax as getInboxFax shows it, without its text, with the path to read it",
			"allOf": []any{ref("InboundFax"), obj{"type": "object", "required": []string{"path"}, "properties": obj{
				"path": obj{"type": "string", "pattern": "^/api/v1/inbox/inb_", "description": "GET it on the API origin with an API key (inbox:read) for the text and a download link"},
				"readBy": strict([]string{"kind"}, obj{
					"kind": obj{"type": "string", "enum": []string{string(core.PrincipalAPIKey), string(core.PrincipalOwnerSession), string(core.PrincipalOAuthGrant), string(core.PrincipalAgent), string(core.PrincipalDelegated)}},
					"name": str("the app's or agent's name, as the owner knows it"),
				}),
			}}},
			"not":                   obj{"anyOf": []any{obj{"required": []string{"text"}}, obj{"required": []string{"textPreview"}}}},
			"unevaluatedProperties": false,
		},
		"CreditsPurchasedData": strict([]string{"packId", "price", "priceCents", "credit", "creditCents", "ledgerEntry"}, obj{
			"packId": str("the pack bought"), "checkoutId": str("the hosted checkout that was paid"), "cartId": str("the AP2 cart an agent bought"),
			"price": str("decimal USD paid"), "priceCents": obj{"type": "integer"},
			"credit": str("decimal USD credited"), "creditCents": obj{"type": "integer"},
			"ledgerEntry": ledgerEntry,
		}),
		"CreditsLowData": strict([]string{"mode", "currency", "balance", "balanceCents", "held", "heldCents", "threshold", "thresholdCents", "ledgerEntry"}, obj{
			"mode": modeSchema, "currency": currency,
			"balance": str("decimal USD available right after the entry"), "balanceCents": obj{"type": "integer"},
			"held": str("decimal USD held for faxes in flight"), "heldCents": obj{"type": "integer"},
			"threshold": str("your threshold, decimal USD"), "thresholdCents": obj{"type": "integer"},
			"ledgerEntry": ledgerEntry,
		}),
		"ApprovalEventData": strict([]string{"id", "kind", "requester", "summary", "status", "requiresUserVerification", "createdAt", "expiresAt"}, obj{
			"id": str("apr_…"),
			"kind": obj{"type": "string", "enum": []string{string(approvals.KindOAuthConsent), string(approvals.KindAgentClaim), string(approvals.KindDevice),
				string(approvals.KindVerifiedAction), string(approvals.KindFaxSend), string(approvals.KindCreditPurchase)}},
			"requester": str("who asks: the app, agent or host name"), "summary": str("what is asked, in one line"),
			"status":                   obj{"type": "string", "enum": []string{string(approvals.Pending), string(approvals.Approved), string(approvals.Declined), string(approvals.Expired)}},
			"requiresUserVerification": obj{"type": "boolean", "description": "approving needs the owner's passkey"},
			"createdAt":                dateTime, "expiresAt": dateTime, "decidedAt": dateTime,
		}),
		"AgentEventData": strict([]string{"id", "kind", "name", "status", "createdAt"}, obj{
			"id":   str("agr_… (a registration) or dag_… (a delegated agent)"),
			"kind": obj{"type": "string", "enum": []string{agents.EventRegistration, agents.EventDelegated}},
			"name": obj{"type": "string"}, "type": obj{"type": "string", "enum": []string{agents.TypeService, agents.TypeAnonymous}},
			"hostId": str("a delegated agent's host"), "hostName": obj{"type": "string"},
			"status":       obj{"type": "string", "enum": []string{"active", "pending", "revoked", "rejected"}},
			"scopes":       obj{"type": "array", "items": obj{"type": "string"}, "description": "a registration's scopes (requested until its claim is approved)"},
			"capabilities": obj{"type": "array", "items": obj{"type": "string"}, "description": "a delegated agent's capabilities (granted; requested while pending)"},
			"createdAt":    dateTime, "revokedAt": dateTime,
			"revokedBy": obj{"type": "string", "enum": []string{agents.RevokedByOwner, agents.RevokedByAgent, agents.RevokedByHost}},
		}),
		"CreditAlert": obj{"type": "object", "required": []string{"mode", "currency", "threshold", "thresholdCents", "balance", "balanceCents", "below"}, "properties": obj{
			"mode": modeSchema, "currency": currency,
			"threshold":      obj{"type": []string{"string", "null"}, "description": "decimal USD; null when the alert is off"},
			"thresholdCents": obj{"type": []string{"integer", "null"}},
			"balance":        str("decimal USD available now"), "balanceCents": obj{"type": "integer"},
			"below": obj{"type": "boolean", "description": "the balance is under the threshold already: no crossing until it is topped up to the threshold"},
		}},
		"SetCreditAlertRequest": obj{"type": "object", "additionalProperties": false, "required": []string{"threshold"}, "properties": obj{
			"threshold": obj{"type": []string{"string", "null"}, "pattern": `^[0-9]+(\.[0-9]{1,2})?$`, "description": "decimal USD to the cent, e.g. \"5.00\"; null turns the alert off"},
		}},
	}
	for _, d := range eventDocs() {
		out[eventSchemaName(d.t)] = envelope(obj{"type": "string", "const": string(d.t)}, ref(d.data), string(d.t)+": "+d.when+".")
	}
	return out
}

// webhookHeaders are the Standard Webhooks headers of every delivery.
func webhookHeaders() []any {
	header := func(name, desc string, schema obj) obj {
		return obj{"name": name, "in": "header", "required": true, "description": desc, "schema": schema}
	}
	return []any{
		header("webhook-id", "the event's id (evt_…), the same on every retry and redelivery of it: a receiver that has seen it drops the duplicate", obj{"type": "string"}),
		header("webhook-timestamp", "when this delivery attempt was signed, Unix seconds; refuse one more than 5 minutes from your clock", obj{"type": "string", "pattern": "^[0-9]+$"}),
		header("webhook-signature", "space-separated signatures of \"{webhook-id}.{webhook-timestamp}.{body}\": v1,<base64 HMAC-SHA256 with the endpoint's whsec_ secret> and/or v1a,<base64 Ed25519 by faxhub's published key>; while a secret rotates, one per secret. Accept the delivery if any one verifies", obj{"type": "string"}),
	}
}

// eventWebhooks is the top-level webhooks map: one POST per event type.
func eventWebhooks() obj {
	out := obj{}
	for _, d := range eventDocs() {
		name := eventSchemaName(d.t)
		out[string(d.t)] = obj{"post": obj{
			"operationId": "webhook_" + strings.NewReplacer(".", "_").Replace(string(d.t)),
			"tags":        []string{"events"},
			"summary":     string(d.t),
			"description": "Written " + d.when + ". Delivered to your webhook endpoints that subscribe to it (Standard Webhooks), at least once; listed by listEvents.",
			"security":    noAuth(),
			"parameters":  webhookHeaders(),
			"requestBody": obj{"required": true, "content": obj{"application/json": obj{"schema": ref(name),
				"example": obj{"id": evEventID, "type": string(d.t), "timestamp": evTS, "mode": "test", "data": d.example}}}},
			"responses": obj{
				"2XX":     obj{"description": "received: answer within 15 seconds; the body is ignored"},
				"410":     obj{"description": "gone: the endpoint is disabled at once and gets nothing more"},
				"default": obj{"description": "any other answer, a redirect, or none in 15 seconds is a failure: retried with backoff for about three days"},
			},
		}}
	}
	return out
}
