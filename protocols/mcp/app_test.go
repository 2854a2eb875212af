package mcp_test

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	mcpserver "github.com/faxhub/faxhub/protocols/mcp"
)

// uiMeta is a _meta.ui as MCP Apps (SEP-1865) reads it.
type uiMeta struct {
	UI struct {
		ResourceURI string `json:"resourceUri"`
		CSP         *struct {
			ConnectDomains  []string `json:"connectDomains"`
			ResourceDomains []string `json:"resourceDomains"`
		} `json:"csp"`
	} `json:"ui"`
}

func decodeMeta(t *testing.T, m mcp.Meta) uiMeta {
	t.Helper()
	raw, _ := json.Marshal(m)
	var u uiMeta
	if err := json.Unmarshal(raw, &u); err != nil {
		t.Fatalf("_meta %s: %v", raw, err)
	}
	return u
}

// TestAppResource: the app is listed and read as a ui:// resource with
// the MCP Apps mimeType, its CSP in _meta.ui naming only faxhub's API
// origin, and the page is the committed build, loading nothing from any
// origin (no src= or href= to a URL, no @import or url()).
func TestAppResource(t *testing.T) {
	e := newEnv(t, nil)
	o := e.owner("app@example.com")
	cs := e.connect(o.Token(t, allScopes, e.base+"/mcp"))
	api := e.a.Router().Origin("api")

	list, err := cs.ListResources(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Resources) != 1 || list.Resources[0].URI != mcpserver.AppURI || list.Resources[0].MIMEType != "text/html;profile=mcp-app" {
		t.Fatalf("resources/list = %+v", list.Resources)
	}
	checkCSP := func(where string, m mcp.Meta) {
		u := decodeMeta(t, m)
		if u.UI.CSP == nil || len(u.UI.CSP.ConnectDomains) != 1 || u.UI.CSP.ConnectDomains[0] != api ||
			len(u.UI.CSP.ResourceDomains) != 1 || u.UI.CSP.ResourceDomains[0] != api {
			t.Errorf("%s: _meta = %+v, want connectDomains and resourceDomains [%s]", where, m, api)
		}
	}
	checkCSP("resources/list", list.Resources[0].Meta)

	read, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: mcpserver.AppURI})
	if err != nil {
		t.Fatal(err)
	}
	if len(read.Contents) != 1 || read.Contents[0].MIMEType != "text/html;profile=mcp-app" || read.Contents[0].URI != mcpserver.AppURI {
		t.Fatalf("resources/read = %+v", read.Contents)
	}
	checkCSP("resources/read", read.Contents[0].Meta)
	page := read.Contents[0].Text
	built, err := os.ReadFile("app/fax-app.html")
	if err != nil {
		t.Fatal(err)
	}
	if page != string(built) || !strings.HasPrefix(page, "<!doctype html>") || !strings.Contains(page, "callServerTool") {
		t.Fatalf("the page served is not the committed build (%d bytes, file %d)", len(page), len(built))
	}
	// The markup (the inline script's body aside) names no URL to load,
	// and the style imports nothing.
	markup := regexp.MustCompile(`(?s)<script>.*?</script>`).ReplaceAllString(page, "<script></script>")
	if m := regexp.MustCompile(`(?i)<[a-z]+\b[^>]*\b(src|href|srcset|action|data)\s*=`).FindString(markup); m != "" {
		t.Errorf("the page's markup loads something: %q", m)
	}
	style := regexp.MustCompile(`(?s)<style>(.*?)</style>`).FindStringSubmatch(page)
	if style == nil || regexp.MustCompile(`(?i)@import|url\(`).MatchString(style[1]) {
		t.Errorf("the page's style is missing or loads something")
	}
	if _, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "ui://faxhub/other.html"}); err == nil {
		t.Error("reading an unknown ui:// resource succeeded")
	}
}

// TestToolMetadata: every tool has a title (its own and the
// annotations'), truthful hints and an output schema; the tools the app
// renders link it.
func TestToolMetadata(t *testing.T) {
	e := newEnv(t, nil)
	o := e.owner("meta@example.com")
	cs := e.connect(o.Token(t, allScopes, e.base+"/mcp"))
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	readOnly := regexp.MustCompile(`^(get|list|read|search|validate)_`)
	// Spending money or making a fax or number go away cannot be undone.
	destructive := map[string]bool{"send_fax": true, "send_fax_batch": true, "cancel_fax": true, "cancel_fax_batch": true}
	// Reaching a provider's number inventory or the telephone network.
	openWorld := map[string]bool{"send_fax": true, "send_fax_batch": true, "search_numbers": true, "buy_number": true, "create_credit_checkout": true}
	linked := map[string]bool{"create_upload": true, "create_fax_draft": true, "preview_fax": true, "send_fax": true, "get_fax_status": true}
	seen := 0
	for _, tl := range res.Tools {
		a := tl.Annotations
		if tl.Title == "" || a == nil || a.Title != tl.Title {
			t.Errorf("%s: title %q, annotations %+v", tl.Name, tl.Title, a)
			continue
		}
		if a.ReadOnlyHint != readOnly.MatchString(tl.Name) {
			t.Errorf("%s: readOnlyHint %v", tl.Name, a.ReadOnlyHint)
		}
		if !a.ReadOnlyHint && (a.DestructiveHint == nil || *a.DestructiveHint != destructive[tl.Name]) {
			t.Errorf("%s: destructiveHint %v, want %v", tl.Name, a.DestructiveHint, destructive[tl.Name])
		}
		if a.OpenWorldHint == nil || *a.OpenWorldHint != openWorld[tl.Name] {
			t.Errorf("%s: openWorldHint %v, want %v", tl.Name, a.OpenWorldHint, openWorld[tl.Name])
		}
		if destructive[tl.Name] && !a.IdempotentHint {
			t.Errorf("%s: a send or cancel is idempotent (by draft, key or state)", tl.Name)
		}
		if tl.OutputSchema == nil {
			t.Errorf("%s: no output schema", tl.Name)
		} else if s, _ := tl.OutputSchema.(map[string]any); s["type"] != "object" {
			t.Errorf("%s: output schema %v is not an object", tl.Name, tl.OutputSchema)
		}
		if got := decodeMeta(t, tl.Meta).UI.ResourceURI; got != map[bool]string{true: mcpserver.AppURI}[linked[tl.Name]] {
			t.Errorf("%s: _meta.ui.resourceUri = %q", tl.Name, got)
		}
		seen++
	}
	if seen != 21 {
		t.Errorf("%d tools checked, want all 21", seen)
	}
}
