// Package mcp is faxhub's MCP server: Streamable HTTP at {base}/mcp on the
// official go-sdk, stateless (any replica answers any request), with OAuth
// bearer tokens verified by the core TokenVerifier. It is a thin mapping of
// tools onto core's feature services; every authorization goes through core.Authorize.
// See docs/mcp.md.
package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/core/web"
)

// Path is where the MCP endpoint is mounted; the resource (token audience)
// is BaseURL+Path.
const Path = "/mcp"

// MaxRequestBytes bounds one JSON-RPC request body (an inline upload of
// MaxInlineBytes fits with room to spare).
const MaxRequestBytes = 1 << 20

// MaxBatch bounds the messages of one JSON-RPC batch. Batches exist only
// up to protocol 2025-03-26 (later versions removed them, and go-sdk
// refuses them there); an unbounded batch lets one small request ask for
// thousands of responses.
const MaxBatch = 10

// MaxResponseBytes bounds one response: ten tools/list results fit many
// times over. A response that would exceed it is cut off and the
// connection closed rather than held in memory.
const MaxResponseBytes = 4 << 20

// Options configure the MCP server.
type Options struct {
	// BaseURL is the public origin without a trailing slash: the MCP
	// resource is BaseURL+"/mcp", the pages (upload, draft checkout) live
	// under it.
	BaseURL string
	// Enabled is --mcp-oauth: when false every request but server/discover
	// answers 503.
	Enabled bool
	// Version is reported as the server version.
	Version string
	Logger  *slog.Logger
}

// Handler is the MCP endpoint.
type Handler struct {
	svc      *services.Set
	verifier core.TokenVerifier
	opts     Options
	sdk      http.Handler
	server   *mcp.Server
	// urls is the router the server is registered on (Register): it
	// builds the URLs the tools and challenges hand out.
	urls *web.Router
}

// New builds the MCP endpoint for POST {base}/mcp.
func New(svc *services.Set, verifier core.TokenVerifier, opts Options) *Handler {
	opts.BaseURL = strings.TrimRight(opts.BaseURL, "/")
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Version == "" {
		opts.Version = "1.0.0"
	}
	h := &Handler{svc: svc, verifier: verifier, opts: opts}
	h.server = mcp.NewServer(&mcp.Implementation{Name: "faxhub", Title: "faxhub — send faxes", Version: opts.Version},
		&mcp.ServerOptions{Instructions: Instructions, Logger: opts.Logger,
			// The SDK answers prompts/list (with no prompts) whatever is
			// declared; declaring the capability keeps discover, initialize
			// and that answer telling one story. Stateless: no list-changed
			// notifications.
			Capabilities: &mcp.ServerCapabilities{
				// The SDK's default, kept while clients older than
				// 2026-07-28 (which deprecates logging) call logging/setLevel.
				//lint:ignore SA1019 still part of the protocol versions faxhub serves
				Logging: &mcp.LoggingCapabilities{},
				Prompts: &mcp.PromptCapabilities{},
				// The app's one resource (app.go); no list-changed or
				// subscriptions on a stateless server.
				Resources: &mcp.ResourceCapabilities{},
			}})
	h.addTools(h.server)
	h.sdk = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return h.server }, &mcp.StreamableHTTPOptions{
		Stateless: true, JSONResponse: true, Logger: opts.Logger,
		// The SDK's check would refuse a reverse proxy on this machine that
		// forwards the public host name; checkHostOrigin does the same job
		// knowing that name.
		DisableLocalhostProtection: true,
	})
	return h
}

// Register puts the MCP endpoint (POST /mcp; the handler answers every
// method on it) and the upload page on r, on the base origin. The page
// PUTs files to the API origin.
func (h *Handler) Register(r *web.Router) {
	h.urls = r
	g := r.Group("mcp", web.OriginBase)
	g.Handle(web.Route{Name: "mcp.endpoint", Methods: "POST", Path: Path, OwnMethods: true, Auth: web.AuthBearer}, h)
	registerUploadPage(g, r.Origin(web.OriginAPI))
	h.addApp(r.Origin(web.OriginAPI))
}

// Resource is the MCP resource identifier (the token audience).
func (h *Handler) Resource() string { return h.opts.BaseURL + Path }

// url is the absolute URL of a named route of the router the server is
// registered on.
func (h *Handler) url(name string, pairs ...string) (string, error) {
	if h.urls == nil {
		return "", errors.New("mcp: the server is not registered on a router")
	}
	return h.urls.URL(name, pairs...)
}

// resourceMetadataURL is the RFC 9728 document of the MCP resource, served
// by the authorization server (an empty string, logged, if it is not
// routed: the challenge still says the rest).
func (h *Handler) resourceMetadataURL() string {
	u, err := h.url("oauth.protectedResourceMCP")
	if err != nil {
		h.opts.Logger.Error("mcp: resource metadata URL", "err", err)
	}
	return u
}

// rpcPeek is what the gate needs from a JSON-RPC message.
type rpcPeek struct {
	Method string `json:"method"`
	Params struct {
		Name string `json:"name"`
	} `json:"params"`
}

// ServeHTTP authenticates, then hands the request to the go-sdk handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if msg := h.checkHostOrigin(r); msg != "" {
		h.problem(w, http.StatusForbidden, "invalid_origin", msg, "")
		return
	}
	if _, ok := web.CredentialInQuery(r); ok {
		h.problem(w, http.StatusBadRequest, core.CodeInvalidRequest,
			"credentials are never accepted in the query string; send an OAuth access token in the Authorization header (Bearer)", "")
		return
	}
	var peek rpcPeek
	if r.Method == http.MethodPost {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
		if web.IsBodyTimeout(err) {
			h.problem(w, http.StatusRequestTimeout, core.CodeRequestTimeout, core.AsError(web.BodyTimeoutError(err)).Message, "")
			return
		}
		if err != nil {
			h.problem(w, http.StatusRequestEntityTooLarge, core.CodeInvalidRequest,
				fmt.Sprintf("the request is larger than %d bytes; upload files with create_upload's uploadUrl instead of inline", MaxRequestBytes), "")
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if n, ok := batchLen(body); ok && n > MaxBatch {
			web.WriteJSONRPCError(w, nil, -32600, fmt.Sprintf("a JSON-RPC batch may hold at most %d messages (this one has %d); send them separately, or use protocol 2025-06-18 or later, which has no batches", MaxBatch, n))
			return
		}
		// Strict JSON, as at every other door: the SDK keeps the last of
		// duplicate names (a tool argument given twice).
		if err := web.CheckJSONDuplicates(body); err != nil {
			web.WriteJSONRPCInvalidParams(w, body, core.AsError(err).Message)
			return
		}
		// A batch (an array) never counts as discovery.
		_ = json.Unmarshal(body, &peek)
		if peek.Method == "server/discover" {
			h.sdk.ServeHTTP(w, r)
			return
		}
	}
	if !h.opts.Enabled {
		h.problem(w, http.StatusServiceUnavailable, "mcp_disabled",
			"the MCP server is turned off on this server (--mcp-oauth off); only server/discover is answered", "")
		return
	}
	p, refusal := web.AuthenticateBearer(r, h.verifier, web.BearerResource{
		Name: "the MCP server", URL: h.Resource(),
		Hint:       "discover the authorization server from resource_metadata, then send Authorization: Bearer <token>",
		APIKeyHint: "connect with OAuth (the chat app's sign-in flow)",
	})
	if refusal != nil {
		if refusal.Err != nil {
			if refusal.Status != http.StatusRequestTimeout { // else the request ended: nothing to log
				h.opts.Logger.ErrorContext(r.Context(), "mcp: verify token", "err", refusal.Err)
			}
			h.problem(w, refusal.Status, refusal.Error, refusal.Description, "")
			return
		}
		h.challenge(w, refusal.Status, refusal.Error, refusal.Description, "")
		return
	}
	// A single tools/call whose tool needs a scope the token lacks is
	// refused at the HTTP level (RFC 6750 insufficient_scope), so clients
	// can step up their authorization; the tool itself checks again.
	if peek.Method == "tools/call" {
		if op, ok := toolOps[peek.Params.Name]; ok {
			if err := core.Authorize(p, op); err != nil && core.ErrorKind(err) == core.KindForbidden && !h.ownerApproves(r.Context(), peek.Params.Name, p) {
				need := string(core.ScopeFor(op))
				h.challenge(w, http.StatusForbidden, "insufficient_scope",
					fmt.Sprintf("the tool %s needs the %s scope, which this token lacks; ask the owner to authorize it", peek.Params.Name, need), need)
				return
			}
		}
	}
	h.sdk.ServeHTTP(&cappedWriter{ResponseWriter: w, left: MaxResponseBytes}, r.WithContext(core.WithPrincipal(r.Context(), p)))
}

// ownerApproves reports whether the tool asks the owner's approval instead
// of needing the scope p lacks: send_fax of a chat app that may draft
// answers with the approval page, not with a step-up (docs/mcp.md).
func (h *Handler) ownerApproves(ctx context.Context, tool string, p core.Principal) bool {
	if tool != "send_fax" {
		return false
	}
	need, err := h.svc.Faxes.NeedsOwnerApproval(ctx, p)
	if err != nil {
		h.opts.Logger.ErrorContext(ctx, "mcp: read whether sends need approval", "err", err)
	}
	return need
}

// batchLen counts the messages of a JSON-RPC batch without decoding them;
// ok is false when body is not an array.
func batchLen(body []byte) (n int, ok bool) {
	body = bytes.TrimLeft(body, " \t\r\n")
	if len(body) == 0 || body[0] != '[' {
		return 0, false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if _, err := dec.Token(); err != nil {
		return 0, false
	}
	for dec.More() {
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return n, true
		}
		n++
		if n > MaxBatch {
			return n, true // enough to refuse; no need to count them all
		}
	}
	return n, true
}

// cappedWriter stops a response at a size bound: past it, writes fail (the
// SDK gives up on the response), so no response can grow without limit.
type cappedWriter struct {
	http.ResponseWriter
	left int
}

var errResponseTooLarge = errors.New("mcp: the response exceeds MaxResponseBytes")

func (c *cappedWriter) Write(b []byte) (int, error) {
	if len(b) > c.left {
		c.left = 0
		return 0, errResponseTooLarge
	}
	c.left -= len(b)
	return c.ResponseWriter.Write(b)
}

func (c *cappedWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

func (c *cappedWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// challenge answers 401/403 with the RFC 6750/9728 WWW-Authenticate header.
// scope defaults to every product scope.
func (h *Handler) challenge(w http.ResponseWriter, status int, errCode, desc, scope string) {
	if scope == "" {
		scope = core.JoinScopes(core.FaxScopes())
	}
	parts := []string{fmt.Sprintf("resource_metadata=%q", h.resourceMetadataURL()), fmt.Sprintf("scope=%q", scope)}
	if errCode != "" {
		parts = append(parts, fmt.Sprintf("error=%q", errCode), fmt.Sprintf("error_description=%q", strings.ReplaceAll(desc, `"`, "'")))
	}
	w.Header().Set("WWW-Authenticate", "Bearer "+strings.Join(parts, ", "))
	code := errCode
	if code == "" {
		code = core.CodeUnauthenticated
	}
	h.problem(w, status, code, desc, scope)
}

func (h *Handler) problem(w http.ResponseWriter, status int, code, detail, scope string) {
	p := web.Problem{Type: web.ProblemType(code), Title: http.StatusText(status), Status: status, Code: code, Detail: detail}
	if status == http.StatusForbidden && scope != "" {
		p.Fields = map[string]any{"required_scope": scope}
	}
	w.Header().Set("Cache-Control", "no-store")
	web.WriteProblem(w, p)
}

// checkHostOrigin is the DNS-rebinding guard the MCP transport spec asks
// for. A request that reached a loopback address must name this machine or
// the configured public host in Host (a rebinding page names its own
// domain; a reverse proxy here forwards the public name). A browser's
// Origin, when sent, must be the public origin (or, for a server whose
// public name is itself loopback, any loopback origin). It returns why a
// request is refused, or "".
func (h *Handler) checkHostOrigin(r *http.Request) string {
	base, err := url.Parse(h.opts.BaseURL)
	if err != nil {
		return ""
	}
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && local != nil && web.LoopbackHost(local.String()) {
		if !web.LoopbackHost(r.Host) && !strings.EqualFold(web.Hostname(r.Host), base.Hostname()) {
			return fmt.Sprintf("the Host %q is not this server's (%s): refused as a DNS-rebinding attempt", r.Host, base.Host)
		}
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		o, err := url.Parse(origin)
		switch {
		case err == nil && strings.EqualFold(o.Scheme+"://"+o.Host, base.Scheme+"://"+base.Host):
		case err == nil && web.LoopbackHost(o.Host) && web.LoopbackHost(base.Host):
		default:
			return fmt.Sprintf("the Origin %q is not this server's (%s://%s): browsers may call this endpoint only from its own origin", origin, base.Scheme, base.Host)
		}
	}
	return ""
}
