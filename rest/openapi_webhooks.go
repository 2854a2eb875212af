package rest

import (
	"fmt"
	"maps"
	"slices"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/events"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/core/webhooks"
)

// The webhook endpoint operations of /openapi.json (docs/webhooks.md is
// the receiver's guide; the events themselves are the document's
// top-level webhooks map).

// webhookCodes are the problem codes of the webhook operations.
func webhookCodes() map[string]string {
	return map[string]string{
		webhooks.CodeInvalidURL:       "url must use https (this server accepts http only for loopback hosts, in developer mode or with --webhooks-allow-private)",
		webhooks.CodeTooManyEndpoints: "this account has 16 test-mode webhook endpoints, the most it may have; delete one first",
		webhooks.CodeEndpointDisabled: "the endpoint is disabled (gone); enable it before redelivering to it",
	}
}

// accountOnly is the security of an operation core gates with the
// account's own credentials (core.OpManageWebhooks): an API key; agents'
// tokens are refused with insufficient_scope.
func accountOnly(o obj) obj {
	o["security"] = []any{obj{"apiKey": []string{}}}
	desc, _ := o["description"].(string)
	o["description"] = desc + " Needs an API key: webhook endpoints are the account's settings, which agents' tokens cannot change."
	return o
}

func (s *specBuilder) webhookPaths(opts Options, cfg services.Config, limit obj) obj {
	const (
		ts    = "2026-01-02T15:04:05Z"
		epID  = "we_3c5e7g9j1l3n5q7s9u1w3y5a7c"
		whdID = "whd_01kb2m4p6r8t0v2x4z6b8d0f2h"
		evtID = "evt_01kb2m4p6r8t0v2x4z6b8d0f2h"
	)
	wc := cfg.Webhooks
	wc.SetDefaults()
	endpoint := obj{"id": epID, "mode": "test", "url": "https://example.com/webhooks/faxhub", "description": "billing backend",
		"eventTypes": []string{"fax.delivered", "fax.failed"}, "signing": []string{"v1"}, "enabled": true, "createdAt": ts, "updatedAt": ts}
	withSecret := maps.Clone(endpoint)
	withSecret["secret"] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwM0lNjWzI6rE="
	disabled := maps.Clone(endpoint)
	disabled["enabled"], disabled["disabledReason"], disabled["disabledAt"] = false, "gone", ts
	rotated := maps.Clone(withSecret)
	rotated["secretRotatedAt"], rotated["previousSecretExpiresAt"] = ts, "2026-01-03T15:04:05Z"
	attempt := obj{"number": 1, "status": "failed", "statusCode": 503, "error": "the endpoint answered 503", "response": `{"error":"busy"}`,
		"durationMs": 142, "startedAt": ts, "finishedAt": ts}
	delivery := obj{"id": whdID, "endpointId": epID, "mode": "test", "eventId": evtID, "eventType": "fax.delivered", "origin": "event",
		"status": "pending", "attemptCount": 1, "nextAttemptAt": "2026-01-02T15:04:10Z", "lastStatusCode": 503, "lastError": "the endpoint answered 503",
		"createdAt": ts, "updatedAt": ts, "attempts": []any{attempt}}
	queued := obj{"id": "whd_01kb2m4p6r8t0v2x4z6b8d0f2j", "endpointId": epID, "mode": "test", "eventId": evtID, "eventType": "fax.delivered",
		"origin": "redeliver", "status": "pending", "attemptCount": 0, "createdAt": ts, "updatedAt": ts, "attempts": []any{}}
	test := maps.Clone(queued)
	test["origin"], test["eventType"], test["eventId"] = "test", events.WebhookTest, "evt_01kb2m4p6r8t0v2x4z6b8d0f2k"

	idParam := pathParam("id", "the endpoint id (we_…)")
	notFound := e(404, core.CodeNotFound)
	body := func(schema string, ex any) obj { return jsonRequest(schema, true, ex) }
	return obj{
		"/api/v1/webhook-endpoints": obj{
			"post": accountOnly(obj{
				"operationId": "createWebhookEndpoint", "tags": []string{"webhooks"},
				"summary":     "Register a webhook endpoint",
				"description": fmt.Sprintf("Events of the key's mode that match eventTypes (empty: every type; \"fax.*\" every fax event) are POSTed to url, signed as Standard Webhooks says: webhook-id (the event id, the same on every retry and redelivery: drop duplicates by it), webhook-timestamp and webhook-signature with v1 (HMAC-SHA256 under the endpoint's secret) and/or v1a (Ed25519 under faxhub's key, published at getWebhookSigningKey). The answer carries secret (whsec_…): it is shown this once, and faxhub keeps it only sealed. url must be https (http only for loopback hosts where the operator allows it), without credentials or fragment, at most %d bytes; private, loopback, link-local and metadata addresses are refused unless the operator allows private ones, and a host name is checked again on every attempt against what it resolves to then. At most %d endpoints per mode. Not idempotent, like the API's other creations but sendFax: an answer lost on the way leaves an endpoint whose secret you never saw; rotate its secret or delete it.", webhooks.MaxURLBytes, webhooks.MaxEndpoints),
				"requestBody": body("CreateWebhookEndpointRequest", obj{"url": "https://example.com/webhooks/faxhub", "description": "billing backend", "eventTypes": []string{"fax.delivered", "fax.failed"}}),
				"responses": s.responses(s.jsonResponse("the endpoint, with its secret (shown once)", "WebhookEndpointWithSecret", withSecret), authErrs(), []errs{
					e(400, webhooks.CodeInvalidURL), e(409, webhooks.CodeTooManyEndpoints), e(415, core.CodeUnsupportedContentType),
				}),
			}),
			"get": accountOnly(obj{
				"operationId": "listWebhookEndpoints", "tags": []string{"webhooks"},
				"summary":     "List your webhook endpoints",
				"description": fmt.Sprintf("The endpoints of the key's mode, oldest first, enabled or not (at most %d, so not paginated). Secrets are never shown again.", webhooks.MaxEndpoints),
				"responses":   s.responses(s.jsonResponse("the endpoints", "WebhookEndpointList", obj{"data": []any{endpoint, disabled}}), authErrs()),
			}),
		},
		"/api/v1/webhook-endpoints/{id}": obj{
			"get": accountOnly(obj{
				"operationId": "getWebhookEndpoint", "tags": []string{"webhooks"},
				"summary":     "Get a webhook endpoint",
				"description": fmt.Sprintf("A disabled endpoint says why (disabledReason: owner, gone — it answered 410 —, or failing — every attempt failed for %s) and since when.", durationText(wc.DisableAfter)),
				"parameters":  []any{idParam},
				"responses":   s.responses(s.jsonResponse("the endpoint", "WebhookEndpoint", disabled), authErrs(), []errs{notFound}),
			}),
			"patch": accountOnly(obj{
				"operationId": "updateWebhookEndpoint", "tags": []string{"webhooks"},
				"summary":     "Change a webhook endpoint, or enable or disable it",
				"description": "Sets what the body names and keeps the rest. enabled false turns the endpoint off (disabledReason owner): events that happen meanwhile are not sent to it, and its pending deliveries end; enabled true turns it on again whatever disabled it and starts its failure count afresh.",
				"parameters":  []any{idParam},
				"requestBody": body("UpdateWebhookEndpointRequest", obj{"enabled": true}),
				"responses": s.responses(s.jsonResponse("the endpoint", "WebhookEndpoint", endpoint), authErrs(), []errs{
					notFound, e(400, webhooks.CodeInvalidURL), e(415, core.CodeUnsupportedContentType),
				}),
			}),
			"delete": accountOnly(obj{
				"operationId": "deleteWebhookEndpoint", "tags": []string{"webhooks"},
				"summary":     "Delete a webhook endpoint",
				"description": "Its pending deliveries end without another attempt.",
				"parameters":  []any{idParam},
				"responses":   s.responses(s.jsonResponse("deleted", "DeletedWebhookEndpoint", obj{"id": epID, "deleted": true}), authErrs(), []errs{notFound}),
			}),
		},
		"/api/v1/webhook-endpoints/{id}/rotate-secret": obj{"post": accountOnly(obj{
			"operationId": "rotateWebhookSecret", "tags": []string{"webhooks"},
			"summary":     "Give an endpoint a new signing secret",
			"description": fmt.Sprintf("Returns the endpoint with its new secret, shown this once. For %s (previousSecretExpiresAt) every delivery carries a v1 signature under the new secret and one under the replaced one, so the receiver can switch without losing a delivery; then only the new one signs. A rotation within that overlap drops the secret before the replaced one.", durationText(wc.RotationOverlap)),
			"parameters":  []any{idParam},
			"responses":   s.responses(s.jsonResponse("the endpoint, with its new secret (shown once)", "WebhookEndpointWithSecret", rotated), authErrs(), []errs{notFound}),
		})},
		"/api/v1/webhook-endpoints/{id}/deliveries": obj{"get": accountOnly(obj{
			"operationId": "listWebhookDeliveries", "tags": []string{"webhooks"},
			"summary":     "The endpoint's delivery log, newest first",
			"description": fmt.Sprintf("Each delivery (an event on its way to the endpoint) with its attempts: when, the status code, the latency, the start of the answer (at most %d bytes) or why there was none. Deliveries are kept %d days. Cursor pagination like listFaxes.", webhooks.MaxResponseExcerpt, int(wc.Retention.Hours()/24)),
			"parameters": []any{idParam, limit,
				queryParam("starting_after", "the id of the last delivery of the previous page (its nextCursor)", obj{"type": "string", "maxLength": 64}),
				queryParam("status", "only deliveries in this status", obj{"type": "string", "enum": []string{string(webhooks.DeliveryPending), string(webhooks.DeliveryDelivered), string(webhooks.DeliveryFailed)}}),
			},
			"responses": s.responses(s.jsonResponse("a page of deliveries", "WebhookDeliveryList", obj{"data": []any{delivery}, "hasMore": false}), authErrs(), []errs{notFound}),
		})},
		"/api/v1/webhook-endpoints/{id}/redeliver": obj{"post": accountOnly(obj{
			"operationId": "redeliverWebhookEvent", "tags": []string{"webhooks"},
			"summary":     "Send one event to the endpoint again",
			"description": fmt.Sprintf("A new delivery of the event (one of yours in the key's mode, kept %d days; or a test event sent earlier) with the same webhook-id, so a receiver that has it already drops it. Retried like any delivery. The endpoint must be enabled (409 webhook_endpoint_disabled). Test events and redeliveries share an allowance per owner (429 rate_limited).", int(events.Retention.Hours()/24)),
			"parameters":  []any{idParam},
			"requestBody": body("RedeliverRequest", obj{"eventId": evtID}),
			"responses": s.responses(s.jsonResponse("the new delivery, pending", "WebhookDelivery", queued), authErrs(), []errs{
				notFound, e(409, webhooks.CodeEndpointDisabled), e(415, core.CodeUnsupportedContentType), e(429, core.CodeRateLimited),
			}),
		})},
		"/api/v1/webhook-endpoints/{id}/test": obj{"post": accountOnly(obj{
			"operationId": "testWebhookEndpoint", "tags": []string{"webhooks"},
			"summary":     "Send a webhook.test event to the endpoint",
			"description": "A webhook.test event (data: endpointId and a message) to this endpoint only, signed like every delivery, with one attempt and no retries; it changes nothing about the endpoint's health and is not written to the event log. A disabled endpoint can be tested. Follow its outcome in the delivery log.",
			"parameters":  []any{idParam},
			"responses":   s.responses(s.jsonResponse("the test delivery, pending", "WebhookDelivery", test), authErrs(), []errs{notFound, e(429, core.CodeRateLimited)}),
		})},
		"/api/v1/webhooks/signing-key": obj{"get": obj{
			"operationId": "getWebhookSigningKey", "tags": []string{"webhooks"},
			"summary":     "faxhub's public key for v1a webhook signatures",
			"description": "Needs no credentials. Endpoints signed with v1a carry an Ed25519 signature under this key (one key for every endpoint of this server); verify it with the whpk_ form (Standard Webhooks libraries) or the JWK.",
			"security":    noAuth(),
			"responses": s.responses(s.jsonResponse("the public key", "WebhookSigningKey", obj{
				"scheme": "v1a", "algorithm": "Ed25519", "publicKey": "whpk_2mEZm8Tr0YIWPDaQqmvFHPu4tzCYAzy1V0I6WZ5ZG+I=",
				"jwk": obj{"kty": "OKP", "crv": "Ed25519", "x": "2mEZm8Tr0YIWPDaQqmvFHPu4tzCYAzy1V0I6WZ5ZG-I", "use": "sig", "kid": "v1a-1"},
			}), commonErrs()),
		}},
	}
}

// durationText writes a duration as a person would: "24 hours", "3 days".
func durationText(d interface{ Hours() float64 }) string {
	h := d.Hours()
	if h >= 48 && int(h)%24 == 0 {
		return fmt.Sprintf("%d days", int(h)/24)
	}
	return fmt.Sprintf("%g hours", h)
}

func webhookSchemas() obj {
	str := func(desc string) obj { return obj{"type": "string", "description": desc} }
	dateTime := obj{"type": "string", "format": "date-time"}
	modeSchema := obj{"type": "string", "enum": []string{"live", "test"}}
	object := func(required []string, props obj) obj {
		return obj{"type": "object", "required": required, "properties": props}
	}
	types := []string{}
	for _, t := range events.Types() {
		types = append(types, string(t))
	}
	typeFilter := obj{"type": "array", "maxItems": 64, "items": obj{"type": "string", "description": "an event type (" + fmt.Sprint(types) + ") or a resource's wildcard such as fax.*"},
		"description": "the event types delivered; empty or absent: every type"}
	signing := obj{"type": "array", "minItems": 1, "items": obj{"type": "string", "enum": []string{string(webhooks.SchemeV1), string(webhooks.SchemeV1a)}},
		"description": "v1: HMAC-SHA256 with the endpoint's secret (default); v1a: Ed25519 with faxhub's key; both: both signatures in webhook-signature"}
	endpointProps := obj{
		"id": str("we_…"), "mode": modeSchema, "url": obj{"type": "string", "format": "uri", "maxLength": webhooks.MaxURLBytes},
		"description": obj{"type": "string", "maxLength": webhooks.MaxDescriptionRunes},
		"eventTypes":  obj{"type": "array", "items": obj{"type": "string", "enum": append(slices.Clone(types), events.Wildcards()...)}, "description": "empty: every type; a resource's wildcard (fax.*) also takes that resource's types added later"},
		"signing":     signing, "enabled": obj{"type": "boolean"},
		"disabledReason": obj{"type": "string", "enum": []string{string(webhooks.DisabledByOwner), string(webhooks.DisabledGone), string(webhooks.DisabledFailing)},
			"description": "why a disabled endpoint is: owner (you), gone (it answered 410), failing (every attempt failed for too long)"},
		"disabledAt":              dateTime,
		"failingSince":            obj{"type": "string", "format": "date-time", "description": "the first failed attempt since the last delivered one"},
		"lastSuccessAt":           obj{"type": "string", "format": "date-time", "description": "the last delivered attempt (to the minute)"},
		"secretRotatedAt":         dateTime,
		"previousSecretExpiresAt": obj{"type": "string", "format": "date-time", "description": "until then the replaced secret signs too"},
		"createdAt":               dateTime, "updatedAt": dateTime,
	}
	withSecret := maps.Clone(endpointProps)
	withSecret["secret"] = str("whsec_ and the base64 of 32 random bytes: the v1 signing key, shown only in this answer")
	required := []string{"id", "mode", "url", "description", "eventTypes", "signing", "enabled", "createdAt", "updatedAt"}
	attempt := object([]string{"number", "status", "durationMs", "startedAt"}, obj{
		"number": obj{"type": "integer", "description": "1 for the first"},
		"status": obj{"type": "string", "enum": []string{string(webhooks.AttemptSending), string(webhooks.AttemptSucceeded), string(webhooks.AttemptFailed), string(webhooks.AttemptInterrupted)},
			"description": "interrupted: the sending process stopped before it recorded an answer (the endpoint may have got it; webhook-id tells)"},
		"statusCode": obj{"type": "integer", "description": "the answer's status; absent when there was none"},
		"error":      str("why there was no answer, or what was wrong with it"),
		"response":   obj{"type": "string", "maxLength": webhooks.MaxResponseExcerpt, "description": "the start of the answer's body"},
		"durationMs": obj{"type": "integer"}, "startedAt": dateTime, "finishedAt": dateTime,
	})
	delivery := object([]string{"id", "endpointId", "mode", "eventId", "eventType", "origin", "status", "attemptCount", "createdAt", "updatedAt", "attempts"}, obj{
		"id": str("whd_…"), "endpointId": str("we_…"), "mode": modeSchema,
		"eventId":   str("the event's id, sent as webhook-id"),
		"eventType": obj{"type": "string"},
		"origin":    obj{"type": "string", "enum": []string{string(webhooks.OriginEvent), string(webhooks.OriginRedeliver), string(webhooks.OriginTest)}},
		"status": obj{"type": "string", "enum": []string{string(webhooks.DeliveryPending), string(webhooks.DeliveryDelivered), string(webhooks.DeliveryFailed)},
			"description": "pending while attempts remain; delivered on a 2xx; failed when none remain (or the endpoint answered 410, was disabled or deleted)"},
		"attemptCount":   obj{"type": "integer"},
		"nextAttemptAt":  obj{"type": "string", "format": "date-time", "description": "when the next attempt is due"},
		"lastStatusCode": obj{"type": "integer"}, "lastError": obj{"type": "string"},
		"createdAt": dateTime, "updatedAt": dateTime, "completedAt": dateTime,
		"attempts": obj{"type": "array", "items": ref("WebhookAttempt"), "description": "oldest first"},
	})
	return obj{
		"CreateWebhookEndpointRequest": obj{"type": "object", "additionalProperties": false, "required": []string{"url"}, "properties": obj{
			"url":         obj{"type": "string", "format": "uri", "maxLength": webhooks.MaxURLBytes, "description": "https (http only for loopback hosts where the operator allows it)"},
			"description": obj{"type": "string", "maxLength": webhooks.MaxDescriptionRunes},
			"eventTypes":  typeFilter, "signing": signing,
		}},
		"UpdateWebhookEndpointRequest": obj{"type": "object", "additionalProperties": false, "properties": obj{
			"url":         obj{"type": "string", "format": "uri", "maxLength": webhooks.MaxURLBytes},
			"description": obj{"type": "string", "maxLength": webhooks.MaxDescriptionRunes},
			"eventTypes":  typeFilter, "signing": signing,
			"enabled": obj{"type": "boolean", "description": "false disables it; true enables it again whatever disabled it"},
		}},
		"WebhookEndpoint":           object(required, endpointProps),
		"WebhookEndpointWithSecret": object(append(append([]string{}, required...), "secret"), withSecret),
		"WebhookEndpointList":       object([]string{"data"}, obj{"data": obj{"type": "array", "items": ref("WebhookEndpoint")}}),
		"DeletedWebhookEndpoint":    object([]string{"id", "deleted"}, obj{"id": obj{"type": "string"}, "deleted": obj{"type": "boolean", "const": true}}),
		"WebhookAttempt":            attempt,
		"WebhookDelivery":           delivery,
		"WebhookDeliveryList": object([]string{"data", "hasMore"}, obj{
			"data": obj{"type": "array", "items": ref("WebhookDelivery")}, "hasMore": obj{"type": "boolean"},
			"nextCursor": str("present when hasMore: pass it as starting_after"),
		}),
		"RedeliverRequest": obj{"type": "object", "additionalProperties": false, "required": []string{"eventId"}, "properties": obj{
			"eventId": str("the id of one of your events (evt_…), from the event log or an earlier delivery"),
		}},
		"WebhookSigningKey": object([]string{"scheme", "algorithm", "publicKey", "jwk"}, obj{
			"scheme": obj{"type": "string", "const": "v1a"}, "algorithm": obj{"type": "string", "const": "Ed25519"},
			"publicKey": str("whpk_ and the base64 of the 32-byte public key"),
			"jwk":       obj{"type": "object", "description": "the same key as an RFC 8037 OKP JSON Web Key"},
		}),
	}
}
