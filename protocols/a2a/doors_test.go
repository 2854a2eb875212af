package a2a_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core/web"
	"github.com/faxhub/faxhub/internal/app"
	"github.com/faxhub/faxhub/internal/consoletest"
)

// TestSlowBodyWithValidTokenIs408: a valid token with a body that stalls
// past its deadline used to be answered 401 invalid_token (the server had
// cancelled the request, and the token check failed on the cancelled
// context), which makes a client throw away a good token. It is 408 with
// a JSON-RPC error, never an authentication error.
func TestSlowBodyWithValidTokenIs408(t *testing.T) {
	site := consoletest.Start(t, func(base, loopback string) app.Options {
		return app.Options{BaseURL: base, APIURL: loopback, DataDir: t.TempDir(), Database: consoletest.Database(t),
			Dev: true, MCPOAuth: true, SimTimeScale: 0, InsertOnly: true, Logger: consoletest.Logger(t),
			Body: web.BodyDeadlines{Body: 300 * time.Millisecond}}
	})
	e := &env{t: t, a: site.App, site: site, base: site.Base, api: site.App.Svc.Config().APIURL}
	w := e.owner("slow@example.com")
	tok := w.Token(t, []string{"fax:read"}, e.base+"/a2a")
	// The token is good.
	if status, _, _ := e.rpc("Bearer "+tok, nil, `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"tsk_nope"}}`); status != http.StatusOK {
		t.Fatalf("GetTask with the token: %d", status)
	}
	addr := strings.TrimPrefix(e.base, "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /a2a HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAuthorization: Bearer %s\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":\"2.0\",", addr, tok)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	if res.StatusCode != http.StatusRequestTimeout || res.Header.Get("WWW-Authenticate") != "" {
		t.Fatalf("status %d (WWW-Authenticate %q), want 408 without a challenge: %s", res.StatusCode, res.Header.Get("WWW-Authenticate"), raw)
	}
	if code, _, _ := rpcError(t, m); code != -32600 {
		t.Fatalf("JSON-RPC code %d, want -32600: %s", code, raw)
	}
}

// TestDuplicateArgumentNamesRefused: a2a-go decodes a message into maps,
// which kept the last of duplicate names, so a skill argument given twice
// silently meant its second value; hostagent and machine payments refuse
// them. Strict JSON at every door: -32602 naming the member.
func TestDuplicateArgumentNamesRefused(t *testing.T) {
	e := newEnv(t)
	w := e.owner("dup@example.com")
	tok := w.Token(t, []string{"fax:read"}, e.base+"/a2a")
	for name, body := range map[string]string{
		"1.0 skill argument": `{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":{"skill":"get_fax","arguments":{"faxId":"fax_a","faxId":"fax_b"}}}]}}}`,
		"0.3 skill argument": `{"jsonrpc":"2.0","id":7,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"data","data":{"skill":"get_fax","arguments":{"faxId":"fax_a","faxId":"fax_b"}}}]}}}`,
		"skill name":         `{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":{"skill":"get_credits","skill":"get_fax","arguments":{}}}]}}}`,
		"envelope":           `{"jsonrpc":"2.0","id":7,"method":"GetTask","method":"SendMessage","params":{"id":"tsk_x"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			status, _, m := e.rpc("Bearer "+tok, nil, body)
			code, msg, _ := rpcError(t, m)
			if status != http.StatusBadRequest || code != -32602 || m["id"] != float64(7) {
				t.Fatalf("%d %d %q, want 400 -32602 for id 7", status, code, msg)
			}
			if !strings.Contains(msg, "twice") {
				t.Fatalf("the message does not name the member: %q", msg)
			}
		})
	}
	// The lone-surrogate rule holds here too (one rule at every door; it
	// used to become U+FFFD).
	status, _, m := e.rpc("Bearer "+tok, nil, `{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":{"skill":"get_fax","arguments":{"faxId":"fax_\ud800"}}}]}}}`)
	if code, msg, _ := rpcError(t, m); status != http.StatusBadRequest || code != -32602 || !strings.Contains(msg, "surrogate") {
		t.Fatalf("lone surrogate: %d %d %q", status, code, msg)
	}
}
