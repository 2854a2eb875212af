package mcp_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/conformance/storetest"
	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/internal/app"
	"github.com/faxhub/faxhub/internal/testenv"
	"github.com/faxhub/faxhub/oauth"
)

// FuzzMCPRequest drives POST /mcp through the whole HTTP surface (on
// PostgreSQL when FAXHUB_TESTENV_POSTGRES is set) with any JSON-RPC body
// and a valid agent token holding every fax scope: batches, unknown
// methods, broken envelopes and any tool arguments are never a 5xx.
func FuzzMCPRequest(f *testing.F) {
	dsn := ""
	if pg := os.Getenv(testenv.EnvPostgres); pg != "" {
		dsn = storetest.OpenPostgresSchema(f, pg)
	}
	a, err := app.Open(f.Context(), app.Options{
		BaseURL: "http://faxhub.test", DataDir: testenv.DataDirFor(f, dsn), Database: dsn, MCPOAuth: true, SimTimeScale: 0, InsertOnly: true,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { a.Close() })
	h := a.Handler()
	tok := agentToken(f, a, h)

	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"f","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_credits","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get_fax","arguments":{"faxId":"fax_x"}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"create_fax_draft","arguments":{"to":"+12125550100","uploadToken":"x"}}}`,
		`[{"jsonrpc":"2.0","id":6,"method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
		`{"jsonrpc":"2.0","id":{"x":1},"method":"server/discover"}`,
		`{"jsonrpc":"1.0","id":null}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get_fax","arguments":{"faxId":"fax_\udc00"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get_fax","arguments":{"faxId":"fax_x","faxId":"fax_y"}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+tok)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%q: %d %s", body, rec.Code, rec.Body)
		}
	})
}

// agentToken registers an agent with every fax scope the way an agent
// does (enrollment, registration, the owner's approval, the claim grant)
// and returns its access token for the MCP resource.
func agentToken(tb testing.TB, a *app.App, h http.Handler) string {
	tb.Helper()
	ctx := tb.Context()
	scopes := []string{"fax:read", "fax:draft", "fax:send", "credits:read", "credits:checkout"}
	owner, err := a.Svc.Accounts.CreateOwner(ctx, "fuzz@example.com", "Fuzz", true)
	if err != nil {
		tb.Fatal(err)
	}
	enr, err := a.Svc.Agents.CreateEnrollment(ctx, owner.ID, "fuzz bot", scopes)
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
		`{"type":"service_auth","enrollment_token":"`+enr.EnrollmentToken+`","login_hint":"fuzz@example.com"}`)
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
	if err := a.Svc.Agents.DecideClaim(ctx, owner.ID, attempt, reg.Claim.UserCode, true, scopes); err != nil {
		tb.Fatal(err)
	}
	code, body = post(oauth.PathToken, "application/x-www-form-urlencoded", url.Values{"grant_type": {oauth.GrantTypeAgentClaim},
		"claim_token": {reg.ClaimToken}, "resource": {"http://faxhub.test/mcp"}}.Encode())
	if code != http.StatusOK {
		tb.Fatalf("token: %d %s", code, body)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	_ = json.Unmarshal(body, &tok)
	if tok.AccessToken == "" {
		tb.Fatalf("no access token: %s", body)
	}
	return tok.AccessToken
}
