package rest

import (
	"fmt"
	"strings"

	"github.com/faxhub/faxhub/core/events"
)

// llmsText is /llms.txt (llmstxt.org): a short orientation for LLM agents
// that points at the machine-readable description instead of repeating it.
func llmsText(opts Options) []byte {
	base, apiURL := opts.BaseURL, opts.APIURL
	var b strings.Builder
	fmt.Fprintf(&b, `# faxhub

> faxhub sends faxes to fax numbers worldwide on behalf of an account owner. A backend or agent
> uploads a document (PDF, Word, Excel, image), names an E.164 destination, and pays from the
> owner's prepaid credits.

Everything below is described precisely in the OpenAPI 3.1 document: %[1]s/openapi.json

## API

- REST under %[2]s/api/v1 (also served at %[1]s/api/v1). JSON in, JSON out.
- Errors are application/problem+json with a stable "code" (e.g. insufficient_credits, invalid_destination,
  idempotency_conflict); switch on code, show "detail" to people.
- Lists are newest first with cursor pagination: limit (1-100), starting_after=<nextCursor>.

## Authentication

- Send "Authorization: Bearer <API key>". The owner creates keys in the faxhub console; fxk_live_… keys
  send real faxes and spend real credits, fxk_test_… keys use a simulated provider and test credits.
  Test and live data never mix.
- Never put a key in a URL: api_key, key and access_token query parameters are refused.
- Agents without an API key (MCP, A2A, agent registration, delegated hosts): %[1]s/auth.md

## Sending a fax

1. POST /api/v1/uploads -> {uploadToken, uploadUrl, expiresAt}.
2. PUT the raw file bytes to uploadUrl. No Authorization header: the token in the URL is the capability,
   valid once. The file type is detected from its content, so any Content-Type is fine.
3. POST /api/v1/faxes with header "Idempotency-Key: <fresh UUID>" and {"to": "+12125550100", "uploadToken": "…"}.
   Retrying with the same key and body returns the same fax (Idempotent-Replayed: true), never a second fax.
   402 insufficient_credits: buy credits with POST /api/v1/credits/checkout {"packId": …} (a person pays at checkoutUrl).
   429: wait Retry-After seconds.
4. GET /api/v1/faxes/{id} until status is delivered, partial, failed or canceled; latestAttempt says what
   the provider reported. A queued fax can be canceled with POST /api/v1/faxes/{id}/cancel.

Price first without sending: POST /api/v1/quote {"to", "pages", "cover"}. Balance and ledger: GET /api/v1/credits.
Send from one of your numbers with "from": "<E.164 or num_… id>" in the body.
Options (POST /api/v1/faxes, /previews, /batches): "coverPage": {recipientName, recipientCompany, senderName,
senderCompany, senderPhone, senderFax, subject, message}, "header" (≤50 chars, printed on every page with the date,
number and page n/N), "resolution": standard|fine, "sendAt" (RFC 3339, ≤30 days; status scheduled, cancelable),
"retry": {attempts 1-5, delayMinutes 1-30}. Each bad one is 400 naming its field.
See the pages first: POST /api/v1/previews (a send body, "to" optional) -> {files: {url, pageImages[]}, quote}.
Broadcast: POST /api/v1/batches {uploadToken, recipients: [{to}…≤100], …options} with an Idempotency-Key;
GET /api/v1/batches/{id}. Resend: POST /api/v1/faxes/{id}/resend {"to"?}.
Proof, once finished: GET /api/v1/faxes/{id}/document (the PDF as faxed), /report (transmission report),
/receipt (a JWS anyone verifies with the JWKS; faxhub receipt verify FILE).

Instead of polling: GET /api/v1/events?type=fax.*&starting_after=&limit= lists what happened, newest first
(fax.scheduled, fax.queued, fax.sending, fax.retrying, fax.delivered, fax.partial, fax.failed, fax.canceled; inbound_fax.*,
number.*, credits.purchased, credits.low, approval.*, agent.*, batch.completed), each {id, type, timestamp, mode, data} with data
the resource as the API shows it; kept %[5]d days. Webhooks deliver the same events (dedupe on webhook-id = event id).
Low-balance alert: PUT /api/v1/credits/alert {"threshold": "5.00"} (null: off) writes credits.low on each fall below it.

## Fax numbers and the inbox

- Search: GET /api/v1/numbers/available?country=US&areaCode=212&locality=&limit= -> {data: [{number, monthlyPrice, …}]}.
- Buy: POST /api/v1/numbers {"number": "+1…"} -> the number, awaiting_payment, with checkoutUrl: a person (the owner,
  signed in) pays its first month there. Or add "payWithCredits": true (scope fax:send) to pay it from credits at once.
  Then pending while the provider provisions it, then active. Later months are
  paid from credits; without enough it goes past_due and is released after a grace period.
- GET /api/v1/numbers[?all=true], GET /api/v1/numbers/{id}; pay a reserved number from credits with POST /api/v1/numbers/{id}/pay; release with POST /api/v1/numbers/{id}/release
  (or DELETE /api/v1/numbers/{id}); the rest of the month is not refunded.
- Received faxes (scope inbox:read): GET /api/v1/inbox?numberId=&starting_after=&limit= (textPreview each),
  GET /api/v1/inbox/{id} (status receiving -> received; text, textStatus). The PDF: POST /api/v1/inbox/{id}/download
  -> {url, expiresAt}; GET url without credentials within minutes.
- Test keys: POST /api/v1/inbox/simulate (multipart/form-data: file, to = one of your test numbers, optional from)
  delivers a fax to your test number as if it had been received.

%[4]s
## A2A agents

- Card: %[1]s/.well-known/agent-card.json. JSON-RPC at %[1]s/a2a (SendMessage, SendStreamingMessage, GetTask, SubscribeToTask,
  CancelTask; 0.3 names too),
  with an OAuth token for the resource %[1]s/a2a (see auth.md) and "A2A-Version: 1.0".
- Send one data part {"skill": <id>, "arguments": {…}}; free text is not interpreted. create_upload, PUT the file,
  then create_fax {"to", "uploadToken"}: a task in TASK_STATE_INPUT_REQUIRED whose checkoutUrl the owner pays at
  (A2A never spends account credits). Follow it until COMPLETED (the fax artifact) or FAILED: SendStreamingMessage or
  SubscribeToTask stream its changes (server-sent events), or poll GetTask.
- buy_credits buys a credit pack under AP2 (extension https://github.com/google-agentic-commerce/ap2/tree/v0.1);
  the owner approves each charge with a passkey.

## Delegated hosts and agents

- Agent runtimes with their own Ed25519 keys (Agent Auth Protocol 1.0-draft): discovery at
  %[2]s/.well-known/agent-configuration, the flow in %[1]s/auth.md (section 4). The owner provisions the host;
  agents register with a signed host+jwt, the owner approves by device code, capabilities run with agent+jwt
  at %[2]s/api/auth/capability/execute. send_fax always waits for the owner's passkey (202 pending).

## Webhooks

- With an API key: POST /api/v1/webhook-endpoints {"url": "https://…", "eventTypes": ["fax.*"]} -> the endpoint with its
  secret (whsec_…), shown once. Events of the key's mode are POSTed there, signed as Standard Webhooks says
  (webhook-id, webhook-timestamp, webhook-signature v1; v1a with the key at GET /api/v1/webhooks/signing-key).
  Drop duplicates by webhook-id; failed deliveries are retried for about three days.
- GET /api/v1/webhook-endpoints/{id}/deliveries is the delivery log; POST …/redeliver {"eventId"} and POST …/test.

## Testing

With a test key nothing is really sent. The destination number chooses the simulated outcome; any other
valid number is delivered:

%[3]s
## Links

- OpenAPI: %[1]s/openapi.json
- Authentication for agents: %[1]s/auth.md
- A2A agent card: %[1]s/.well-known/agent-card.json
- Delegated hosts and agents: %[2]s/.well-known/agent-configuration
`, base, apiURL, testNumberLines(opts.TestNumbers), machineSection(opts), int(events.Retention.Hours()/24))
	return []byte(b.String())
}

// TestNumber is a documented test destination and what it does.
type TestNumber struct{ Number, Description string }

func testNumberLines(ns []TestNumber) string {
	var b strings.Builder
	for _, n := range ns {
		fmt.Fprintf(&b, "- %s: %s\n", n.Number, n.Description)
	}
	return b.String()
}

// machineSection explains paying per request (HTTP 402) when machine
// payments offer a method, with the test mint when the built-in Stripe
// test backend is in use.
func machineSection(opts Options) string {
	if len(opts.MachineOffers) == 0 {
		return ""
	}
	var methods []string
	for _, o := range opts.MachineOffers {
		methods = append(methods, o.Method+"/"+o.Intent)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `## Paying per request, without an account (HTTP 402)

A machine with no API key pays for one fax per request with the Machine Payments Protocol
(draft-ryan-httpauth-payment). Methods on offer here: %[2]s. The PDF goes inline as base64.

1. Optional: POST %[1]s/api/v1/machine/faxes/validate {"to", "base64" | "pages", "cover"} -> the quote and, per
   method, the amount it will charge (base units: cents for stripe, 10^-6 token units for tempo; stripe
   charges at least 50 cents). No side effects.
2. POST %[1]s/api/v1/machine/faxes {"to": "+12125550100", "base64": "<PDF, standard base64>",
   "request_id": "<fresh UUID>", "cover": false}. Optional header "Accept-Payment: stripe/charge, tempo/charge;q=0.5"
   filters and orders the offers.
3. 402 Payment Required: one "WWW-Authenticate: Payment id=…, realm=…, method=…, intent="charge", request=…,
   expires=…, digest=…, opaque=…" per method. The challenge's request (base64url JSON) has the authoritative
   amount and currency. The body is problem+json {type, title, status, detail, challengeId, code}.
4. Pay one challenge: stripe with a card shared payment token (SPT) minted for the challenge's amount and
   methodDetails.networkId; tempo by pushing a transfer of at least the amount of the token (currency) to the
   recipient, then presenting its transaction hash.
5. Send the SAME body with the SAME request_id again, with "Authorization: Payment <base64url credential>"
   (exactly one credential). The challenge is bound to the body's digest: another body is refused.
6. 200: the order {id, status, amount, currency, price, method, statusUrl, …} and a "Payment-Receipt" header
   (base64url JSON {status, method, timestamp, reference, challengeId}).
7. GET statusUrl (no credentials: the URL is the capability) until status is delivered, partial or failed.
   A failed fax is refunded to the card (refund: "refunded"); a tempo transfer cannot be refunded
   (refund: "not_refundable").

Rules: the same request_id and body get the same challenges while they live, and once paid the stored 200 with
its receipt (never a second charge); the same request_id with another body is 409 request_id_conflict. A failed
payment (declined card, expired challenge, malformed credential) gets a fresh 402 whose type says why. Two
credentials are a 400; 409 payment_in_progress means a concurrent request is settling the same credential:
retry after Retry-After. The MCP endpoint never takes these payments.
`, opts.APIURL, strings.Join(methods, ", "))
	if opts.StripeTestMintPath != "" {
		fmt.Fprintf(&b, `
This server pays stripe challenges in test mode against a built-in test backend (nothing is charged, faxes go
to the simulated provider). Mint a test SPT at POST %[1]s%[2]s
(form: payment_method, usage_limits[currency], usage_limits[max_amount], usage_limits[expires_at]; any
"sk_test_…" key as HTTP Basic user). Test payment methods: pm_card_visa and pm_card_mastercard succeed,
pm_card_chargeDeclined and pm_card_insufficientFunds are declined, pm_card_authenticationRequired needs action.
With the mppx CLI (npm package mppx):

    MPPX_STRIPE_SECRET_KEY=sk_test_x MPPX_STRIPE_SPT_URL=%[1]s%[2]s \
      mppx %[1]s/api/v1/machine/faxes -H 'Accept-Payment: stripe/charge' -M paymentMethod=pm_card_visa \
      -J '{"to":"+12125550100","base64":"<PDF base64>","request_id":"<fresh UUID>"}'
`, opts.APIURL, opts.StripeTestMintPath)
	}
	return b.String() + "\n"
}
