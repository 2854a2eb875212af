package rest

import (
	"fmt"
	"strings"
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

## A2A agents

- Card: %[1]s/.well-known/agent-card.json. JSON-RPC at %[1]s/a2a (SendMessage, GetTask, CancelTask; 0.3 names too),
  with an OAuth token for the resource %[1]s/a2a (see auth.md) and "A2A-Version: 1.0".
- Send one data part {"skill": <id>, "arguments": {…}}; free text is not interpreted. create_upload, PUT the file,
  then create_fax {"to", "uploadToken"}: a task in TASK_STATE_INPUT_REQUIRED whose checkoutUrl the owner pays at
  (A2A never spends account credits). Poll GetTask until COMPLETED (the fax artifact) or FAILED.
- buy_credits buys a credit pack under AP2 (extension https://github.com/google-agentic-commerce/ap2/tree/v0.1);
  the owner approves each charge with a passkey.

## Delegated hosts and agents

- Agent runtimes with their own Ed25519 keys (Agent Auth Protocol 1.0-draft): discovery at
  %[2]s/.well-known/agent-configuration, the flow in %[1]s/auth.md (section 4). The owner provisions the host;
  agents register with a signed host+jwt, the owner approves by device code, capabilities run with agent+jwt
  at %[2]s/api/auth/capability/execute. send_fax always waits for the owner's passkey (202 pending).

## Testing

With a test key nothing is really sent. The destination number chooses the simulated outcome; any other
valid number is delivered:

%[3]s
## Links

- OpenAPI: %[1]s/openapi.json
- Authentication for agents: %[1]s/auth.md
- A2A agent card: %[1]s/.well-known/agent-card.json
- Delegated hosts and agents: %[2]s/.well-known/agent-configuration
`, base, apiURL, testNumberLines(opts.TestNumbers))
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
