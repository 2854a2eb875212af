package app_test

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
	"github.com/faxhub/faxhub/core/agents"
	"github.com/faxhub/faxhub/core/web"
	"github.com/faxhub/faxhub/internal/app"
	"github.com/faxhub/faxhub/internal/testenv"
	"github.com/faxhub/faxhub/oauth"
)

// TestAgentRegistrationTwoReplicas runs two app.Open instances on one
// PostgreSQL schema: the live-token limit and the claim polling state
// (slow_down) hold across them.
func TestAgentRegistrationTwoReplicas(t *testing.T) {
	const base = "http://faxhub.test"
	apps, srvs := replicas(t, 2, base, func(o *app.Options) { o.MCPOAuth = true })
	owner, err := apps[0].Svc.Accounts.CreateOwner(t.Context(), "agents@example.com", "Agents", true)
	if err != nil {
		t.Fatal(err)
	}
	secret, _, err := apps[1].Svc.Accounts.CreateSession(t.Context(), owner.ID, "test")
	if err != nil {
		t.Fatal(err)
	}
	cookie := web.SessionCookieName + "=" + secret
	post := func(i int, path, ct, body, cookie string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srvs[i].URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", ct)
		if cookie != "" {
			req.Header.Set("Cookie", cookie)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	js := func(v any) string { var b bytes.Buffer; _ = json.NewEncoder(&b).Encode(v); return b.String() }
	var tokens []string
	for i := range agents.MaxLiveEnrollments {
		code, m := post(i%2, oauth.PathAgentManage, "application/json", js(map[string]any{"action": "enroll", "name": "Bot"}), cookie)
		if code != http.StatusCreated {
			t.Fatalf("enroll %d: %d %v", i, code, m)
		}
		tokens = append(tokens, m["enrollment_token"].(string))
	}
	code, m := post(1, oauth.PathAgentManage, "application/json", js(map[string]any{"action": "enroll", "name": "Bot"}), cookie)
	if code != http.StatusConflict || m["error"] != "too_many_enrollments" {
		t.Fatalf("sixth token on replica 2: %d %v", code, m)
	}
	code, m = post(1, oauth.PathAgentIdentity, "application/json", js(map[string]any{"type": "service_auth", "enrollment_token": tokens[0], "login_hint": owner.Email}), "")
	if code != http.StatusCreated {
		t.Fatalf("register on replica 2: %d %v", code, m)
	}
	code, r := post(0, oauth.PathAgentIdentity, "application/json", js(map[string]any{"type": "service_auth", "enrollment_token": tokens[0], "login_hint": owner.Email}), "")
	if r["error"] != agents.CodeInvalidEnrollment {
		t.Fatalf("reuse on replica 1: %d %v", code, r)
	}
	form := url.Values{"grant_type": {oauth.GrantTypeAgentClaim}, "claim_token": {m["claim_token"].(string)}, "resource": {base + "/mcp"}}.Encode()
	if _, p := post(0, oauth.PathToken, "application/x-www-form-urlencoded", form, ""); p["error"] != "authorization_pending" {
		t.Fatalf("poll on replica 1: %v", p)
	}
	if _, p := post(1, oauth.PathToken, "application/x-www-form-urlencoded", form, ""); p["error"] != "slow_down" || p["interval"].(float64) != 10 {
		t.Fatalf("immediate poll on replica 2: %v", p)
	}
}

// TestAgentTokenAtMCP runs the whole agent flow through app.Open and uses
// the approved token at /mcp: tools/call for a granted scope works, one
// outside it is refused with insufficient_scope.
func TestAgentTokenAtMCP(t *testing.T) {
	a, err := app.Open(t.Context(), app.Options{
		BaseURL: "http://faxhub.test", DataDir: testenv.MigratedDataDir(t), MCPOAuth: true, SimTimeScale: 0, InsertOnly: true,
		Logger: slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	ctx := t.Context()
	owner, err := a.Svc.Accounts.CreateOwner(ctx, "mcp-agent@example.com", "Agent owner", true)
	if err != nil {
		t.Fatal(err)
	}
	secret, err := a.Svc.Agents.CreateEnrollment(ctx, owner.ID, "MCP bot", []string{"fax:read", "credits:read"})
	if err != nil {
		t.Fatal(err)
	}
	do := func(path, ct, auth, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", ct)
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	code, body := do(oauth.PathAgentIdentity, "application/json",
		"", `{"type":"service_auth","enrollment_token":"`+secret.EnrollmentToken+`","login_hint":"mcp-agent@example.com"}`)
	if code != http.StatusCreated {
		t.Fatalf("register: %d %s", code, body)
	}
	var reg struct {
		ClaimToken string `json:"claim_token"`
		Claim      struct {
			UserCode        string `json:"user_code"`
			VerificationURI string `json:"verification_uri"`
		} `json:"claim"`
	}
	_ = json.Unmarshal([]byte(body), &reg)
	_, attempt, _ := strings.Cut(reg.Claim.VerificationURI, core.LinkClaimPage.PathPrefix())
	if err := a.Svc.Agents.DecideClaim(ctx, owner.ID, attempt, reg.Claim.UserCode, true, []string{"credits:read"}); err != nil {
		t.Fatal(err)
	}
	code, body = do(oauth.PathToken, "application/x-www-form-urlencoded", "", url.Values{"grant_type": {oauth.GrantTypeAgentClaim},
		"claim_token": {reg.ClaimToken}, "resource": {"http://faxhub.test/mcp"}}.Encode())
	if code != 200 {
		t.Fatalf("poll: %d %s", code, body)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
		Scope       string `json:"scope"`
	}
	_ = json.Unmarshal([]byte(body), &tok)
	if tok.Scope != "credits:read" {
		t.Fatalf("scope = %q", tok.Scope)
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"agent","version":"1"}}}`
	if code, body := do("/mcp", "application/json", tok.AccessToken, init); code != 200 {
		t.Fatalf("initialize with the agent token: %d %s", code, body)
	}
	call := func(tool string) (int, string) {
		return do("/mcp", "application/json", tok.AccessToken, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"`+tool+`","arguments":{}}}`)
	}
	if code, body := call("get_credits"); code != 200 || strings.Contains(body, `"isError":true`) {
		t.Fatalf("get_credits with credits:read: %d %s", code, body)
	}
	if code, body := call("list_faxes"); code != http.StatusForbidden {
		t.Fatalf("list_faxes without fax:read: %d %s", code, body)
	}
}

// replicas opens n app.Open instances on one fresh PostgreSQL schema, each
// behind its own test server, all with base URL base; it skips the test
// when no PostgreSQL is configured. mod adjusts the options of each.
func replicas(t *testing.T, n int, base string, mod func(*app.Options)) ([]*app.App, []*httptest.Server) {
	t.Helper()
	pg := os.Getenv(testenv.EnvPostgres)
	if pg == "" {
		pg = os.Getenv(storetest.EnvPostgresURL)
	}
	if pg == "" {
		t.Skip("set " + testenv.EnvPostgres + " or " + storetest.EnvPostgresURL + " to run replicas on PostgreSQL")
	}
	dsn := storetest.OpenPostgresSchema(t, pg)
	var srvs []*httptest.Server
	var apps []*app.App
	for range n {
		o := app.Options{
			BaseURL: base, DataDir: t.TempDir(), Database: dsn, SimTimeScale: 0, InsertOnly: true,
			Logger: slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
		}
		if mod != nil {
			mod(&o)
		}
		a, err := app.Open(t.Context(), o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		s := httptest.NewServer(a.Handler())
		t.Cleanup(s.Close)
		apps, srvs = append(apps, a), append(srvs, s)
	}
	return apps, srvs
}
