package a2a_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/oauth"
	a2aserver "github.com/faxhub/faxhub/protocols/a2a"
)

var allScopes = []string{"fax:read", "fax:draft", "fax:send", "inbox:read", "credits:read", "credits:checkout"}

func getCard(t *testing.T, origin string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(origin + a2aserver.CardPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// The card is the A2A 1.0 shape written by hand: ProtoJSON security
// requirements, both protocol versions on /a2a, truthful capabilities, the
// AP2 and skill-arguments extensions, OAuth URLs from the authorization
// server's metadata, and every skill complete with its scope.
func TestCard(t *testing.T) {
	e := newEnv(t)
	for _, origin := range []string{e.base, e.api} {
		resp, _ := getCard(t, origin)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || !strings.HasPrefix(resp.Header.Get("Cache-Control"), "public, max-age=") {
			t.Fatalf("card at %s: %d %v", origin, resp.StatusCode, resp.Header)
		}
	}
	_, body := getCard(t, e.base)
	var card map[string]any
	if err := json.Unmarshal(body, &card); err != nil {
		t.Fatal(err)
	}
	get := func(v any, path ...any) any {
		for _, p := range path {
			switch k := p.(type) {
			case string:
				v = v.(map[string]any)[k]
			case int:
				v = v.([]any)[k]
			}
		}
		return v
	}
	ifaces := card["supportedInterfaces"].([]any)
	if len(ifaces) != 2 {
		t.Fatalf("interfaces %v", ifaces)
	}
	for i, ver := range []string{"1.0", "0.3"} {
		if get(ifaces, i, "url") != e.base+"/a2a" || get(ifaces, i, "protocolBinding") != "JSONRPC" || get(ifaces, i, "protocolVersion") != ver {
			t.Fatalf("interface %d: %v", i, ifaces[i])
		}
	}
	caps := card["capabilities"].(map[string]any)
	if caps["streaming"] != true || caps["pushNotifications"] != true {
		t.Fatalf("capabilities %v", caps)
	}
	exts := caps["extensions"].([]any)
	if get(exts, 0, "uri") != a2aserver.ExtensionAP2 || get(exts, 0, "required") != false || get(exts, 0, "params", "roles", 0) != "merchant" {
		t.Fatalf("AP2 extension %v", exts[0])
	}
	if get(exts, 1, "uri") != e.base+"/a2a/extensions/skill-arguments/v1" || get(exts, 1, "required") != false {
		t.Fatalf("skill-arguments extension %v", exts[1])
	}
	schemas := get(exts, 1, "params", "schemas").(map[string]any)
	md, err := e.a.OAuth.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	flow := get(card, "securitySchemes", "oauth", "oauth2SecurityScheme", "flows", "authorizationCode").(map[string]any)
	if flow["authorizationUrl"] != md.AuthorizationEndpoint || flow["tokenUrl"] != md.TokenEndpoint || flow["pkceRequired"] != true ||
		len(flow["scopes"].(map[string]any)) != len(core.FaxScopes()) {
		t.Fatalf("flow %v", flow)
	}
	if u := get(card, "securitySchemes", "oauth", "oauth2SecurityScheme", "oauth2MetadataUrl"); u != e.api+oauth.PathASMetadataIssuer {
		t.Fatalf("metadata URL %v", u)
	}
	if l, ok := get(card, "securityRequirements", 0, "schemes", "oauth", "list").([]any); !ok || len(l) != 0 {
		t.Fatalf("card securityRequirements %v", card["securityRequirements"])
	}
	skills := card["skills"].([]any)
	var ids []string
	for _, s := range skills {
		sk := s.(map[string]any)
		id, _ := sk["id"].(string)
		ids = append(ids, id)
		if sk["name"] == "" || len(sk["description"].(string)) < 40 || len(sk["tags"].([]any)) == 0 || len(sk["examples"].([]any)) == 0 || schemas[id] == nil {
			t.Errorf("skill %s is incomplete: %v", id, sk)
		}
		scopes, ok := get(sk, "securityRequirements", 0, "schemes", "oauth", "list").([]any)
		if !ok || len(scopes) != 1 || !slices.Contains(allScopes, scopes[0].(string)) {
			t.Errorf("skill %s securityRequirements %v", id, sk["securityRequirements"])
		}
		for _, ex := range sk["examples"].([]any) {
			var m map[string]any
			if json.Unmarshal([]byte(ex.(string)), &m) != nil || m["skill"] != id {
				t.Errorf("skill %s example is not a data part for it: %v", id, ex)
			}
		}
	}
	want := []string{"validate_fax", "create_upload", "create_fax", "get_fax", "list_faxes",
		"preview_fax", "get_fax_document", "get_fax_report", "get_fax_receipt", "get_fax_batch", "cancel_fax_batch",
		"get_credits", "create_credit_checkout", "buy_credits", "search_numbers", "buy_number", "list_numbers", "list_inbox", "read_inbox_fax"}
	if !slices.Equal(ids, want) {
		t.Fatalf("skills %v, want %v", ids, want)
	}

	// a2a-go v2.4.0 reads scopes as a bare list (a2aproject/a2a-go#430), so
	// its default parser refuses the spec's shape on exactly that; with the
	// list unwrapped the rest of the card parses and its resolver works.
	// When a2a-go is fixed this fails: drop protoJSONCardParser then.
	_, err = agentcard.DefaultCardParser(body)
	var te *json.UnmarshalTypeError
	if err == nil {
		t.Fatal("a2a-go parses ProtoJSON securityRequirements now: use its default parser")
	} else if !errors.As(err, &te) || !strings.Contains(te.Field, "securityRequirements") {
		t.Fatalf("a2a-go refuses the card for another reason: %v", err)
	}
	parsed, err := (&agentcard.Resolver{Client: http.DefaultClient, CardParser: protoJSONCardParser}).Resolve(t.Context(), e.api)
	if err != nil {
		t.Fatal(err)
	}
	if parsed.Name != "faxhub" || len(parsed.Skills) != len(want) || len(parsed.SupportedInterfaces) != 2 ||
		parsed.SupportedInterfaces[0].ProtocolVersion != "1.0" || parsed.Skills[1].SecurityRequirements[0]["oauth"][0] != "fax:draft" {
		t.Fatalf("parsed card %+v", parsed)
	}
	if _, ok := parsed.SecuritySchemes["oauth"].(a2a.OAuth2SecurityScheme); !ok {
		t.Fatalf("security scheme %T", parsed.SecuritySchemes["oauth"])
	}
}

// Every token problem is a 401 with the challenge naming the A2A resource
// metadata, and a JSON-RPC error body; the card needs no token.
func TestAuthentication(t *testing.T) {
	e := newEnv(t)
	w := e.owner("auth@example.com")
	get := `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"tsk_nope"}}`
	prm := e.base + "/.well-known/oauth-protected-resource/a2a"
	mcpTok := w.Token(t, []string{"fax:read"}, e.base+"/mcp")
	a2aTok := w.Token(t, []string{"fax:read"}, e.base+"/a2a")
	key, _, err := e.a.Svc.Accounts.CreateAPIKey(t.Context(), w.Account.ID, core.ModeTest, "k")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, auth string
		extra      http.Header
		status     int
		header     string // prefix of WWW-Authenticate
		want       string
	}{
		{"no token", "", nil, 401, `Bearer resource_metadata="` + prm + `"`, "access token is required"},
		{"a bad token", "Bearer nonsense", nil, 401, `Bearer resource_metadata="` + prm + `", error="invalid_token"`, ""},
		{"an MCP token", "Bearer " + mcpTok, nil, 401, `Bearer resource_metadata="` + prm + `", error="invalid_token"`, ""},
		{"an API key", "Bearer " + key, nil, 401, `Bearer resource_metadata="` + prm + `", error="invalid_token"`, "API keys"},
		{"the DPoP scheme", "DPoP " + a2aTok, nil, 401, `Bearer resource_metadata="` + prm + `", error="invalid_token"`, "DPoP-bound"},
		{"a DPoP proof", "Bearer " + a2aTok, http.Header{"Dpop": {"eyJ.x.y"}}, 401, `Bearer resource_metadata="` + prm + `", error="invalid_token"`, "DPoP-bound"},
		{"another scheme", "Basic dXNlcjpwYXNz", nil, 401, `Bearer resource_metadata="` + prm + `", error="invalid_token"`, "Bearer"},
	} {
		status, h, body := e.rpc(c.auth, c.extra, get)
		if status != c.status || !strings.HasPrefix(h.Get("WWW-Authenticate"), c.header) {
			t.Errorf("%s: %d %q, want %d %q", c.name, status, h.Get("WWW-Authenticate"), c.status, c.header)
			continue
		}
		code, msg, _ := rpcError(t, body)
		if code != -31401 || !strings.Contains(msg, c.want) {
			t.Errorf("%s: error %d %q", c.name, code, msg)
		}
	}
	// The same token works; an unknown task is TaskNotFound.
	status, _, body := e.rpc("Bearer "+a2aTok, nil, get)
	if code, _, _ := rpcError(t, body); status != 200 || code != -32001 {
		t.Fatalf("GetTask with the token: %d %v", status, body)
	}
	// An agent-registration token for the A2A resource works too.
	agent := w.AgentToken(t, []string{"credits:read"}, e.base+"/a2a")
	d := call(t, e.client(agent), skillMsg("get_credits", nil))
	if !strings.EqualFold(d["currency"].(string), "usd") || d["mode"] != "test" {
		t.Fatalf("get_credits with an agent token: %v", d)
	}
	// Credentials in the query string are refused, not ignored.
	req, _ := http.NewRequest(http.MethodPost, e.base+"/a2a?access_token="+a2aTok, strings.NewReader(get))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("query token: %d", resp.StatusCode)
	}
}
