package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/web"
)

func TestStatus(t *testing.T) {
	for _, c := range []struct {
		kind core.Kind
		want int
	}{
		{core.KindInvalid, 400}, {core.KindUnauthenticated, 401}, {core.KindForbidden, 403},
		{core.KindNotFound, 404}, {core.KindConflict, 409}, {core.KindPaymentRequired, 402},
		{core.KindRateLimited, 429}, {core.KindTooLarge, 413}, {core.KindUnsupportedMedia, 415},
		{core.KindUnprocessable, 422}, {core.KindUnavailable, 503}, {core.KindGone, 410},
		{core.KindInternal, 500},
	} {
		if got := web.Status(c.kind); got != c.want {
			t.Errorf("Status(%d) = %d, want %d", c.kind, got, c.want)
		}
	}
}

func TestProblemForHidesInternalErrors(t *testing.T) {
	p := web.ProblemFor(errorString("pq: relation \"secrets\" does not exist"))
	if p.Status != 500 || p.Code != core.CodeInternal || strings.Contains(p.Detail, "secrets") {
		t.Fatalf("internal problem leaks or misclassifies: %+v", p)
	}
	p = web.ProblemFor(core.Errorf(core.KindPaymentRequired, credits.CodeInsufficientCredits, "short").With("balance", "1.00"))
	b, _ := json.Marshal(p)
	if p.Status != 402 || !strings.Contains(string(b), `"balance":"1.00"`) || !strings.Contains(string(b), `"code":"insufficient_credits"`) {
		t.Fatalf("problem: %s", b)
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }

func TestDecodeJSON(t *testing.T) {
	type inner struct {
		Name string `json:"name"`
	}
	type body struct {
		To    string         `json:"to"`
		Items []inner        `json:"items,omitempty"`
		Meta  map[string]any `json:"meta,omitempty"`
	}
	for _, c := range []struct {
		name, ctype, body string
		allowEmpty        bool
		limit             int64
		wantKind          core.Kind // KindInternal: no error expected
	}{
		{"ok", "application/json", `{"to":"x"}`, false, 0, core.KindInternal},
		{"problem+json suffix", "application/merge-patch+json", `{"to":"x"}`, false, 0, core.KindInternal},
		{"unknown field", "application/json", `{"from":"x"}`, false, 0, core.KindInvalid},
		{"trailing data", "application/json", `{"to":"x"} {}`, false, 0, core.KindInvalid},
		{"trailing bracket", "application/json", `{"to":"x"}]`, false, 0, core.KindInvalid},
		{"trailing space", "application/json", "{\"to\":\"x\"} \n", false, 0, core.KindInternal},
		{"case-folded name", "application/json", `{"TO":"x"}`, false, 0, core.KindInvalid},
		{"case-folded nested name", "application/json", `{"to":"x","items":[{"Name":"y"}]}`, false, 0, core.KindInvalid},
		{"nested ok", "application/json", `{"to":"x","items":[{"name":"y"}],"meta":{"Any":1}}`, false, 0, core.KindInternal},
		{"malformed inside an array (hung the name check)", "application/json", `{"to":"x","items":[{"name":"a"},{"2}]}`, false, 0, core.KindInvalid},
		{"malformed object", "application/json", `{"to":"x",,}`, false, 0, core.KindInvalid},
		{"duplicate name", "application/json", `{"to":"x","to":"y"}`, false, 0, core.KindInvalid},
		{"duplicate in a map", "application/json", `{"to":"x","meta":{"a":1,"a":2}}`, false, 0, core.KindInvalid},
		{"same name in two objects", "application/json", `{"to":"x","items":[{"name":"a"},{"name":"b"}]}`, false, 0, core.KindInternal},
		{"NUL in a value", "application/json", `{"to":"x\u0000"}`, false, 0, core.KindInvalid},
		{"invalid UTF-8", "", "{\"to\":\"\xff\"}", false, 0, core.KindInvalid},
		{"wrong type", "application/json", `{"to":1}`, false, 0, core.KindInvalid},
		{"not json", "text/plain", `{"to":"x"}`, false, 0, core.KindUnsupportedMedia},
		{"empty refused", "application/json", ``, false, 0, core.KindInvalid},
		{"empty allowed", "application/json", ``, true, 0, core.KindInternal},
		{"too large", "application/json", `{"to":"` + strings.Repeat("x", 100) + `"}`, false, 32, core.KindTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(c.body))
			r.Header.Set("Content-Type", c.ctype)
			var v body
			var err error
			if c.limit > 0 {
				err = web.DecodeJSONLimit(httptest.NewRecorder(), r, &v, c.limit, c.allowEmpty)
			} else {
				err = web.DecodeJSON(httptest.NewRecorder(), r, &v, c.allowEmpty)
			}
			if c.wantKind == core.KindInternal {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil || core.ErrorKind(err) != c.wantKind {
				t.Fatalf("error %v, want kind %d", err, c.wantKind)
			}
		})
	}
}

func TestParseAuthorization(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	if a, err := web.ParseAuthorization(r); err != nil || a.Scheme != "" || a.IsBearer() {
		t.Fatalf("no header: %+v %v", a, err)
	}
	r.Header.Set("Authorization", "bearer  tok ")
	if tok, ok := web.BearerToken(r); !ok || tok != "tok" {
		t.Fatalf("bearer: %q %v", tok, ok)
	}
	r.Header.Set("Authorization", "DPoP tok")
	if a, _ := web.ParseAuthorization(r); a.IsBearer() || !strings.EqualFold(a.Scheme, "dpop") {
		t.Fatalf("dpop: %+v", a)
	}
	r.Header.Set("Authorization", "Bearer a")
	r.Header.Add("Authorization", "Bearer b")
	if _, err := web.ParseAuthorization(r); core.ErrorKind(err) != core.KindInvalid {
		t.Fatalf("two headers: %v", err)
	}
	if _, ok := web.BearerToken(r); ok {
		t.Fatal("BearerToken took one of two headers")
	}
}

func TestCredentialInQuery(t *testing.T) {
	for q, want := range map[string]string{"api_key=x": "api_key", "access_token=x": "access_token", "token=": "token", "apiKey=1": "apiKey", "limit=1": ""} {
		name, ok := web.CredentialInQuery(httptest.NewRequest(http.MethodGet, "/?"+q, nil))
		if name != want || ok != (want != "") {
			t.Errorf("%s: %q %v", q, name, ok)
		}
	}
}

type sessions map[string]*accounts.Session

func (s sessions) AuthenticateSession(_ context.Context, secret string) (*accounts.Session, error) {
	if sess, ok := s[secret]; ok {
		return sess, nil
	}
	if secret == "broken" {
		return nil, errorString("database down")
	}
	return nil, core.Errorf(core.KindUnauthenticated, core.CodeUnauthenticated, "not signed in")
}

func TestOwnerSession(t *testing.T) {
	s := sessions{"good": {ID: "ses_1", OwnerID: "own_1"}}
	for _, c := range []struct {
		cookie  string
		want    string
		wantErr bool
	}{{"", "", false}, {"good", "own_1", false}, {"stale", "", false}, {"broken", "", true}} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		if c.cookie != "" {
			r.AddCookie(&http.Cookie{Name: web.SessionCookieName, Value: c.cookie})
		}
		sess, err := web.OwnerSession(r, s)
		if (err != nil) != c.wantErr {
			t.Fatalf("%q: err %v", c.cookie, err)
		}
		got := ""
		if sess != nil {
			got = sess.OwnerID
		}
		if got != c.want {
			t.Fatalf("%q: owner %q, want %q", c.cookie, got, c.want)
		}
	}
}

// A request whose context ended (the client hung up, its body timed out)
// is not a 500 and not logged as one.
func TestWriteErrorClientGone(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := httptest.NewRequest("POST", "/api/v1/faxes", nil).WithContext(ctx)
	rec := httptest.NewRecorder()
	web.WriteError(rec, r, log, fmt.Errorf("rate limit: %w", context.Canceled))
	if rec.Code != http.StatusBadRequest || logs.Len() != 0 {
		t.Fatalf("client gone: %d, logged %q", rec.Code, logs.String())
	}
	// The same error while the request is alive is the server's.
	rec = httptest.NewRecorder()
	web.WriteError(rec, httptest.NewRequest("POST", "/api/v1/faxes", nil), log, fmt.Errorf("rate limit: %w", context.Canceled))
	if rec.Code != http.StatusInternalServerError || logs.Len() == 0 {
		t.Fatalf("live request: %d, logged %q", rec.Code, logs.String())
	}
}

func TestLoopbackHost(t *testing.T) {
	for in, want := range map[string]bool{
		"127.0.0.1:8080": true, "[::1]:443": true, "localhost": true, "LOCALHOST:1": true, "::ffff:127.0.0.1": true,
		":8080": false, "0.0.0.0:8080": false, "evil.example:80": false, "192.0.2.1": false, "": false,
	} {
		if got := web.LoopbackHost(in); got != want {
			t.Errorf("LoopbackHost(%q) = %v, want %v", in, got, want)
		}
	}
}
