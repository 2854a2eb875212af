package rest

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core/events"
	"github.com/faxhub/faxhub/core/web"
	"github.com/google/jsonschema-go/jsonschema"
)

func servedOpenAPI(t *testing.T, a *api) map[string]any {
	t.Helper()
	rec := a.do(t, req{method: "GET", path: "/openapi.json"})
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("/openapi.json: %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	var doc map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// TestOpenAPIMatchesRoutes fails when an endpoint is registered without
// being documented, or documented without being served.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	a := newUnitAPI(t, false)
	doc := servedOpenAPI(t, a)

	documented := map[string]bool{}
	operationIDs := map[string]string{}
	for path, item := range doc["paths"].(map[string]any) {
		for method, op := range item.(map[string]any) {
			if slices.Contains(httpMethods, method) {
				documented[strings.ToUpper(method)+" "+path] = true
				operationIDs[strings.ToUpper(method)+" "+path], _ = op.(map[string]any)["operationId"].(string)
			}
		}
	}
	// The routes the router serves, asked of the router itself, so the
	// table cannot drift from what was actually registered.
	router := a.router()
	registered := map[string]string{}
	for _, rt := range router.Routes() {
		for _, m := range rt.MethodList() {
			registered[m+" "+rt.Path] = rt.Name
		}
	}
	for op := range registered {
		if !documented[op] {
			t.Errorf("%s is served but missing from /openapi.json", op)
		}
	}
	for op := range documented {
		name, ok := registered[op]
		if !ok {
			t.Errorf("%s is in /openapi.json but not served", op)
			continue
		}
		method, path, _ := strings.Cut(op, " ")
		if want := "rest." + operationIDs[op]; name != want {
			t.Errorf("%s is the route %s, want %s (its operationId)", op, name, want)
		}
		concrete := strings.NewReplacer("{token}", "u1.a.b", "{id}", "fax_1").Replace(path)
		req, slot := web.WithRouteSlot(httptest.NewRequest(method, concrete, nil))
		router.ServeHTTP(httptest.NewRecorder(), req)
		if slot.Name != name {
			t.Errorf("%s %s is served by %q, want %q", method, concrete, slot.Name, name)
		}
	}
	if len(registered) < 15 {
		t.Errorf("only %d routes registered", len(registered))
	}
}

func TestOpenAPIDocument(t *testing.T) {
	a := newUnitAPI(t, false)
	doc := servedOpenAPI(t, a)

	if doc["openapi"] != "3.1.0" || doc["info"].(map[string]any)["version"] != "1.0.0" {
		t.Errorf("openapi/info.version wrong: %v %v", doc["openapi"], doc["info"])
	}
	var servers []string
	for _, s := range doc["servers"].([]any) {
		servers = append(servers, s.(map[string]any)["url"].(string))
	}
	if !slices.Equal(servers, []string{unitBaseURL, unitAPIURL}) {
		t.Errorf("servers = %v", servers)
	}

	// Every $ref resolves.
	components := doc["components"].(map[string]any)
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if r, ok := v["$ref"].(string); ok {
				parts := strings.Split(strings.TrimPrefix(r, "#/components/"), "/")
				section, _ := components[parts[0]].(map[string]any)
				if len(parts) != 2 || section == nil || section[parts[1]] == nil {
					t.Errorf("unresolved $ref %s", r)
				}
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)

	// Operations: unique ids, the right security, documented problems.
	enum := map[string]bool{}
	for _, c := range components["schemas"].(map[string]any)["Problem"].(map[string]any)["properties"].(map[string]any)["code"].(map[string]any)["enum"].([]any) {
		enum[c.(string)] = true
	}
	public := map[string]bool{"putUpload": true, "preflightUpload": true, "validateMachineFax": true, "createMachineFax": true, "getMachineFaxStatus": true, "getOpenAPI": true, "getLLMsTxt": true, "getInboxFile": true, "getProviderMedia": true, "getWebhookSigningKey": true,
		"getPreviewFile": true, "getPreviewFilePage": true, "getFaxFile": true, "getFaxFilePage": true, "getFaxReport": true}
	ids := map[string]bool{}
	for path, item := range doc["paths"].(map[string]any) {
		for method, o := range item.(map[string]any) {
			op := o.(map[string]any)
			id, _ := op["operationId"].(string)
			if id == "" || ids[id] {
				t.Errorf("%s %s: missing or duplicate operationId %q", method, path, id)
			}
			ids[id] = true
			sec, hasSec := op["security"].([]any)
			if public[id] != (hasSec && len(sec) == 0) {
				t.Errorf("%s: security = %v", id, op["security"])
			}
			for status, r := range op["responses"].(map[string]any) {
				code, _ := strconv.Atoi(status)
				content, _ := r.(map[string]any)["content"].(map[string]any)
				pj, ok := content["application/problem+json"].(map[string]any)
				if code >= 400 && !ok {
					t.Errorf("%s %s: error response is not problem+json", id, status)
				}
				if !ok {
					continue
				}
				for c := range pj["examples"].(map[string]any) {
					if !enum[c] {
						t.Errorf("%s %s: code %s is not in the Problem enum", id, status, c)
					}
				}
			}
		}
	}
	for _, must := range []string{"createUpload", "putUpload", "sendFax", "listFaxes", "getFax", "getCredits", "createCreditCheckout", "validateMachineFax", "createMachineFax", "getMachineFaxStatus"} {
		if !ids[must] {
			t.Errorf("operation %s (named by the interface contract) is missing", must)
		}
	}
	send := doc["paths"].(map[string]any)["/api/v1/faxes"].(map[string]any)["post"].(map[string]any)
	for _, status := range []string{"200", "400", "402", "409", "429"} {
		if send["responses"].(map[string]any)[status] == nil {
			t.Errorf("sendFax does not document %s", status)
		}
	}
	if p := send["parameters"].([]any)[0].(map[string]any)["$ref"]; p != "#/components/parameters/IdempotencyKey" {
		t.Errorf("sendFax parameters = %v", send["parameters"])
	}
}

// TestProblemCodesCoverCore reads core/errors.go so that a code added there
// must be either documented for these routes or listed here as one they
// cannot return.
func TestProblemCodesCoverCore(t *testing.T) {
	notREST := map[string]string{
		"checkout_not_payable":          "paying a checkout happens on the checkout page, not in /api/v1",
		"draft_not_payable":             "drafts are made by MCP/A2A, not by /api/v1",
		"approval_not_pending":          "approvals are decided in the owner console",
		"document_changed":              "previews of pending faxes (approvals, drafts) are shown in the owner console",
		"approval_binding_mismatch":     "approvals are decided in the owner console",
		"approval_declined":             "a chat app's send_fax the owner declined: an MCP tool error, not /api/v1",
		"approval_expired":              "a chat app's send_fax the owner did not approve in time: an MCP tool error, not /api/v1",
		"owner_exists":                  "owners are created by the operator command and the console sign-up",
		"link_invalid":                  "sign-up and recovery links are opened in the owner console",
		"user_verification_required":    "passkey approvals happen in the owner console",
		"not_ready":                     "answered by /readyz, outside /api/v1",
		"invalid_token":                 "OAuth access tokens are for /mcp and /a2a; /api/v1 answers invalid_api_key",
		"enrollment_required":           "agent registration is at /api/auth, outside /api/v1",
		"invalid_enrollment":            "agent registration is at /api/auth, outside /api/v1",
		"login_hint_mismatch":           "agent registration is at /api/auth, outside /api/v1",
		"email_mismatch":                "agent registration is at /api/auth, outside /api/v1",
		"too_many_enrollments":          "enrollment tokens are issued in the owner console",
		"invalid_scope":                 "an OAuth error of /api/auth",
		"invalid_grant":                 "an OAuth error of the token endpoint",
		"invalid_target":                "an OAuth error of the token endpoint",
		"authorization_pending":         "an OAuth error of the token endpoint",
		"slow_down":                     "an OAuth error of the token endpoint",
		"expired_token":                 "an OAuth error of the token endpoint",
		"access_denied":                 "an OAuth error of the token endpoint",
		"claim_link_invalid":            "agent claims are decided in the owner console",
		"claim_wrong_account":           "agent claims are decided in the owner console",
		"claim_expired":                 "agent claims are decided in the owner console",
		"claim_decided":                 "agent claims are decided in the owner console",
		"claim_wrong_code":              "agent claims are decided in the owner console",
		"claim_too_many_tries":          "agent claims are decided in the owner console",
		"claim_scope_not_permitted":     "agent claims are decided in the owner console",
		"task_not_cancelable":           "agent tasks are A2A's (/a2a tasks/cancel), not /api/v1's",
		"too_many_streams":              "task streams are A2A's (SendStreamingMessage, SubscribeToTask), not /api/v1's",
		"push_config_not_found":         "push notification configs are A2A's, not /api/v1's",
		"too_many_push_configs":         "push notification configs are A2A's, not /api/v1's",
		"push_not_configured":           "push notification configs are A2A's, not /api/v1's",
		"payment_mandate_mismatch":      "AP2 purchases are made over A2A, not /api/v1",
		"payment_mandate_replayed":      "AP2 purchases are made over A2A, not /api/v1",
		"cart_expired":                  "AP2 purchases are made over A2A, not /api/v1",
		"purchase_not_open":             "AP2 purchases are made over A2A, not /api/v1",
		"payment_method_not_configured": "AP2 purchases are made over A2A, not /api/v1",
		"checkout_payment_mismatch":     "a payment processor's event that does not match its checkout; answered to the webhook, never to an API client",
		"renewal_insufficient_credits":  "why a number was released (its failureCode), not a problem of a request",
		"invalid_jwt":                   "delegated hosts and agents speak the hostagent protocol (/api/auth/agent), not /api/v1",
		"agent_pending":                 "delegated hosts and agents speak the hostagent protocol (/api/auth/agent), not /api/v1",
		"agent_revoked":                 "delegated hosts and agents speak the hostagent protocol (/api/auth/agent), not /api/v1",
		"agent_rejected":                "delegated hosts and agents speak the hostagent protocol (/api/auth/agent), not /api/v1",
		"agent_expired":                 "delegated hosts and agents speak the hostagent protocol (/api/auth/agent), not /api/v1",
		"host_revoked":                  "delegated hosts and agents speak the hostagent protocol (/api/auth/agent), not /api/v1",
		"capability_not_granted":        "delegated hosts and agents speak the hostagent protocol (/api/auth/agent), not /api/v1",
		"agent_exists":                  "delegated hosts and agents speak the hostagent protocol (/api/auth/agent), not /api/v1",
		"agent_not_found":               "delegated hosts and agents speak the hostagent protocol (/api/auth/agent), not /api/v1",
		"host_not_found":                "delegated hosts and agents speak the hostagent protocol (/api/auth/agent), not /api/v1",
		"key_in_use":                    "delegated hosts and agents speak the hostagent protocol (/api/auth/agent), not /api/v1",
		"invalid_public_key":            "delegated hosts and agents speak the hostagent protocol (/api/auth/agent), not /api/v1",
		"jwt_replayed":                  "delegated hosts and agents speak the hostagent protocol (/api/auth/agent), not /api/v1",
		"too_many_hosts":                "delegated hosts and agents speak the hostagent protocol (/api/auth/agent), not /api/v1",
		"too_many_agents":               "delegated hosts and agents speak the hostagent protocol (/api/auth/agent), not /api/v1",
		"capability_not_requested":      "delegated hosts and agents speak the hostagent protocol (/api/auth/agent), not /api/v1",
		"unknown_capability":            "delegated hosts and agents speak the hostagent protocol (/api/auth/agent), not /api/v1",
		"device_wrong_code":             "device approvals are decided in the owner console",
		"device_too_many_tries":         "device approvals are decided in the owner console",
		"device_code_expired":           "device approvals are decided in the owner console",
		"device_decided":                "device approvals are decided in the owner console",
	}
	// The kernel declares the shared codes, each feature its own.
	files, err := filepath.Glob("../core/*.go")
	if err != nil {
		t.Fatal(err)
	}
	features, _ := filepath.Glob("../core/*/*.go")
	files = append(files, features...)
	details := problemDetails()
	found := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		inspectCodes(t, f, details, notREST, &found)
	}
	if found < 30 {
		t.Fatalf("found only %d codes under core/; did its layout change?", found)
	}
}

func inspectCodes(t *testing.T, f *ast.File, details map[string]string, notREST map[string]string, found *int) {
	t.Helper()
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || !strings.HasPrefix(vs.Names[0].Name, "Code") || len(vs.Values) != 1 {
			return true
		}
		lit, ok := vs.Values[0].(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		code, _ := strconv.Unquote(lit.Value)
		*found++
		_, documented := details[code]
		_, excluded := notREST[code]
		switch {
		case documented && excluded:
			t.Errorf("%s is both documented and excluded", code)
		case !documented && !excluded:
			t.Errorf("core code %s (%s) is neither in the OpenAPI enum nor excluded with a reason", code, vs.Names[0].Name)
		}
		return true
	})
}

// TestOpenAPIMachinePayments: the discovery document mppx and other
// clients read (draft-payment-discovery): x-payment-info offers built from
// the configured methods with a null amount, a declared 402 with the
// payment problem and its headers, and the receipt header of the 200.
func TestOpenAPIMachinePayments(t *testing.T) {
	a := newUnitAPI(t, true)
	offers := []MachineOffer{{"stripe", "charge", "usd"}, {"tempo", "charge", "0x20c0000000000000000000000000000000000000"}}
	withOffers := newAPI(a.svc, Options{MachineOffers: offers}, nil)
	doc := servedOpenAPI(t, withOffers)
	paths := doc["paths"].(map[string]any)
	create := paths["/api/v1/machine/faxes"].(map[string]any)["post"].(map[string]any)
	info, _ := create["x-payment-info"].(map[string]any)
	got, _ := info["offers"].([]any)
	if len(got) != 2 {
		t.Fatalf("x-payment-info = %v", create["x-payment-info"])
	}
	for i, o := range got {
		m := o.(map[string]any)
		amount, present := m["amount"]
		if m["method"] != offers[i].Method || m["intent"] != "charge" || m["currency"] != offers[i].Currency || !present || amount != nil {
			t.Errorf("offer %d = %v", i, m)
		}
		for k := range m {
			if !slices.Contains([]string{"amount", "currency", "description", "intent", "method"}, k) {
				t.Errorf("offer %d has %s, which discovery does not define", i, k)
			}
		}
	}
	responses := create["responses"].(map[string]any)
	pay, _ := responses["402"].(map[string]any)
	if pay == nil {
		t.Fatal("no 402 response")
	}
	headers := pay["headers"].(map[string]any)
	for _, h := range []string{"WWW-Authenticate", "Cache-Control", "Retry-After"} {
		if headers[h] == nil {
			t.Errorf("402 does not declare %s", h)
		}
	}
	pj := pay["content"].(map[string]any)["application/problem+json"].(map[string]any)
	if pj["schema"].(map[string]any)["$ref"] != "#/components/schemas/PaymentProblem" {
		t.Errorf("402 schema %v", pj["schema"])
	}
	for _, code := range []string{"payment-required", "payment-expired", "verification-failed", "malformed-credential", "invalid-challenge", "payment-action-required"} {
		ex, _ := pj["examples"].(map[string]any)[code].(map[string]any)
		v, _ := ex["value"].(map[string]any)
		if v["type"] != "https://paymentauth.org/problems/"+code || v["code"] != code || v["status"] != float64(402) {
			t.Errorf("402 example %s = %v", code, ex)
		}
	}
	if responses["200"].(map[string]any)["headers"].(map[string]any)["Payment-Receipt"] == nil {
		t.Error("200 does not declare Payment-Receipt")
	}
	for _, status := range []string{"400", "409", "413", "415", "422", "429", "503"} {
		if responses[status] == nil {
			t.Errorf("createMachineFax does not document %s", status)
		}
	}
	if si, _ := doc["x-service-info"].(map[string]any); si["docs"].(map[string]any)["llms"] != unitBaseURL+"/llms.txt" {
		t.Errorf("x-service-info = %v", doc["x-service-info"])
	}

	// Without configured methods there is nothing to offer: no
	// x-payment-info (discovery wants at least one offer).
	bare := servedOpenAPI(t, a)["paths"].(map[string]any)["/api/v1/machine/faxes"].(map[string]any)["post"].(map[string]any)
	if bare["x-payment-info"] != nil {
		t.Errorf("x-payment-info without methods: %v", bare["x-payment-info"])
	}
}

// TestOpenAPINumberScopes: the numbers and inbox operations name the scope
// core requires of them, and the new request fields are in the schemas.
func TestOpenAPINumberScopes(t *testing.T) {
	doc := servedOpenAPI(t, newUnitAPI(t, false))
	paths := doc["paths"].(map[string]any)
	for _, c := range []struct{ path, method, scope string }{
		{"/api/v1/numbers/available", "get", "fax:read"},
		{"/api/v1/numbers", "get", "fax:read"},
		{"/api/v1/numbers", "post", "fax:draft"},
		{"/api/v1/numbers/{id}", "get", "fax:read"},
		{"/api/v1/numbers/{id}", "delete", "fax:send"},
		{"/api/v1/numbers/{id}/release", "post", "fax:send"},
		{"/api/v1/inbox", "get", "inbox:read"},
		{"/api/v1/inbox/{id}", "get", "inbox:read"},
		{"/api/v1/inbox/{id}/download", "post", "inbox:read"},
		{"/api/v1/inbox/simulate", "post", "fax:send"},
	} {
		op := paths[c.path].(map[string]any)[c.method].(map[string]any)
		sec, _ := op["security"].([]any)
		if len(sec) != 2 {
			t.Errorf("%s %s: security %v", c.method, c.path, op["security"])
			continue
		}
		got, _ := sec[0].(map[string]any)["apiKey"].([]any)
		if oa, _ := sec[1].(map[string]any)["oauth2"].([]any); len(oa) != 1 || oa[0] != c.scope {
			t.Errorf("%s %s: oauth2 scopes %v, want %s", c.method, c.path, oa, c.scope)
		}
		if len(got) != 1 || got[0] != c.scope || !strings.Contains(op["description"].(string), "Needs the "+c.scope+" scope.") {
			t.Errorf("%s %s: scopes %v, want %s", c.method, c.path, got, c.scope)
		}
	}
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	for schema, field := range map[string]string{"SendFaxRequest": "from", "BuyNumberRequest": "payWithCredits", "Fax": "from"} {
		if schemas[schema].(map[string]any)["properties"].(map[string]any)[field] == nil {
			t.Errorf("%s has no %s", schema, field)
		}
	}
}

// schemaOf is the components schema named by ref ("#/components/schemas/X")
// with every $ref in it replaced by what it names, as a validator.
func schemaOf(t *testing.T, doc map[string]any, ref string) *jsonschema.Resolved {
	t.Helper()
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	var inline func(v any, depth int) any
	inline = func(v any, depth int) any {
		if depth > 20 {
			t.Fatalf("%s: $ref nesting deeper than 20", ref)
		}
		switch v := v.(type) {
		case map[string]any:
			if r, ok := v["$ref"].(string); ok {
				target, ok := schemas[strings.TrimPrefix(r, "#/components/schemas/")]
				if !ok {
					t.Fatalf("unresolved $ref %s", r)
				}
				return inline(target, depth+1)
			}
			out := map[string]any{}
			for k, x := range v {
				out[k] = inline(x, depth)
			}
			return out
		case []any:
			out := make([]any, len(v))
			for i, x := range v {
				out[i] = inline(x, depth)
			}
			return out
		}
		return v
	}
	b, err := json.Marshal(inline(map[string]any{"$ref": ref}, 0))
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s is not a JSON Schema: %v", ref, err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("%s: %v", ref, err)
	}
	return rs
}

// TestOpenAPIWebhooks: every event type is declared under the top-level
// webhooks map (OpenAPI 3.1) as a POST of its envelope with the Standard
// Webhooks headers, and every example there and in the events operations
// validates against its schema; a wrong example does not.
func TestOpenAPIWebhooks(t *testing.T) {
	doc := servedOpenAPI(t, newUnitAPI(t, false))
	hooks, _ := doc["webhooks"].(map[string]any)
	declared := slices.Sorted(maps.Keys(hooks))
	var want []string
	for _, et := range events.Types() {
		want = append(want, string(et))
	}
	if !slices.Equal(declared, want) {
		t.Fatalf("webhooks %v, want every event type %v", declared, want)
	}
	for _, name := range declared {
		post := hooks[name].(map[string]any)["post"].(map[string]any)
		var headers []string
		for _, p := range post["parameters"].([]any) {
			if p.(map[string]any)["in"] == "header" && p.(map[string]any)["required"] == true {
				headers = append(headers, p.(map[string]any)["name"].(string))
			}
		}
		if !slices.Equal(headers, []string{"webhook-id", "webhook-timestamp", "webhook-signature"}) {
			t.Errorf("%s: headers %v", name, headers)
		}
		content := post["requestBody"].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)
		rs := schemaOf(t, doc, content["schema"].(map[string]any)["$ref"].(string))
		example := content["example"].(map[string]any)
		if example["type"] != name {
			t.Errorf("%s: example of type %v", name, example["type"])
		}
		if err := rs.Validate(example); err != nil {
			t.Errorf("%s: the example does not validate: %v", name, err)
		}
		// The schema is strict enough to catch a wrong example.
		wrong := maps.Clone(example)
		wrong["type"] = "fax.nope"
		if rs.Validate(wrong) == nil {
			t.Errorf("%s: an example of another type validates", name)
		}
		if _, ok := post["responses"].(map[string]any)["410"]; !ok {
			t.Errorf("%s: 410 (disable) is not described", name)
		}
	}
	paths := doc["paths"].(map[string]any)
	for _, c := range []struct{ path, method, status string }{
		{"/api/v1/events", "get", "200"}, {"/api/v1/events/{id}", "get", "200"},
		{"/api/v1/credits/alert", "get", "200"}, {"/api/v1/credits/alert", "put", "200"},
	} {
		op := paths[c.path].(map[string]any)[c.method].(map[string]any)
		content := op["responses"].(map[string]any)[c.status].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)
		if err := schemaOf(t, doc, content["schema"].(map[string]any)["$ref"].(string)).Validate(content["example"]); err != nil {
			t.Errorf("%s %s: the example does not validate: %v", c.method, c.path, err)
		}
		if body, ok := op["requestBody"].(map[string]any); ok {
			bc := body["content"].(map[string]any)["application/json"].(map[string]any)
			if err := schemaOf(t, doc, bc["schema"].(map[string]any)["$ref"].(string)).Validate(bc["example"]); err != nil {
				t.Errorf("%s %s: the request example does not validate: %v", c.method, c.path, err)
			}
		}
	}
}

// SchemaOf is schemaOf for the end-to-end tests (package rest_test).
var SchemaOf = schemaOf

// EventSchemaName is eventSchemaName for the end-to-end tests.
var EventSchemaName = eventSchemaName

// TestEventsDoc: docs/events.md has a section for every event type, and
// the example of each validates against the schema /openapi.json declares
// for it, so the page cannot drift from the document or the code.
func TestEventsDoc(t *testing.T) {
	doc := servedOpenAPI(t, newUnitAPI(t, false))
	page, err := os.ReadFile("../docs/events.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := strings.Split(string(page), "\n### `")
	found := map[events.Type]bool{}
	for _, sec := range sections[1:] {
		name, body, _ := strings.Cut(sec, "`")
		typ := events.Type(name)
		if !events.Known(typ) {
			t.Errorf("docs/events.md documents %q, which is not an event type", name)
			continue
		}
		found[typ] = true
		_, block, ok := strings.Cut(body, "```json\n")
		block, _, _ = strings.Cut(block, "```")
		if !ok {
			t.Errorf("docs/events.md: %s has no JSON example", typ)
			continue
		}
		var ex map[string]any
		if err := json.Unmarshal([]byte(block), &ex); err != nil {
			t.Errorf("docs/events.md: the example of %s is not JSON: %v", typ, err)
			continue
		}
		if ex["type"] != name {
			t.Errorf("docs/events.md: the example of %s is a %v", typ, ex["type"])
		}
		if err := schemaOf(t, doc, "#/components/schemas/"+eventSchemaName(typ)).Validate(ex); err != nil {
			t.Errorf("docs/events.md: the example of %s does not validate: %v", typ, err)
		}
	}
	for _, typ := range events.Types() {
		if !found[typ] {
			t.Errorf("docs/events.md has no section for %s", typ)
		}
	}
	if !strings.Contains(string(page), fmt.Sprintf("**%d days**", int(events.Retention.Hours()/24))) {
		t.Error("docs/events.md does not state the retention events.Retention sets")
	}
}
