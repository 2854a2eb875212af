package a2a_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	a2aserver "github.com/faxhub/faxhub/protocols/a2a"
)

// The transport: version header, batches, size, text, methods that are not
// offered, and the extensions echo.
func TestTransport(t *testing.T) {
	e := newEnv(t)
	w := e.owner("transport@example.com")
	auth := "Bearer " + w.Token(t, []string{"credits:read"}, e.base+"/a2a")
	credits := `{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"data":{"skill":"get_credits","arguments":{}}}]}}}`
	credits03 := `{"jsonrpc":"2.0","id":"x","method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"data","data":{"skill":"get_credits","arguments":{}}}]}}}`

	for _, c := range []struct {
		name    string
		version []string
		body    string
		code    int // 0: success
	}{
		{"1.0", []string{"1.0"}, credits, 0},
		{"no version header (0.3)", nil, credits03, 0},
		{"empty version (0.3)", []string{""}, credits03, 0},
		{"0.3", []string{"0.3"}, credits03, 0},
		{"1.0 names without a version header", nil, credits, 0},
		{"an unknown version", []string{"2.0"}, credits, -32009},
		{"two versions", []string{"1.0", "0.3"}, credits, -32009},
	} {
		h := http.Header{}
		if c.version != nil {
			h["A2A-Version"] = c.version
		}
		status, _, body := e.rpc(auth, h, c.body)
		if c.code == 0 {
			if status != 200 || body["result"] == nil {
				t.Errorf("%s: %d %v", c.name, status, body)
			}
			continue
		}
		if code, msg, _ := rpcError(t, body); code != c.code || !strings.Contains(msg, "A2A-Version") {
			t.Errorf("%s: %d %v", c.name, status, body)
		}
	}
	// The 1.0 answer is a 1.0 message; the 0.3 one a 0.3 message.
	_, _, body := e.rpc(auth, http.Header{"A2A-Version": {"1.0"}}, credits)
	if m, ok := body["result"].(map[string]any)["message"].(map[string]any); !ok || m["role"] != "ROLE_AGENT" {
		t.Fatalf("1.0 result %v", body)
	}
	_, _, body = e.rpc(auth, nil, credits03)
	if r := body["result"].(map[string]any); r["kind"] != "message" || r["role"] != "agent" || r["parts"].([]any)[0].(map[string]any)["kind"] != "data" {
		t.Fatalf("0.3 result %v", body)
	}

	for _, c := range []struct {
		name, body string
		status     int
		code       int
		want       string
	}{
		{"a batch", "[" + credits + "]", 400, -32600, "batches"},
		{"not JSON", "{", 400, -32700, "not JSON"},
		{"not a request object", `{"jsonrpc":"2.0","id":1,"method":5}`, 400, -32600, "request object"},
		{"a JSON string", `"SendMessage"`, 400, -32600, "request object"},
		{"ListTasks", `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}`, 200, -32004, "ListTasks"},
		{"push config", `{"jsonrpc":"2.0","id":1,"method":"GetTaskPushNotificationConfig","params":{"taskId":"tsk_x","id":"c"}}`, 200, -31403, "fax:read"},
		{"push config (0.3)", `{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"tsk_x","pushNotificationConfig":{"url":"https://x.example"}}}`, 200, -31403, "fax:read"},
		{"extended card", `{"jsonrpc":"2.0","id":1,"method":"GetExtendedAgentCard","params":{}}`, 200, -32007, "extended card"},
		{"an unknown method", `{"jsonrpc":"2.0","id":1,"method":"tasks/list","params":{}}`, 200, -32601, "SendMessage"},
		{"a push config in SendMessage", strings.Replace(credits, `"params":{`, `"params":{"configuration":{"taskPushNotificationConfig":{"url":"https://x.example"}},`, 1), 200, -32602, "starts or continues a task"},
	} {
		status, _, body := e.rpc(auth, http.Header{"A2A-Version": {"1.0"}}, c.body)
		code, msg, _ := rpcError(t, body)
		if status != c.status || code != c.code || !strings.Contains(msg, c.want) {
			t.Errorf("%s: %d %d %q, want %d %d %q", c.name, status, code, msg, c.status, c.code, c.want)
		}
	}

	// A body over the bound, invalid UTF-8 and a GET.
	big := strings.Replace(credits, `"arguments":{}`, `"arguments":{"pad":"`+strings.Repeat("x", a2aserver.MaxRequestBytes)+`"}`, 1)
	status, _, body := e.rpc(auth, nil, big)
	if code, _, _ := rpcError(t, body); status != 413 || code != -32600 {
		t.Fatalf("big body: %d %v", status, code)
	}
	status, _, body = e.rpc(auth, nil, strings.Replace(credits, "get_credits", "get_\xffcredits", 1))
	if code, _, _ := rpcError(t, body); status != 400 || code != -32602 || body["id"] != float64(7) {
		t.Fatalf("invalid UTF-8: %d %v", status, body)
	}
	req, _ := http.NewRequest(http.MethodGet, e.base+"/a2a", nil)
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 405 || !bytes.Contains(b, []byte("agent-card.json")) {
		t.Fatalf("GET /a2a: %d %s", resp.StatusCode, b)
	}

	// Extensions: comma lists and several headers, trimmed; only the
	// supported ones are echoed, once each.
	skillArgs := e.base + a2aserver.ExtensionSkillArgumentsPath
	for _, c := range []struct {
		name string
		h    http.Header
		want string
	}{
		{"none", nil, ""},
		{"an unknown one", http.Header{"A2A-Extensions": {"https://x.example/ext"}}, ""},
		{"a comma list", http.Header{"A2A-Extensions": {" https://x.example/ext , " + a2aserver.ExtensionAP2 + ",  " + skillArgs}}, a2aserver.ExtensionAP2 + ", " + skillArgs},
		{"several headers", http.Header{"A2A-Extensions": {a2aserver.ExtensionAP2Sample, a2aserver.ExtensionAP2Sample + "," + skillArgs}}, a2aserver.ExtensionAP2Sample + ", " + skillArgs},
		{"the 0.3 header", http.Header{"X-A2A-Extensions": {a2aserver.ExtensionAP2}}, a2aserver.ExtensionAP2},
	} {
		_, h, body := e.rpc(auth, c.h, credits)
		if got := h.Get("A2A-Extensions"); got != c.want || body["result"] == nil {
			t.Errorf("%s: echoed %q, want %q (%v)", c.name, got, c.want, body)
		}
	}
}
