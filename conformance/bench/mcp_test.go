//go:build bench

package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/faxhub/faxhub/internal/consoletest"
)

const (
	mcpClients  = 16
	mcpDuration = 5 * time.Second
	mcpCalls    = 10_000
)

// benchMCP measures tools/call get_credits per second through faxhub's MCP
// server with a real OAuth token (verification, scope check, the core call)
// against a go-sdk server with one trivial tool and no auth, both stateless
// Streamable HTTP on loopback; and the faxhub process's heap at idle and
// after 10,000 calls.
func benchMCP(t *testing.T, rep *report) {
	site := serveApp(t, true)
	base := site.Base

	tok := oauthToken(t, site, base+"/mcp", "credits:read")
	runtime.GC()
	idle := heapMB()

	fx := loadMCP(t, base+"/mcp", tok, "get_credits")
	runtime.GC()
	after := heapMB()

	plain := httptest.NewServer(trivialMCPServer())
	defer plain.Close()
	bl := loadMCP(t, plain.URL, "", "ping")

	rep.add(fmt.Sprintf("mcp      tools/call get_credits, %d clients, %s", mcpClients, mcpDuration), "calls/s", fx, bl, ratioAtLeast(0.5), 0,
		"mcp: stateless Streamable HTTP with a real OAuth access token (hash lookup, audience and scope checks) and the credits query; "+
			"baseline: a go-sdk server with one trivial tool and no auth, same transport and client.")
	rep.add("mcp      server heap at idle (after start and one OAuth flow)", "MB", idle, nan, noTarget(), 1, "")
	rep.add(fmt.Sprintf("mcp      server heap after %d+ calls", mcpCalls), "MB", after, nan, noTarget(), 1,
		"mcp heap: runtime HeapInuse after a GC; the process also holds the benchmark clients.")
}

func heapMB() float64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapInuse) / (1 << 20)
}

// trivialMCPServer is the baseline: one tool returning a constant.
func trivialMCPServer() http.Handler {
	s := mcp.NewServer(&mcp.Implementation{Name: "baseline", Version: "1"}, nil)
	type out struct {
		OK bool `json:"ok"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "ping", Description: "answers ok"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, out, error) {
		return nil, out{OK: true}, nil
	})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
}

// loadMCP runs mcpClients sessions calling tool for mcpDuration (and at
// least mcpCalls calls in all) and returns calls per second.
func loadMCP(t *testing.T, endpoint, tok, tool string) float64 {
	ctx := t.Context()
	var sessions []*mcp.ClientSession
	for range mcpClients {
		c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: bearerRT{tok}},
			DisableStandaloneSSE: true, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatalf("connect %s: %v", endpoint, err)
		}
		defer cs.Close()
		sessions = append(sessions, cs)
	}
	var calls atomic.Int64
	var failed atomic.Value
	deadline := time.Now().Add(mcpDuration)
	start := time.Now()
	var wg sync.WaitGroup
	for _, cs := range sessions {
		wg.Go(func() {
			for time.Now().Before(deadline) || calls.Load() < mcpCalls {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
				if err != nil || res.IsError {
					failed.Store(fmt.Sprint(err, res))
					return
				}
				calls.Add(1)
			}
		})
	}
	wg.Wait()
	if f := failed.Load(); f != nil {
		t.Fatalf("tools/call %s failed: %v", tool, f)
	}
	return float64(calls.Load()) / time.Since(start).Seconds()
}

type bearerRT struct{ tok string }

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.tok != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.tok)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// oauthToken runs the chat-app OAuth flow (DCR, PKCE authorize for
// resource, the owner's consent as the console records it, code exchange;
// consoletest.Owner.Token) as a new owner and returns an access token with
// scopes.
func oauthToken(t *testing.T, site *consoletest.Site, resource string, scopes ...string) string {
	t.Helper()
	w := site.Owner(t, "bench@example.com")
	w.ClientName = "Bench Chat"
	return w.Token(t, scopes, resource)
}
