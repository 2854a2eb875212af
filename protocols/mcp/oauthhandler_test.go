package mcp_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/internal/consoletest"
)

// TestGoSDKOAuthHandler connects with the go-sdk client's own OAuth
// handler, which knows only {base}/mcp: it reads the 401 challenge, fetches
// the protected resource and authorization server metadata, registers
// dynamically, runs PKCE, and exchanges the code. The "browser" step (the
// AuthorizationCodeFetcher) is the signed-in owner consenting, decided as
// the console does.
func TestGoSDKOAuthHandler(t *testing.T) {
	e := newEnv(t, nil)
	owner := e.owner("sdk@example.com")
	if _, err := e.a.Svc.Credits.Grant(t.Context(), owner.Account.ID, core.ModeTest, 5*core.MicrosPerDollar, "test"); err != nil {
		t.Fatal(err)
	}
	consents := 0
	fetch := func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		code, loc, body := e.browse(http.MethodGet, args.URL, owner.Cookie(), nil)
		if code != http.StatusSeeOther || loc == nil || !strings.HasPrefix(loc.Path, "/console/approvals/") {
			return nil, fmt.Errorf("authorize: %d %v %s", code, loc, body)
		}
		id := strings.TrimPrefix(loc.Path, "/console/approvals/")
		apr, err := e.a.Svc.Approvals.Get(ctx, owner.Account.ID, id)
		if err != nil {
			return nil, err
		}
		if _, err := e.a.Svc.Approvals.Decide(ctx, owner.Account.ID, id, approvals.Decision{Approve: true, BindingHash: apr.BindingHash}); err != nil {
			return nil, err
		}
		consents++
		code, loc, body = e.browse(http.MethodGet, loc.Query().Get("return"), owner.Cookie(), nil)
		if code != http.StatusSeeOther || loc == nil {
			return nil, fmt.Errorf("resume: %d %v %s", code, loc, body)
		}
		q := loc.Query()
		return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
	}
	h, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			ClientName: "go-sdk chat", RedirectURIs: []string{consoletest.RedirectURI},
			GrantTypes: []string{"authorization_code", "refresh_token"}, TokenEndpointAuthMethod: "none",
		}},
		RedirectURL:              consoletest.RedirectURI,
		AuthorizationCodeFetcher: fetch,
		RequestRefreshToken:      true,
	})
	if err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-chat", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{
		Endpoint: e.base + "/mcp", OAuthHandler: h, DisableStandaloneSSE: true, MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatalf("connect with the OAuth handler: %v", err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil || len(tools.Tools) == 0 {
		t.Fatalf("tools/list: %v (%d tools)", err, len(tools.Tools))
	}
	var credits map[string]any
	if msg := call(t, cs, "get_credits", map[string]any{}, &credits); msg != "" {
		t.Fatalf("get_credits: %s", msg)
	}
	if credits["balance"] != "5.00" || consents != 1 {
		t.Fatalf("credits %v after %d consents", credits, consents)
	}
}

// Older clients start with initialize and name their protocol version; the
// server answers in that version from 2025-03-26 on.
func TestInitializeOlderProtocolVersions(t *testing.T) {
	e := newEnv(t, nil)
	owner := e.owner("old@example.com")
	tok := owner.Token(t, []string{"fax:read"}, e.base+"/mcp")
	for _, v := range []string{"2025-03-26", "2025-06-18", "2025-11-25"} {
		t.Run(v, func(t *testing.T) {
			body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + v +
				`","capabilities":{},"clientInfo":{"name":"old","version":"1"}}}`
			resp, out := rawPost(t, e.base+"/mcp", "Bearer "+tok, body)
			if resp.StatusCode != http.StatusOK || !strings.Contains(out, `"protocolVersion":"`+v+`"`) {
				t.Fatalf("initialize %s: %d %s", v, resp.StatusCode, out)
			}
		})
	}
}
