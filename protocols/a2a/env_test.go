package a2a_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/faxhub/faxhub/internal/app"
	"github.com/faxhub/faxhub/internal/consoletest"
)

// env is a whole faxhub (internal/app's production wiring) on a loopback
// listener named localhost (passkeys need a host name), on SQLite or, with
// FAXHUB_TESTENV_POSTGRES, on PostgreSQL. Its API origin is the same
// listener under 127.0.0.1, so both origins can be asked for the card.
type env struct {
	t    *testing.T
	a    *app.App
	site *consoletest.Site
	base string
	api  string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	site := consoletest.Start(t, func(base, loopback string) app.Options {
		return app.Options{BaseURL: base, APIURL: loopback, DataDir: t.TempDir(), Database: consoletest.Database(t),
			Dev: true, MCPOAuth: true, SimTimeScale: 0, InsertOnly: true, Logger: consoletest.Logger(t)}
	})
	return &env{t: t, a: site.App, site: site, base: site.Base, api: site.App.Svc.Config().APIURL}
}

// owner is an account with a console session, signed in at the console
// origin only.
func (e *env) owner(email string) *consoletest.Owner {
	e.t.Helper()
	return e.site.Owner(e.t, email)
}

// headers adds fixed headers to every request of an http.Client.
type headers struct {
	h    http.Header
	base http.RoundTripper
}

func (hs headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range hs.h {
		r.Header[k] = v
	}
	return hs.base.RoundTrip(r)
}

// protoJSONCardParser parses a spec-shaped (ProtoJSON) card with a2a-go
// v2.4.0, which expects securityRequirements scopes as a bare list
// (a2aproject/a2a-go#430): it unwraps {"list": […]} and parses the rest
// unchanged.
func protoJSONCardParser(body []byte) (*a2a.AgentCard, error) {
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	unwrap := func(v any) {
		reqs, _ := v.([]any)
		for _, r := range reqs {
			schemes, _ := r.(map[string]any)["schemes"].(map[string]any)
			for k, s := range schemes {
				if l, ok := s.(map[string]any)["list"]; ok {
					schemes[k] = l
				}
			}
		}
	}
	unwrap(m["securityRequirements"])
	skills, _ := m["skills"].([]any)
	for _, s := range skills {
		unwrap(s.(map[string]any)["securityRequirements"])
	}
	b, _ := json.Marshal(m)
	return agentcard.DefaultCardParser(b)
}

// client is a2a-go's own client for the card's 1.0 interface, sending tok
// and the A2A-Extensions given.
func (e *env) client(tok string, extensions ...string) *a2aclient.Client {
	e.t.Helper()
	card, err := (&agentcard.Resolver{Client: http.DefaultClient, CardParser: protoJSONCardParser}).Resolve(e.t.Context(), e.base)
	if err != nil {
		e.t.Fatalf("resolve card: %v", err)
	}
	h := http.Header{}
	if tok != "" {
		h.Set("Authorization", "Bearer "+tok)
	}
	if len(extensions) > 0 {
		h.Set("A2A-Extensions", strings.Join(extensions, ","))
	}
	c, err := a2aclient.NewFromCard(e.t.Context(), card,
		a2aclient.WithJSONRPCTransport(&http.Client{Transport: headers{h: h, base: http.DefaultTransport}}))
	if err != nil {
		e.t.Fatalf("client: %v", err)
	}
	return c
}

// skillMsg is a 1.0 message with one data part calling a skill.
func skillMsg(skill string, args map[string]any) *a2a.SendMessageRequest {
	if args == nil {
		args = map[string]any{}
	}
	return &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart(map[string]any{"skill": skill, "arguments": args}))}
}

// call runs an immediate skill through the a2a-go client and returns the
// data of its answer.
func call(t *testing.T, c *a2aclient.Client, req *a2a.SendMessageRequest) map[string]any {
	t.Helper()
	res, err := c.SendMessage(t.Context(), req)
	return messageData(t, res, err)
}

// messageData returns the data of a Message result's single data part.
func messageData(t *testing.T, res a2a.SendMessageResult, err error) map[string]any {
	t.Helper()
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	m, ok := res.(*a2a.Message)
	if !ok {
		t.Fatalf("result is %T, want a message", res)
	}
	if len(m.Parts) != 1 {
		t.Fatalf("message has %d parts", len(m.Parts))
	}
	d, ok := m.Parts[0].Data().(map[string]any)
	if !ok {
		t.Fatalf("part is not data: %+v", m.Parts[0])
	}
	return d
}

func asTask(t *testing.T, res a2a.SendMessageResult, err error) *a2a.Task {
	t.Helper()
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("result is %T, want a task", res)
	}
	return task
}

// a2aErr checks err is an A2A error of sentinel whose message contains
// want, and returns its details.
func a2aErr(t *testing.T, what string, err error, sentinel error, want string) map[string]any {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error", what)
	}
	var e *a2a.Error
	if !errors.As(err, &e) || !errors.Is(err, sentinel) {
		t.Fatalf("%s: error %v (%T), want %v", what, err, err, sentinel)
	}
	if !strings.Contains(e.Message, want) {
		t.Fatalf("%s: message %q lacks %q", what, e.Message, want)
	}
	return e.Details
}

// rpc posts a raw JSON-RPC body; it returns the status, headers and the
// decoded response.
func (e *env) rpc(auth string, extra http.Header, body string) (int, http.Header, map[string]any) {
	e.t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, e.base+"/a2a", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	for k, v := range extra {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		e.t.Fatalf("response is not JSON (%d): %s", resp.StatusCode, b)
	}
	return resp.StatusCode, resp.Header, m
}

// rpcError returns the code and message of a JSON-RPC error response and
// its first data member (faxhub's details).
func rpcError(t *testing.T, m map[string]any) (int, string, map[string]any) {
	t.Helper()
	e, ok := m["error"].(map[string]any)
	if !ok {
		t.Fatalf("not an error: %v", m)
	}
	code, _ := e["code"].(float64)
	msg, _ := e["message"].(string)
	var details map[string]any
	if data, ok := e["data"].([]any); ok && len(data) > 0 {
		details, _ = data[0].(map[string]any)
	}
	return int(code), msg, details
}
