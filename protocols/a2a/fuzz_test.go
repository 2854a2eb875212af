package a2a_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/faxhub/faxhub/conformance/storetest"
	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/internal/app"
	"github.com/faxhub/faxhub/internal/testenv"
	"github.com/faxhub/faxhub/oauth"
)

// FuzzA2ARequest drives POST /a2a through the whole HTTP surface (on
// PostgreSQL when FAXHUB_TESTENV_POSTGRES is set) with any body and a
// valid token holding every scope, AP2 activated: broken envelopes, parts
// and arguments of either protocol version are never a 5xx and always a
// JSON-RPC answer (each event of a stream one; a stream that follows a
// task is cut after a few seconds).
func FuzzA2ARequest(f *testing.F) {
	dsn := ""
	if pg := os.Getenv(testenv.EnvPostgres); pg != "" {
		dsn = storetest.OpenPostgresSchema(f, pg)
	}
	a, err := app.Open(f.Context(), app.Options{
		BaseURL: "http://faxhub.test", DataDir: testenv.DataDirFor(f, dsn), Database: dsn, Dev: true, SimTimeScale: 0, InsertOnly: true,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { a.Close() })
	h := a.Handler()
	o, err := a.Svc.Accounts.CreateOwner(f.Context(), "fuzz@example.com", "Fuzz", true)
	if err != nil {
		f.Fatal(err)
	}
	tok := agentTokenFor(f, a, h, o.ID, o.Email)

	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":{"skill":"get_credits","arguments":{}}}]}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[null]}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":null}}`,
		`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":null}`,
		`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","taskId":"tsk_x","parts":[{"data":{"ap2.mandates.PaymentMandate":{"payment_mandate_contents":null}}}]}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":{"ap2.mandates.IntentMandate":{"skus":[1]}}}]}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":{"skill":"buy_credits","arguments":{"paymentMandate":[]}}}]}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":{"skill":"validate_fax","arguments":{"to":"+12125550100","pages":1e9}}}]}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":[1,2]}]}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"data","data":{"skill":"create_fax","arguments":{"to":"+12125550100","uploadToken":"x"}}}]}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"file","file":{"bytes":"AAAA"}}]}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"GetTask","params":{"id":"tsk_x","historyLength":-1}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tasks/cancel","params":{"id":""}}`,
		`{"jsonrpc":"2.0","id":{"x":1},"method":"GetTask"}`,
		`{"jsonrpc":"1.0","id":null}`,
		`[]`,
		// A lone surrogate and a duplicate name in skill arguments: refused
		// as invalid params, like every other door.
		`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":{"skill":"get_fax","arguments":{"faxId":"fax_\ud800"}}}]}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":{"skill":"get_fax","arguments":{"faxId":"fax_x","faxId":"fax_y"}}}]}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":{"skill":"get_credits","arguments":{}}}]}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":{"skill":"create_fax","arguments":{"to":"+12125550100","uploadToken":"x"}}}]}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":{"id":"tsk_x"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":null}`,
		`{"jsonrpc":"2.0","id":2,"method":"tasks/resubscribe","params":{"id":""}}`,
		`{"jsonrpc":"2.0","id":2,"method":"message/stream","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"data","data":{"skill":"buy_credits","arguments":{"packId":"pack_10"}}}]}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/a2a", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("A2A-Extensions", "https://github.com/google-agentic-commerce/ap2/tree/v0.1")
		// A stream that follows a task (a credit purchase waits 15 minutes
		// for its mandate) ends when the request does.
		ctx, cancel := context.WithTimeout(req.Context(), 3*time.Second)
		defer cancel()
		req = req.WithContext(ctx)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%d for %q: %s", rec.Code, body, rec.Body)
		}
		answers := [][]byte{rec.Body.Bytes()}
		if strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") {
			answers = nil
			for _, line := range strings.Split(rec.Body.String(), "\n") {
				if data, ok := strings.CutPrefix(line, "data: "); ok {
					answers = append(answers, []byte(data))
				}
			}
			if len(answers) == 0 {
				t.Fatalf("a stream without an event for %q: %s", body, rec.Body)
			}
		}
		for _, a := range answers {
			var m map[string]any
			if err := json.Unmarshal(a, &m); err != nil || m["jsonrpc"] != "2.0" {
				t.Fatalf("not a JSON-RPC answer (%d) for %q: %s", rec.Code, body, rec.Body)
			}
		}
	})
}

// agentTokenFor registers an agent with every A2A scope for the owner the
// way an agent does (enrollment, registration, the owner's approval, the
// claim grant) and returns its access token for the A2A resource.
func agentTokenFor(tb testing.TB, a *app.App, h http.Handler, ownerID, email string) string {
	tb.Helper()
	ctx := tb.Context()
	scopes := []string{"fax:read", "fax:draft", "credits:read", "credits:checkout"}
	enr, err := a.Svc.Agents.CreateEnrollment(ctx, ownerID, "fuzz bot", scopes)
	if err != nil {
		tb.Fatal(err)
	}
	post := func(path, ct, body string) (int, []byte) {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		req.Header.Set("Content-Type", ct)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.Bytes()
	}
	code, body := post(oauth.PathAgentIdentity, "application/json",
		`{"type":"service_auth","enrollment_token":"`+enr.EnrollmentToken+`","login_hint":"`+email+`"}`)
	if code != http.StatusCreated {
		tb.Fatalf("register: %d %s", code, body)
	}
	var reg struct {
		ClaimToken string `json:"claim_token"`
		Claim      struct {
			UserCode        string `json:"user_code"`
			VerificationURI string `json:"verification_uri"`
		} `json:"claim"`
	}
	_ = json.Unmarshal(body, &reg)
	_, attempt, _ := strings.Cut(reg.Claim.VerificationURI, core.LinkClaimPage.PathPrefix())
	if err := a.Svc.Agents.DecideClaim(ctx, ownerID, attempt, reg.Claim.UserCode, true, scopes); err != nil {
		tb.Fatal(err)
	}
	code, body = post(oauth.PathToken, "application/x-www-form-urlencoded", url.Values{"grant_type": {oauth.GrantTypeAgentClaim},
		"claim_token": {reg.ClaimToken}, "resource": {a.Svc.Kernel.ResourceA2A()}}.Encode())
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	_ = json.Unmarshal(body, &tok)
	if code != http.StatusOK || tok.AccessToken == "" {
		tb.Fatalf("token: %d %s", code, body)
	}
	return tok.AccessToken
}
