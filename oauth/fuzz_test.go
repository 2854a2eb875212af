package oauth_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/internal/testenv"
	"github.com/faxhub/faxhub/oauth"
)

// The fuzz targets drive the real handlers on internal/testenv (SQLite, or
// PostgreSQL with FAXHUB_TESTENV_POSTGRES: conformance/fuzz.sh runs both).
// The bar: never a 5xx, always an OAuth error object (or a success).

// fuzzServer is an OAuth server without network, registration unlimited.
func fuzzServer(f *testing.F) (*testenv.Env, http.Handler) {
	f.Helper()
	env := testenv.New(f, testenv.WithoutWorkers(), testenv.WithConfig(func(c *services.Config) {
		c.SetLimit(core.LimitOAuthRegister, core.Rate{Burst: 1 << 30})
	}))
	srv, err := oauth.New(env.Svc, env.DB, oauth.Options{BaseURL: "http://faxhub.test", MCPOAuth: true,
		// Metadata document client_ids are never fetched from the network.
		HTTPClient: &http.Client{Transport: noNetwork{}}})
	if err != nil {
		f.Fatal(err)
	}
	return env, routed(srv, env, "http://faxhub.test")
}

// noNetwork fails every request.
type noNetwork struct{}

func (noNetwork) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("no network in fuzz tests")
}

// serve runs one request and checks the bar: below 500, a JSON object,
// and unless the status is ok, an "error" member naming an OAuth error
// code.
func serve(t *testing.T, h http.Handler, r *http.Request, ok int) map[string]any {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code >= 500 {
		t.Fatalf("%s %s: %d %s", r.Method, r.URL.Path, w.Code, w.Body)
	}
	if w.Code == ok && w.Body.Len() == 0 {
		return nil // revocation answers 200 with no body (RFC 7009)
	}
	var m map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil {
		t.Fatalf("%s %s: %d, body not a JSON object: %q", r.Method, r.URL.Path, w.Code, w.Body)
	}
	if w.Code != ok {
		if code, _ := m["error"].(string); code == "" || strings.ContainsAny(code, " \"\\") {
			t.Fatalf("%s %s: %d without an OAuth error code: %s", r.Method, r.URL.Path, w.Code, w.Body)
		}
	}
	return m
}

func formRequest(path, body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return r
}

func FuzzTokenForm(f *testing.F) {
	for _, s := range []string{
		"grant_type=authorization_code&code=ory_ac_x.y&client_id=oac_x&redirect_uri=http%3A%2F%2F127.0.0.1%3A1%2Fcb&code_verifier=" + strings.Repeat("v", 43),
		"grant_type=refresh_token&refresh_token=ory_rt_x.y&client_id=https%3A%2F%2Fapp.example%2Fc.json",
		"grant_type=" + url.QueryEscape(oauth.GrantTypeAgentClaim) + "&claim_token=fxc_x&resource=http%3A%2F%2Ffaxhub.test%2Fmcp",
		"grant_type=" + url.QueryEscape(oauth.GrantTypeJWTBearer) + "&assertion=e30.e30.e30",
		"grant_type=client_credentials&grant_type=password",
		"grant_type=refresh_token&client_id=%00%ff",
		"%zz=1&grant_type",
	} {
		f.Add(s)
	}
	_, h := fuzzServer(f)
	f.Fuzz(func(t *testing.T, body string) {
		serve(t, h, formRequest(oauth.PathToken, body), http.StatusOK)
		serve(t, h, formRequest(oauth.PathRevoke, body), http.StatusOK)
	})
}

func FuzzRegister(f *testing.F) {
	for _, s := range []string{
		`{"client_name":"App","redirect_uris":["http://127.0.0.1:53682/callback"],"grant_types":["authorization_code","refresh_token"]}`,
		`{"redirect_uris":["https://app.example:99999/cb"]}`,
		`{"redirect_uris":["https://app.example/cb"],"redirect_uris":[]}`,
		`{"client_name":"a\u0000\u202e","redirect_uris":["https://a.example/\u0007"],"contacts":[1]}`,
		`[{"redirect_uris":null}]`,
		// Lone surrogates (PostgreSQL's jsonb refused them: a 500).
		`{"client_name":"\ud800","software_id":"\udfff","contacts":["a\ud800@example.com"],"redirect_uris":["http://127.0.0.1:53682/callback"]}`,
	} {
		f.Add(s)
	}
	_, h := fuzzServer(f)
	f.Fuzz(func(t *testing.T, body string) {
		r := httptest.NewRequest(http.MethodPost, oauth.PathRegister, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		m := serve(t, h, r, http.StatusCreated)
		if e, ok := m["error"].(string); ok && e != "invalid_client_metadata" && e != "invalid_redirect_uri" {
			t.Fatalf("register answered %q, want an RFC 7591 error", e)
		}
	})
}

// FuzzAssertion feeds identity assertions to the jwt-bearer grant and to
// the registration revocation, seeded with a real one.
func FuzzAssertion(f *testing.F) {
	env, h := fuzzServer(f)
	enr, err := env.Svc.Agents.CreateEnrollment(context.Background(), env.OwnerA.ID, "Fuzz bot", nil)
	if err != nil {
		f.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, oauth.PathAgentIdentity, strings.NewReader(`{"type":"anonymous","enrollment_token":"`+enr.EnrollmentToken+`"}`))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var reg struct {
		Assertion string `json:"identity_assertion"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &reg); err != nil || reg.Assertion == "" {
		f.Fatalf("anonymous registration: %d %s", w.Code, w.Body)
	}
	head, rest, _ := strings.Cut(reg.Assertion, ".")
	f.Add(reg.Assertion)
	f.Add(head + ".e30." + rest[strings.Index(rest, ".")+1:])
	f.Add("eyJhbGciOiJub25lIiwidHlwIjoib2F1dGgtaWQtamFnK2p3dCJ9.e30.")
	// The real assertion's header and signature around claims with a NUL
	// and a lone surrogate in iss and sub.
	f.Add(head + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"agr_\u0000","sub":"\ud800","aud":"x","exp":9999999999}`)) + "." + rest[strings.Index(rest, ".")+1:])
	f.Add("not-a-jwt")
	f.Fuzz(func(t *testing.T, assertion string) {
		v := url.Values{"grant_type": {oauth.GrantTypeJWTBearer}, "assertion": {assertion}, "resource": {"http://faxhub.test/mcp"}}
		serve(t, h, formRequest(oauth.PathToken, v.Encode()), http.StatusOK)
		b, _ := json.Marshal(map[string]string{"identity_assertion": assertion})
		r := httptest.NewRequest(http.MethodPost, oauth.PathAgentRevoke, strings.NewReader(string(b)))
		r.Header.Set("Content-Type", "application/json")
		serve(t, h, r, http.StatusOK)
	})
}
