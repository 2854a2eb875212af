package mcp

import (
	"context"
	_ "embed"
	"net/url"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The MCP App (the io.modelcontextprotocol/ui extension, SEP-1865): one
// self-contained HTML page a host that supports Apps shows inside the
// chat, in a sandboxed frame, next to the result of the tools that link
// it (_meta.ui.resourceUri). It talks to faxhub only through the host's
// bridge (tools/call), so it holds no token. Hosts without Apps ignore
// the link and show the tool results, which keep uploadPageUrl.
const (
	AppURI      = "ui://faxhub/fax-app.html"
	AppMIMEType = "text/html;profile=mcp-app"
)

// appHTML is the built page: protocols/mcp/app/src bundled with the
// ext-apps App class by protocols/mcp/app/build.mjs (npm run in
// conformance/); the browser suite fails if it drifts from its source.
//
//go:embed app/fax-app.html
var appHTML string

// appTools are the tools whose results the app renders.
var appTools = map[string]bool{
	"create_upload": true, "create_fax_draft": true, "preview_fax": true,
	"send_fax": true, "get_fax_status": true,
}

// tool completes a tool's metadata before it is added: the title the
// annotations carry also as the tool's own title (hosts read either), and
// the app link on the tools the app renders.
func tool(t *mcp.Tool) *mcp.Tool {
	if t.Annotations != nil && t.Title == "" {
		t.Title = t.Annotations.Title
	}
	if appTools[t.Name] {
		t.Meta = mcp.Meta{"ui": map[string]any{"resourceUri": AppURI}}
	}
	return t
}

// appMeta is the resource's _meta.ui. The page loads no script, style or
// font from anywhere (all are inlined); it reaches out only for two
// things, both on faxhub's API origin: it PUTs the file to uploadUrl
// (connectDomains) and shows the page images preview_fax links to
// (resourceDomains: <img> loads of the signed, short-lived links, which
// carry no token of the chat app). Fetching the images as data: URLs
// through tool calls would need a tool that returns bytes to the model's
// context; the links are already capabilities of their own.
func appMeta(apiOrigin string) mcp.Meta {
	domains := []string{}
	if u, err := url.Parse(apiOrigin); err == nil && u.Scheme != "" && u.Host != "" {
		domains = append(domains, u.Scheme+"://"+u.Host)
	}
	return mcp.Meta{"ui": map[string]any{
		"csp":           map[string]any{"connectDomains": domains, "resourceDomains": domains},
		"prefersBorder": true,
	}}
}

// addApp adds the app's resource; apiOrigin is where uploads and signed
// links live (known once the handler is registered on a router).
func (h *Handler) addApp(apiOrigin string) {
	meta := appMeta(apiOrigin)
	h.server.AddResource(&mcp.Resource{URI: AppURI, Name: "fax-app", Title: "Send a fax",
		Description: "faxhub's app: upload a document, preview its pages and price, send it and follow it until delivered.",
		MIMEType:    AppMIMEType, Meta: meta},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			if req.Params.URI != AppURI {
				return nil, mcp.ResourceNotFoundError(req.Params.URI)
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
				{URI: AppURI, MIMEType: AppMIMEType, Text: appHTML, Meta: meta},
			}}, nil
		})
}
