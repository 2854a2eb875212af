package oauth_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/faxhub/faxhub/oauth"
)

// send is a raw request: a body exactly as given, an optional session
// cookie. It returns the status and the decoded JSON answer (nil if none).
func (h *harness) send(method, path, contentType, body, cookie string) (int, map[string]any) {
	h.t.Helper()
	req, _ := http.NewRequest(method, h.base+path, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	resp, err := h.noRedirect.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	if m == nil {
		m = map[string]any{"raw": string(b), "location": resp.Header.Get("Location")}
	}
	return resp.StatusCode, m
}

// wantDescribed checks an OAuth error whose description names what is wrong.
func wantDescribed(t *testing.T, what string, status int, m map[string]any, wantStatus int, wantCode, wantText string) {
	t.Helper()
	wantOAuthError(t, what, status, m, wantStatus, wantCode)
	if d, _ := m["error_description"].(string); !strings.Contains(d, wantText) {
		t.Fatalf("%s: error_description %q, want it to mention %q", what, d, wantText)
	}
}

const (
	formType = "application/x-www-form-urlencoded"
	jsonType = "application/json"
)

// TestRepeatedParametersRefused: RFC 6749 section 3.1 (parameters at most
// once) at every endpoint, and JSON members at most once. Before, the
// authorize endpoint took the first client_id or state of several, the
// register and agent endpoints silently kept the last duplicate member.
func TestRepeatedParametersRefused(t *testing.T) {
	h := newHarness(t, nil)
	clientID := h.registerDefault()
	cookie := h.cookie(h.env.OwnerA)
	authorize := url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirectURI}, "state": {"state-0123456789"},
		"scope": {"fax:read"}, "code_challenge": {oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier())},
		"code_challenge_method": {"S256"}, "resource": {h.mcp()}}
	for _, tc := range []struct {
		name, method, path, ctype, body, cookie string
		mention                                 string
	}{
		{"token grant_type twice", http.MethodPost, oauth.PathToken, formType, "grant_type=authorization_code&grant_type=refresh_token&client_id=" + clientID, "", "grant_type"},
		{"token client_id twice", http.MethodPost, oauth.PathToken, formType, "grant_type=refresh_token&refresh_token=x&client_id=a&client_id=b", "", "client_id"},
		{"revoke token twice", http.MethodPost, oauth.PathRevoke, formType, "token=a&token=b", "", "token"},
		{"authorize client_id twice", http.MethodGet, oauth.PathAuthorize + "?" + authorize.Encode() + "&client_id=oac_other", "", "", cookie, "client_id"},
		{"authorize state twice", http.MethodGet, oauth.PathAuthorize + "?" + authorize.Encode() + "&state=other-state-123", "", "", cookie, "state"},
		{"authorize query and body", http.MethodPost, oauth.PathAuthorize + "?redirect_uri=" + url.QueryEscape(redirectURI), formType, authorize.Encode(), cookie, "redirect_uri"},
		{"register duplicate member", http.MethodPost, oauth.PathRegister, jsonType,
			`{"redirect_uris":["` + redirectURI + `"],"redirect_uris":["https://evil.example/cb"]}`, "", "redirect_uris"},
		{"identity duplicate member", http.MethodPost, oauth.PathAgentIdentity, jsonType, `{"type":"anonymous","enrollment_token":"a","enrollment_token":"b"}`, "", "enrollment_token"},
		{"claim duplicate member", http.MethodPost, oauth.PathAgentClaim, jsonType, `{"claim_token":"a","email":"a@example.com","email":"b@example.com"}`, "", "email"},
		{"manage duplicate member", http.MethodPost, oauth.PathAgentManage, jsonType, `{"action":"enroll","name":"a","name":"b"}`, cookie, "name"},
		{"revoke identity duplicate member", http.MethodPost, oauth.PathAgentRevoke, jsonType, `{"identity_assertion":"a","identity_assertion":"b"}`, "", "identity_assertion"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, m := h.send(tc.method, tc.path, tc.ctype, tc.body, tc.cookie)
			wantCode := "invalid_request"
			if tc.path == oauth.PathRegister {
				wantCode = "invalid_client_metadata"
			}
			wantDescribed(t, tc.name, status, m, http.StatusBadRequest, wantCode, tc.mention)
		})
	}
	// Several resources stay an RFC 8707 question: invalid_target, as before.
	v := url.Values{}
	for k, vs := range authorize {
		v[k] = vs
	}
	v.Add("resource", h.base+"/a2a")
	code, loc, _ := h.browse(h.base+oauth.PathAuthorize+"?"+v.Encode(), cookie)
	if code != http.StatusSeeOther || loc == nil || loc.Query().Get("error") != "invalid_target" {
		t.Fatalf("two resources: %d %v, want a redirect with invalid_target", code, loc)
	}
}

// TestRegistrationBounds: before, a redirect URI with port 99999, with a
// bidirectional override, or with a 5,000-character host was registered,
// and client names with bidi characters or NUL were accepted (NUL was a
// 500 on PostgreSQL).
func TestRegistrationBounds(t *testing.T) {
	h := newHarness(t, nil)
	long := strings.Repeat("a", 60) + "."
	for _, tc := range []struct {
		name string
		body string
		code string
	}{
		{"port 99999", `{"redirect_uris":["http://127.0.0.1:99999/cb"]}`, "invalid_redirect_uri"},
		{"port 0", `{"redirect_uris":["https://app.example:0/cb"]}`, "invalid_redirect_uri"},
		{"bidi override in redirect", `{"redirect_uris":["https://app.example/\u202ebc"]}`, "invalid_redirect_uri"},
		{"unicode host", `{"redirect_uris":["https://äpp.example/cb"]}`, "invalid_redirect_uri"},
		{"control in redirect", `{"redirect_uris":["https://app.example/\u0007cb"]}`, "invalid_redirect_uri"},
		{"NUL in redirect", `{"redirect_uris":["https://app.example/\u0000cb"]}`, "invalid_redirect_uri"},
		{"5000-char host", `{"redirect_uris":["https://` + strings.Repeat("a", 5000) + `/cb"]}`, "invalid_redirect_uri"},
		{"300-char host", `{"redirect_uris":["https://` + strings.Repeat(long, 5) + `example/cb"]}`, "invalid_redirect_uri"},
		{"64-char label", `{"redirect_uris":["https://` + strings.Repeat("a", 64) + `.example/cb"]}`, "invalid_redirect_uri"},
		{"2001-char URI", `{"redirect_uris":["https://app.example/` + strings.Repeat("p", 1982) + `"]}`, "invalid_redirect_uri"},
		{"11 redirect URIs", `{"redirect_uris":[` + strings.TrimSuffix(strings.Repeat(`"https://app.example/cb",`, 11), ",") + `]}`, "invalid_redirect_uri"},
		{"bidi in client_name", `{"client_name":"Good\u202eliveE","redirect_uris":["` + redirectURI + `"]}`, "invalid_client_metadata"},
		{"isolate in client_name", `{"client_name":"a\u2066b","redirect_uris":["` + redirectURI + `"]}`, "invalid_client_metadata"},
		{"NUL in client_name", `{"client_name":"a\u0000b","redirect_uris":["` + redirectURI + `"]}`, "invalid_client_metadata"},
		{"newline in client_name", `{"client_name":"a\nb","redirect_uris":["` + redirectURI + `"]}`, "invalid_client_metadata"},
		{"101-char client_name", `{"client_name":"` + strings.Repeat("é", 101) + `","redirect_uris":["` + redirectURI + `"]}`, "invalid_client_metadata"},
		{"NUL in software_id", `{"software_id":"\u0000","redirect_uris":["` + redirectURI + `"]}`, "invalid_client_metadata"},
		// Lone surrogates decode to U+FFFD; PostgreSQL's jsonb refused them
		// (a 500 there): refused on the raw bytes.
		{"lone surrogate in client_name", `{"client_name":"a\ud800","redirect_uris":["` + redirectURI + `"]}`, "invalid_client_metadata"},
		{"lone surrogate in software_id", `{"software_id":"\udfff","redirect_uris":["` + redirectURI + `"]}`, "invalid_client_metadata"},
		{"lone surrogate in contacts", `{"contacts":["a\ud800@example.com"],"redirect_uris":["` + redirectURI + `"]}`, "invalid_client_metadata"},
		{"long software_version", `{"software_version":"` + strings.Repeat("1", 201) + `","redirect_uris":["` + redirectURI + `"]}`, "invalid_client_metadata"},
		{"NUL in contacts", `{"contacts":["a\u0000@example.com"],"redirect_uris":["` + redirectURI + `"]}`, "invalid_client_metadata"},
		{"11 contacts", `{"contacts":[` + strings.TrimSuffix(strings.Repeat(`"a@example.com",`, 11), ",") + `],"redirect_uris":["` + redirectURI + `"]}`, "invalid_client_metadata"},
		{"NUL in scope", `{"scope":"fax:read\u0000","redirect_uris":["` + redirectURI + `"]}`, "invalid_client_metadata"},
		{"NUL in grant type", `{"grant_types":["authorization_code\u0000"],"redirect_uris":["` + redirectURI + `"]}`, "invalid_client_metadata"},
		{"bidi in client_uri", `{"client_uri":"https://app.example/\u202e","redirect_uris":["` + redirectURI + `"]}`, "invalid_client_metadata"},
		{"port 70000 in logo_uri", `{"logo_uri":"https://app.example:70000/l.png","redirect_uris":["` + redirectURI + `"]}`, "invalid_client_metadata"},
		{"NUL in a member name", `{"redirect_uris":["` + redirectURI + `"],"a\u0000":1}`, "invalid_client_metadata"},
		{"invalid UTF-8", "{\"client_name\":\"\xff\xfe\",\"redirect_uris\":[\"" + redirectURI + "\"]}", "invalid_client_metadata"},
		{"wrong type", `{"redirect_uris":"` + redirectURI + `"}`, "invalid_client_metadata"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, m := h.send(http.MethodPost, oauth.PathRegister, jsonType, tc.body, "")
			wantOAuthError(t, tc.name, status, m, http.StatusBadRequest, tc.code)
		})
	}
	// The bounds themselves are accepted.
	ok := `{"client_name":"` + strings.Repeat("é", 100) + `","redirect_uris":["http://127.0.0.1:65535/cb","https://` +
		strings.Repeat("a", 63) + `.example/cb","http://[::1]:1/cb"],"software_id":"` + strings.Repeat("s", 200) + `"}`
	if status, m := h.send(http.MethodPost, oauth.PathRegister, jsonType, ok, ""); status != http.StatusCreated {
		t.Fatalf("registration at the bounds: %d %v", status, m)
	}
	status, m := h.send(http.MethodPost, oauth.PathRegister, jsonType, `{"redirect_uris":"x"}`, "")
	wantDescribed(t, "wrong type", status, m, http.StatusBadRequest, "invalid_client_metadata", "redirect_uris must be an array of strings")
}

// TestPKCEChallengeFormat: RFC 7636 section 4.2. Before, any non-empty
// code_challenge with method S256 was parked for the owner's consent, even
// one that no verifier can ever match.
func TestPKCEChallengeFormat(t *testing.T) {
	h := newHarness(t, nil)
	clientID := h.registerDefault()
	cookie := h.cookie(h.env.OwnerA)
	good := oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier())
	for _, tc := range []struct{ name, challenge, method string }{
		{"42 characters", good[:42], "S256"},
		{"129 characters", strings.Repeat("a", 129), "S256"},
		{"standard base64", strings.Repeat("a", 40) + "+/=", "S256"},
		{"space", strings.Repeat("a", 42) + " ", "S256"},
		{"no method", good, ""},
		{"plain", good, "plain"},
		{"lower-case s256", good, "s256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirectURI}, "state": {"state-0123456789"},
				"scope": {"fax:read"}, "code_challenge": {tc.challenge}, "resource": {h.mcp()}}
			if tc.method != "" {
				v.Set("code_challenge_method", tc.method)
			}
			code, loc, body := h.browse(h.base+oauth.PathAuthorize+"?"+v.Encode(), cookie)
			if code != http.StatusSeeOther || loc == nil || !strings.HasPrefix(loc.String(), redirectURI) || loc.Query().Get("error") != "invalid_request" {
				t.Fatalf("%d %v %s, want a redirect to the client with invalid_request", code, loc, body)
			}
		})
	}
	// A 43-character S256 challenge goes on to the owner's consent.
	v := url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirectURI}, "state": {"state-0123456789"},
		"scope": {"fax:read"}, "code_challenge": {good}, "code_challenge_method": {"S256"}, "resource": {h.mcp()}}
	if code, loc, body := h.browse(h.base+oauth.PathAuthorize+"?"+v.Encode(), cookie); code != http.StatusSeeOther || loc == nil || !strings.HasPrefix(loc.Path, "/console/approvals/") {
		t.Fatalf("good challenge: %d %v %s", code, loc, body)
	}
	// The verifier's format is fosite's to check at the token endpoint.
	a := h.authRequest(clientID, []string{"fax:read"})
	c := h.authorize(a, h.env.OwnerA, nil)
	status, m := h.form(oauth.PathToken, url.Values{"grant_type": {"authorization_code"}, "code": {c}, "client_id": {clientID},
		"redirect_uri": {redirectURI}, "code_verifier": {"short"}})
	if status != http.StatusBadRequest || (m["error"] != "invalid_grant" && m["error"] != "invalid_request") {
		t.Fatalf("short verifier: %d %v", status, m)
	}
}

// TestBadTextInParameters: NUL and invalid UTF-8 in token, revocation and
// authorization parameters. Before, a NUL in client_id reached the store,
// which PostgreSQL answers with an error: a 500 (run with
// FAXHUB_TESTENV_POSTGRES to see it).
func TestBadTextInParameters(t *testing.T) {
	h := newHarness(t, nil)
	clientID := h.registerDefault()
	cookie := h.cookie(h.env.OwnerA)
	for _, tc := range []struct{ name, method, path, ctype, body, mention string }{
		{"token NUL client_id", http.MethodPost, oauth.PathToken, formType, "grant_type=refresh_token&refresh_token=x&client_id=a%00b", "NUL"},
		{"token invalid UTF-8 client_id", http.MethodPost, oauth.PathToken, formType, "grant_type=refresh_token&refresh_token=x&client_id=%ff%fe", "UTF-8"},
		{"token NUL code", http.MethodPost, oauth.PathToken, formType, "grant_type=authorization_code&code=a%00&client_id=" + clientID, "NUL"},
		{"token NUL claim_token", http.MethodPost, oauth.PathToken, formType, "grant_type=" + url.QueryEscape(oauth.GrantTypeAgentClaim) + "&claim_token=fxc_%00", "NUL"},
		{"token NUL assertion", http.MethodPost, oauth.PathToken, formType, "grant_type=" + url.QueryEscape(oauth.GrantTypeJWTBearer) + "&assertion=a%00", "NUL"},
		{"token NUL in a name", http.MethodPost, oauth.PathToken, formType, "grant_type=refresh_token&a%00=1", "NUL"},
		{"revoke NUL token", http.MethodPost, oauth.PathRevoke, formType, "token=ory_at_%00.x", "NUL"},
		{"revoke invalid UTF-8 client_id", http.MethodPost, oauth.PathRevoke, formType, "token=x&client_id=%c3%28", "UTF-8"},
		{"authorize NUL client_id", http.MethodGet, oauth.PathAuthorize + "?response_type=code&client_id=oac_%00&state=state-0123456789", "", "", "NUL"},
		{"authorize invalid UTF-8 state", http.MethodGet, oauth.PathAuthorize + "?response_type=code&client_id=" + clientID + "&state=%ff%ff%ff%ff%ff%ff%ff%ff", "", "", "UTF-8"},
		{"resume NUL approval", http.MethodGet, oauth.PathAuthorizeResume + "?approval=apr_%00", "", "", "NUL"},
		{"resume approval twice", http.MethodGet, oauth.PathAuthorizeResume + "?approval=a&approval=b", "", "", "more than once"},
		{"authorize NUL metadata document id", http.MethodGet, oauth.PathAuthorize + "?response_type=code&client_id=https://app.example/%00&state=state-0123456789", "", "", "NUL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, m := h.send(tc.method, tc.path, tc.ctype, tc.body, cookie)
			wantDescribed(t, tc.name, status, m, http.StatusBadRequest, "invalid_request", tc.mention)
		})
	}
}

// TestAgentJSONErrors: the agent endpoints say which field has the wrong
// type, and refuse NUL and invalid UTF-8. Before, valid JSON of the wrong
// type answered "the JSON body is invalid: field scopes must be []string"
// (a Go type), and a NUL in an enrollment name reached the store (a 500 on
// PostgreSQL).
func TestAgentJSONErrors(t *testing.T) {
	h := newAgentHarness(t)
	cookie := h.cookie(h.env.OwnerA)
	for _, tc := range []struct {
		name, path, body, cookie string
		status                   int
		mention                  string
	}{
		{"scopes a string", oauth.PathAgentManage, `{"action":"enroll","name":"Bot","scopes":"fax:read"}`, cookie, 400, "the field scopes must be an array of strings, not a string"},
		{"scopes with a number", oauth.PathAgentManage, `{"action":"enroll","name":"Bot","scopes":["fax:read",1]}`, cookie, 400, "the field scopes must be an array of strings (an element is a number)"},
		{"name a number", oauth.PathAgentManage, `{"action":"enroll","name":5}`, cookie, 400, "the field name must be a string, not a number"},
		{"body an array", oauth.PathAgentIdentity, `[{"type":"anonymous"}]`, "", 400, "the body must be an object"},
		{"type an object", oauth.PathAgentIdentity, `{"type":{"x":1}}`, "", 400, "the field type must be a string, not an object"},
		{"email true", oauth.PathAgentClaim, `{"claim_token":"x","email":true}`, "", 400, "the field email must be a string, not true or false"},
		{"unknown field", oauth.PathAgentIdentity, `{"type":"anonymous","extra":1}`, "", 400, "the field extra is not known here"},
		{"syntax", oauth.PathAgentIdentity, `{"type":`, "", 400, "not complete JSON"},
		{"trailing", oauth.PathAgentIdentity, `{"type":"anonymous"} {}`, "", 400, "trailing data"},
		{"empty", oauth.PathAgentIdentity, ``, "", 400, "a JSON body is required"},
		{"NUL in name", oauth.PathAgentManage, `{"action":"enroll","name":"Bot\u0000"}`, cookie, 400, "NUL"},
		{"bidi in name", oauth.PathAgentManage, `{"action":"enroll","name":"Bot\u202e"}`, cookie, 400, "bidirectional"},
		{"invalid UTF-8 name", oauth.PathAgentManage, "{\"action\":\"enroll\",\"name\":\"Bot\xff\"}", cookie, 400, "UTF-8"},
		{"NUL in enrollment token", oauth.PathAgentIdentity, `{"type":"service_auth","enrollment_token":"fxe_\u0000","login_hint":"a@example.com"}`, "", 400, "NUL"},
		{"NUL in claim token", oauth.PathAgentClaim, `{"claim_token":"fxc_\u0000","email":"a@example.com"}`, "", 400, "NUL"},
		{"NUL in login_hint", oauth.PathAgentIdentity, `{"type":"service_auth","enrollment_token":"fxe_x","login_hint":"a\u0000@example.com"}`, "", 400, "NUL"},
		{"NUL in assertion", oauth.PathAgentRevoke, `{"identity_assertion":"a\u0000"}`, "", 400, "NUL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, m := h.send(http.MethodPost, tc.path, jsonType, tc.body, tc.cookie)
			wantDescribed(t, tc.name, status, m, tc.status, "invalid_request", tc.mention)
		})
	}
	status, m := h.send(http.MethodPost, oauth.PathAgentIdentity, "text/plain", `{}`, "")
	if status != http.StatusUnsupportedMediaType {
		t.Fatalf("text/plain: %d %v", status, m)
	}
	status, m = h.send(http.MethodPost, oauth.PathAgentIdentity, jsonType, `{"type":"`+strings.Repeat("a", 17<<10)+`"}`, "")
	if status != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized: %d %v", status, m)
	}
}
