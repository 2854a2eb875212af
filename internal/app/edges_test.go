package app_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/web"
	"github.com/faxhub/faxhub/internal/app"
)

// TestInvalidTextRefusedAtEveryEdge sends a NUL and invalid UTF-8 in every
// place a client's text reaches the service. PostgreSQL refuses both in
// text columns, which used to make these 500s there (and 404s or 200s on
// SQLite); each must be a 400 in its protocol's shape on both databases
// (FAXHUB_TESTENV_POSTGRES runs this on PostgreSQL).
func TestInvalidTextRefusedAtEveryEdge(t *testing.T) {
	// Machine payments on: the machine endpoints check their JSON text
	// while decoding, after the switch.
	e := newE2E(t, func(o *app.Options) { o.MachinePayments = true })
	ctx := t.Context()
	o, err := e.a.Svc.Accounts.CreateOwner(ctx, "text@example.com", "Text", true)
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := e.a.Svc.Accounts.CreateAPIKey(ctx, o.ID, core.ModeTest, "text")
	if err != nil {
		t.Fatal(err)
	}
	session, _, err := e.a.Svc.Accounts.CreateSession(ctx, o.ID, "edges test")
	if err != nil {
		t.Fatal(err)
	}
	bearer := http.Header{"Authorization": {"Bearer " + key}}
	cookie := http.Header{"Cookie": {web.SessionCookieName + "=" + session}}
	withIdem := http.Header{"Authorization": {"Bearer " + key}, "Idempotency-Key": {"k1"}}

	type shape int
	const (
		problem   shape = iota // problem+json, code invalid_request
		oauthErr               // {"error": "invalid_request"}
		jsonRPC                // JSON-RPC error -32602 answering id 7
		agentAuth              // {"error": "invalid_request", "message": …}
		dcrErr                 // RFC 7591 {"error": "invalid_client_metadata"}
	)
	for _, bad := range []struct {
		name string
		esc  string // in a URL or form
		raw  string // inside a JSON string
	}{
		{"NUL", "%00", `\u0000`},
		{"invalid UTF-8", "%FF", "\xff\xfe"},
		// A lone surrogate: JSON can escape one (encoding/json made it
		// U+FFFD; PostgreSQL's jsonb refused it, a 500 at registration);
		// in a URL its UTF-8 form is invalid UTF-8.
		{"lone surrogate", "%ED%A0%80", `\ud800`},
	} {
		j := bad.raw
		cases := []struct {
			name, method, path, ctype, body string
			hdr                             http.Header
			want                            shape
		}{
			{"fax id", "GET", "/api/v1/faxes/fax_" + bad.esc, "", "", bearer, problem},
			{"fax attempts id", "GET", "/api/v1/faxes/fax_" + bad.esc + "/attempts", "", "", bearer, problem},
			{"cancel id", "POST", "/api/v1/faxes/fax_" + bad.esc + "/cancel", "", "", bearer, problem},
			{"fax cursor", "GET", "/api/v1/faxes?starting_after=fax_" + bad.esc, "", "", bearer, problem},
			{"status filter", "GET", "/api/v1/faxes?status=" + bad.esc, "", "", bearer, problem},
			{"ledger cursor", "GET", "/api/v1/credits?starting_after=led_" + bad.esc, "", "", bearer, problem},
			{"upload token", "PUT", "/api/v1/uploads/upl_" + bad.esc, "application/pdf", "%PDF-1.4", nil, problem},
			{"cover text", "POST", "/api/v1/faxes", "application/json", `{"to":"+12125550100","documentId":"doc_x","cover":true,"coverText":"a` + j + `"}`, withIdem, problem},
			{"cover text, no content type", "POST", "/api/v1/faxes", "", `{"to":"+12125550100","documentId":"doc_x","cover":true,"coverText":"a` + j + `"}`, withIdem, problem},
			{"document id", "POST", "/api/v1/faxes", "application/json", `{"to":"+12125550100","documentId":"doc_` + j + `"}`, withIdem, problem},
			{"upload content type", "POST", "/api/v1/uploads", "application/json", `{"contentType":"application/pdf` + j + `"}`, bearer, problem},
			{"checkout pack", "POST", "/api/v1/credits/checkout", "application/json", `{"packId":"pack_` + j + `"}`, bearer, problem},
			{"machine quote", "POST", "/api/v1/machine/faxes/validate", "application/json", `{"to":"+1212555010` + j + `","pages":1}`, nil, problem},
			{"DCR metadata", "POST", "/api/auth/oauth2/register", "application/json", `{"client_name":"x` + j + `","redirect_uris":["http://127.0.0.1:5000/cb"],"token_endpoint_auth_method":"none"}`, nil, dcrErr},
			{"DCR software_id", "POST", "/api/auth/oauth2/register", "application/json", `{"software_id":"x` + j + `","redirect_uris":["http://127.0.0.1:5000/cb"],"token_endpoint_auth_method":"none"}`, nil, dcrErr},
			{"DCR contacts", "POST", "/api/auth/oauth2/register", "application/json", `{"contacts":["a` + j + `@example.com"],"redirect_uris":["http://127.0.0.1:5000/cb"],"token_endpoint_auth_method":"none"}`, nil, dcrErr},
			{"enrollment name", "POST", "/api/auth/agent/identity/manage", "application/json", `{"action":"enroll","name":"bot` + j + `","scopes":["fax:read"]}`, cookie, oauthErr},
			{"agent identity", "POST", "/api/auth/agent/identity", "application/json", `{"type":"anonymous","enrollment_token":"fxe_` + j + `"}`, nil, oauthErr},
			{"agent claim", "POST", "/api/auth/agent/identity/claim", "application/json", `{"claim_token":"x` + j + `","email":"text@example.com"}`, nil, oauthErr},
			{"token form", "POST", "/api/auth/oauth2/token", "application/x-www-form-urlencoded", "grant_type=urn%3Afaxhub%3Aagent-auth%3Agrant-type%3Aclaim&claim_token=x" + bad.esc, nil, oauthErr},
			{"revoke form", "POST", "/api/auth/oauth2/revoke", "application/x-www-form-urlencoded", "token=x" + bad.esc + "&token_type_hint=access_token&client_id=c", nil, oauthErr},
			{"host create name", "POST", "/api/auth/host/create", "application/json", `{"name":"h` + j + `","default_capabilities":[]}`, cookie, agentAuth},
			{"agent register", "POST", "/api/auth/agent/register", "application/json", `{"name":"a` + j + `","capabilities":["get_credits"]}`, nil, agentAuth},
			{"agent status id", "GET", "/api/auth/agent/status?agent_id=dag_" + bad.esc, "", "", nil, agentAuth},
			{"capability arguments", "POST", "/api/auth/capability/execute", "application/json", `{"capability":"get_fax_status","arguments":{"fax_id":"fax_` + j + `"}}`, nil, agentAuth},
			{"console enrollment name", "POST", "/console/agents", "application/x-www-form-urlencoded", "name=bot" + bad.esc + "&scope=fax%3Aread", cookie, problem},
			{"console path", "GET", "/console/approvals/apr_" + bad.esc, "", "", cookie, problem},
			{"console draft path", "GET", "/console/drafts/drf_" + bad.esc, "", "", cookie, problem},
			{"MCP tool arguments", "POST", "/mcp", "application/json", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_fax","arguments":{"faxId":"fax_` + j + `"}}}`, nil, jsonRPC},
			{"A2A skill arguments", "POST", "/a2a", "application/json", `{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":{"skill":"get_fax","arguments":{"faxId":"fax_` + j + `"}}}]}}}`, nil, jsonRPC},
		}
		if bad.esc == "%FF" {
			// Go's server refuses a NUL in any header itself; bytes above
			// 0x7F it lets through.
			cases = append(cases, struct {
				name, method, path, ctype, body string
				hdr                             http.Header
				want                            shape
			}{"Idempotency-Key", "POST", "/api/v1/faxes", "application/json", `{"to":"+12125550100","documentId":"doc_x"}`,
				http.Header{"Authorization": {"Bearer " + key}, "Idempotency-Key": {"k\xff"}}, problem})
		}
		for _, c := range cases {
			t.Run(bad.name+"/"+c.name, func(t *testing.T) {
				req, err := http.NewRequest(c.method, e.base+c.path, strings.NewReader(c.body))
				if err != nil {
					t.Fatal(err)
				}
				for k, v := range c.hdr {
					req.Header[k] = v
				}
				if c.ctype != "" {
					req.Header.Set("Content-Type", c.ctype)
				}
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer res.Body.Close()
				raw, _ := io.ReadAll(res.Body)
				if res.StatusCode != http.StatusBadRequest {
					t.Fatalf("status %d, want 400: %s", res.StatusCode, raw)
				}
				var m map[string]any
				if err := json.Unmarshal(raw, &m); err != nil {
					t.Fatalf("not JSON: %s", raw)
				}
				switch c.want {
				case problem:
					if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" || m["code"] != core.CodeInvalidRequest {
						t.Fatalf("want problem+json invalid_request, got %s %s", ct, raw)
					}
				case oauthErr:
					if m["error"] != "invalid_request" || m["error_description"] == "" {
						t.Fatalf("want OAuth invalid_request, got %s", raw)
					}
				case dcrErr:
					// RFC 7591 §3.2.2: registration refuses bad metadata
					// with invalid_client_metadata, as oauth's own checks do.
					if m["error"] != "invalid_client_metadata" || m["error_description"] == "" {
						t.Fatalf("want invalid_client_metadata, got %s", raw)
					}
				case agentAuth:
					if m["error"] != "invalid_request" || m["message"] == "" || res.Header.Get("Cache-Control") != "no-store" {
						t.Fatalf("want Agent Auth invalid_request, got %s", raw)
					}
				case jsonRPC:
					rpcErr, _ := m["error"].(map[string]any)
					if rpcErr == nil || rpcErr["code"] != float64(-32602) || m["id"] != float64(7) {
						t.Fatalf("want JSON-RPC -32602 for id 7, got %s", raw)
					}
				}
			})
		}
	}
	// An upload is bytes, whatever Content-Type it declares: its body is
	// not read as text (the token decides, here 403 for a made-up one).
	req, _ := http.NewRequest("PUT", e.base+"/api/v1/uploads/upl_madeup", strings.NewReader("{\"a\":\"\xff\u0000\"}"))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if bytes.Contains(raw, []byte("UTF-8")) || bytes.Contains(raw, []byte("NUL")) {
		t.Fatalf("an upload body was checked as text: %d %s", res.StatusCode, raw)
	}
	// The same places with good text still work: the guard refuses only
	// what it must.
	req, _ = http.NewRequest("GET", e.base+"/api/v1/faxes?status="+url.QueryEscape("queued"), nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("a valid list request: status %d", res.StatusCode)
	}
}

// TestStalledBodiesAreCut sends the first byte of a body to each endpoint
// that used to stay open past 150 s for a body trickled at 1 byte / 8 s,
// then nothing more. With a short configured deadline the server must
// answer or close the connection; the client's own 10 s read deadline is
// only a safety net that fails the test.
func TestStalledBodiesAreCut(t *testing.T) {
	e := newE2E(t, func(o *app.Options) {
		o.MachinePayments = true
		o.Body = web.BodyDeadlines{Body: 200 * time.Millisecond, StreamGrace: 200 * time.Millisecond, StreamMinRate: 1 << 20}
	})
	addr := strings.TrimPrefix(e.base, "http://")
	for _, c := range []struct{ method, path, ctype string }{
		{"POST", "/api/auth/oauth2/token", "application/x-www-form-urlencoded"},
		{"POST", "/api/auth/oauth2/register", "application/json"},
		{"POST", "/api/auth/agent/identity", "application/json"},
		{"POST", "/mcp", "application/json"},
		{"POST", "/api/v1/machine/faxes/validate", "application/json"},
		{"PUT", "/api/v1/uploads/upl_x", "application/pdf"},
	} {
		t.Run(c.path, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{",
				c.method, c.path, addr, c.ctype)
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			got, err := io.ReadAll(conn)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("the connection stayed open with a stalled body; read %q", got)
			}
			if len(got) > 0 && bytes.Contains(got, []byte(" 500 ")) {
				t.Fatalf("a stalled body is the client's fault, not a 500: %q", got)
			}
		})
	}
}

// lockedBuffer is a log sink safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestAccessLogPaths: the access log used to write whole 100 KB paths and
// the ids of test checkout links (which are capabilities: whoever has the
// link can pay).
func TestAccessLogPaths(t *testing.T) {
	var logs lockedBuffer
	e := newE2E(t, func(o *app.Options) {
		o.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	long := "/api/v1/faxes/" + strings.Repeat("a", 100_000)
	checkout := core.LinkTestCheckout.PathPrefix() + "chk_secretsecret"
	for _, p := range []string{long, checkout} {
		res, err := http.Get(e.base + p)
		if err != nil {
			t.Fatal(err)
		}
		// The whole answer has been sent, so the handler (and its log
		// line) is done.
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	var seen int
	for _, line := range strings.Split(logs.String(), "\n") {
		var rec struct{ Msg, Path string }
		if json.Unmarshal([]byte(line), &rec) != nil || rec.Msg != "http" {
			continue
		}
		seen++
		if len(rec.Path) > web.MaxLoggedPath+len("…") {
			t.Errorf("a %d-byte path in the access log", len(rec.Path))
		}
		if strings.Contains(rec.Path, "chk_secret") {
			t.Errorf("a checkout id in the access log: %s", rec.Path)
		}
	}
	if seen != 2 {
		t.Fatalf("%d access log lines, want 2:\n%.2000s", seen, logs.String())
	}
}

// TestAccessLogClientBehindProxies: with --trusted-proxies naming the
// peer, the log keys on the client X-Forwarded-For names; without it the
// header is ignored (anyone can send it).
func TestAccessLogClientBehindProxies(t *testing.T) {
	for _, c := range []struct{ trusted, want string }{
		{"", "127.0.0.1"},
		{"10.0.0.0/8", "127.0.0.1"},
		{"10.0.0.0/8, 127.0.0.1/32", "198.51.100.9"},
	} {
		var logs lockedBuffer
		e := newE2E(t, func(o *app.Options) {
			o.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
			o.TrustedProxies = c.trusted
		})
		req, _ := http.NewRequest("GET", e.base+"/api/v1/credits", nil)
		req.Header.Set("X-Forwarded-For", "6.6.6.6, 198.51.100.9")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		var rec struct{ Msg, Client string }
		for _, line := range strings.Split(logs.String(), "\n") {
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "http" {
				break
			}
		}
		if rec.Client != c.want {
			t.Errorf("trusted %q: client %q, want %q", c.trusted, rec.Client, c.want)
		}
	}
	if _, err := app.Open(t.Context(), app.Options{DataDir: t.TempDir(), TrustedProxies: "10.0.0.0/33"}); err == nil {
		t.Fatal("an invalid --trusted-proxies was accepted")
	}
}

// TestRequestIDsReachLogsAndProblems: every answer names its request, a
// problem+json body repeats it as requestId, and the access log line of
// that request carries it, so a user's error is found in the logs.
func TestRequestIDsReachLogsAndProblems(t *testing.T) {
	var logs lockedBuffer
	e := newE2E(t, func(o *app.Options) {
		o.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	req, _ := http.NewRequest(http.MethodGet, e.base+"/api/v1/faxes/fax_missing", nil)
	req.Header.Set("Authorization", "Bearer fxk_test_nosuchkey")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var problem map[string]any
	_ = json.NewDecoder(res.Body).Decode(&problem)
	res.Body.Close()
	id := res.Header.Get(web.HeaderRequestID)
	if !strings.HasPrefix(id, "req_") || problem["requestId"] != id {
		t.Fatalf("header %q, problem %v", id, problem)
	}
	found := false
	for _, line := range strings.Split(logs.String(), "\n") {
		var rec struct {
			Msg       string
			RequestID string `json:"request_id"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "http" && rec.RequestID == id {
			found = true
		}
	}
	if !found {
		t.Fatalf("no access log line with request_id %s:\n%.2000s", id, logs.String())
	}
}

// TestSlowBodiesAre408 sends part of a body to each kind of door and then
// stalls past a short body deadline. Each must answer 408 in its own error
// shape: host enrollment used to answer 500 ("it has been logged": the
// server had cancelled the request, and the rate limit read failed), /a2a
// 401 invalid_token (the token check met the cancelled context), others
// 400.
func TestSlowBodiesAre408(t *testing.T) {
	e := newE2E(t, func(o *app.Options) {
		o.MachinePayments = true
		o.Body = web.BodyDeadlines{Body: 300 * time.Millisecond, StreamGrace: 300 * time.Millisecond, StreamMinRate: 1 << 20}
	})
	ctx := t.Context()
	o, err := e.a.Svc.Accounts.CreateOwner(ctx, "slow@example.com", "Slow", true)
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := e.a.Svc.Accounts.CreateAPIKey(ctx, o.ID, core.ModeTest, "slow")
	if err != nil {
		t.Fatal(err)
	}
	// A real upload capability, so the PUT reads its (streamed) body.
	req, _ := http.NewRequest(http.MethodPost, e.base+"/api/v1/uploads", strings.NewReader(`{"contentType":"application/pdf"}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var up struct{ UploadURL string }
	_ = json.NewDecoder(res.Body).Decode(&up)
	res.Body.Close()
	upPath := strings.TrimPrefix(up.UploadURL, e.base)
	if !strings.HasPrefix(upPath, "/api/v1/uploads/") {
		t.Fatalf("upload: %d %q", res.StatusCode, up.UploadURL)
	}

	type shape int
	const (
		problem   shape = iota // problem+json request_timeout
		oauthErr               // {"error":"invalid_request"}
		agentAuth              // {"error":"request_timeout","message":…}
		jsonRPC                // JSON-RPC -32600
	)
	addr := strings.TrimPrefix(e.base, "http://")
	for _, c := range []struct {
		method, path, ctype, auth string
		want                      shape
	}{
		{"POST", "/api/auth/host/enroll", "application/json", "", agentAuth},
		{"POST", "/api/auth/agent/register", "application/json", "", agentAuth},
		{"POST", "/api/auth/oauth2/token", "application/x-www-form-urlencoded", "", oauthErr},
		{"POST", "/api/auth/oauth2/register", "application/json", "", oauthErr},
		{"POST", "/api/auth/agent/identity", "application/json", "", oauthErr},
		{"POST", "/mcp", "application/json", "", jsonRPC},
		{"POST", "/a2a", "application/json", "", jsonRPC},
		{"POST", "/api/v1/faxes", "application/json", "Bearer " + key, problem},
		{"POST", "/api/v1/machine/faxes/validate", "application/json", "", problem},
		{"PUT", upPath, "application/pdf", "", problem},
	} {
		t.Run(c.path, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			auth := ""
			if c.auth != "" {
				auth = "Authorization: " + c.auth + "\r\nIdempotency-Key: slow-1\r\n"
			}
			fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nAccept: application/json, text/event-stream\r\n%sContent-Length: 1000\r\n\r\n{",
				c.method, c.path, addr, c.ctype, auth)
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			res, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer to a stalled body: %v", err)
			}
			raw, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusRequestTimeout {
				t.Fatalf("status %d, want 408: %s", res.StatusCode, raw)
			}
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatalf("not JSON: %s", raw)
			}
			switch c.want {
			case problem:
				if res.Header.Get("Content-Type") != "application/problem+json" || m["code"] != core.CodeRequestTimeout {
					t.Fatalf("want problem+json request_timeout, got %s", raw)
				}
			case oauthErr:
				if m["error"] != core.CodeInvalidRequest || m["error_description"] == "" {
					t.Fatalf("want OAuth invalid_request, got %s", raw)
				}
			case agentAuth:
				if m["error"] != core.CodeRequestTimeout || m["message"] == "" {
					t.Fatalf("want Agent Auth request_timeout, got %s", raw)
				}
			case jsonRPC:
				rpcErr, _ := m["error"].(map[string]any)
				if m["jsonrpc"] != "2.0" || rpcErr == nil || rpcErr["code"] != float64(-32600) {
					t.Fatalf("want JSON-RPC -32600, got %s", raw)
				}
			}
		})
	}
}
