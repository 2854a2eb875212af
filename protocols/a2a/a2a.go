// Package a2a is faxhub's A2A endpoint: JSON-RPC 2.0 at {base}/a2a over
// a2a-go's JSON-RPC transports (the 1.0 method names and the 0.3 ones,
// dispatched by method name), with OAuth bearer tokens verified by the core
// TokenVerifier and a hand-written A2A 1.0 agent card. Tasks live in core
// (their state is derived on every read, and streams follow them from the
// owner's event log), so any replica answers; this package parses a
// message, calls one core feature method and renders the result. See
// docs/a2a.md.
package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/core/web"
)

// Path is where the endpoint is mounted; the resource (token audience) is
// BaseURL+Path.
const Path = "/a2a"

// CardPath is the well-known agent card (A2A 1.0 §8.2).
const CardPath = "/.well-known/agent-card.json"

// MaxRequestBytes bounds one JSON-RPC request: a message with one data
// part (skill arguments or an AP2 mandate) is a few KiB; files never travel
// through A2A (create_upload gives an upload URL).
const MaxRequestBytes = 256 << 10

// Header names of A2A 1.0 §3.2 (and the 0.3 extensions header).
const (
	HeaderVersion          = "A2A-Version"
	HeaderExtensions       = "A2A-Extensions"
	HeaderLegacyExtensions = "X-A2A-Extensions"
)

// Extension URIs: AP2 v0.1 (and the URI its samples use, accepted for
// activation) and our own, which publishes each skill's argument schema.
const (
	ExtensionAP2       = "https://github.com/google-agentic-commerce/ap2/tree/v0.1"
	ExtensionAP2Sample = "https://github.com/google-agentic-commerce/ap2/v1"
	// ExtensionSkillArgumentsPath is appended to BaseURL.
	ExtensionSkillArgumentsPath = Path + "/extensions/skill-arguments/v1"
)

// Options configure the endpoint. The URLs the card and the answers name
// (the authorization server's, the upload page's) are those of the routes
// of the router the endpoint is registered on, found by name: this package
// imports no other adapter.
type Options struct {
	// BaseURL is the public origin without a trailing slash.
	BaseURL string
	// Version is the agent card's version.
	Version string
	// KeepAlive is how often an idle stream sends an SSE comment;
	// DefaultKeepAlive when zero, none when negative.
	KeepAlive time.Duration
	Logger    *slog.Logger
}

// Handler is the A2A endpoint (POST {base}/a2a) and the agent card.
type Handler struct {
	svc      *services.Set
	verifier core.TokenVerifier
	opts     Options
	v1, v03  http.Handler
	skills   []skill
	// urls is the router the endpoint is registered on (Register).
	urls *web.Router
	// card is the agent card, encoded on first use (its URLs are the
	// router's, complete once every adapter has registered).
	cardOnce sync.Once
	card     []byte
	cardErr  error
}

// New builds the endpoint.
func New(svc *services.Set, verifier core.TokenVerifier, opts Options) *Handler {
	opts.BaseURL = strings.TrimRight(opts.BaseURL, "/")
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Version == "" {
		opts.Version = "1.0.0"
	}
	if opts.KeepAlive == 0 {
		opts.KeepAlive = DefaultKeepAlive
	}
	h := &Handler{svc: svc, verifier: verifier, opts: opts, skills: skillTable(svc.Credits.Packs())}
	rh := &requestHandler{h: h}
	// a2a-go sends no keep-alive unless asked (a negative interval is none).
	keepAlive := a2asrv.WithTransportKeepAlive(opts.KeepAlive)
	h.v1 = a2asrv.NewJSONRPCHandler(rh, keepAlive)
	h.v03 = a2av0.NewJSONRPCHandler(rh, keepAlive)
	return h
}

// Register puts the A2A endpoint (POST /a2a; the handler answers every
// method on it, 405 as a JSON-RPC error) and the agent card on r, on the
// base origin.
func (h *Handler) Register(r *web.Router) {
	h.urls = r
	g := r.Group("a2a", web.OriginBase)
	g.Handle(web.Route{Name: "a2a.endpoint", Methods: "POST", Path: Path, OwnMethods: true, Auth: web.AuthBearer}, h)
	g.HandleFunc(web.Route{Name: "a2a.card", Methods: "GET", Path: CardPath, Auth: web.AuthNone}, h.ServeCard)
}

// Resource is the A2A resource identifier (the token audience).
func (h *Handler) Resource() string { return h.opts.BaseURL + Path }

// url is the absolute URL of a named route of the router the endpoint is
// registered on.
func (h *Handler) url(name string, pairs ...string) (string, error) {
	if h.urls == nil {
		return "", errors.New("a2a: the endpoint is not registered on a router")
	}
	return h.urls.URL(name, pairs...)
}

// resourceMetadataURL is the RFC 9728 document of the A2A resource, served
// by the authorization server (an empty string, logged, if it is not
// routed: the challenge still says the rest).
func (h *Handler) resourceMetadataURL() string {
	u, err := h.url("oauth.protectedResourceA2A")
	if err != nil {
		h.opts.Logger.Error("a2a: resource metadata URL", "err", err)
	}
	return u
}

func (h *Handler) skillArgumentsURI() string { return h.opts.BaseURL + ExtensionSkillArgumentsPath }

// The JSON-RPC method names of each protocol version, and those answered
// with a stream of server-sent events.
var (
	methodsV1 = []string{"SendMessage", "SendStreamingMessage", "GetTask", "SubscribeToTask", "CancelTask", "ListTasks",
		"GetTaskPushNotificationConfig", "CreateTaskPushNotificationConfig", "ListTaskPushNotificationConfigs",
		"DeleteTaskPushNotificationConfig", "GetExtendedAgentCard"}
	methodsV03 = []string{"message/send", "message/stream", "tasks/get", "tasks/resubscribe", "tasks/cancel",
		"tasks/pushNotificationConfig/get", "tasks/pushNotificationConfig/set", "tasks/pushNotificationConfig/list",
		"tasks/pushNotificationConfig/delete", "agent/getAuthenticatedExtendedCard"}
	methodsStreaming = []string{"SendStreamingMessage", "SubscribeToTask", "message/stream", "tasks/resubscribe"}
)

// ServeHTTP authenticates, checks the transport (size, batch, version,
// extensions) and hands the request to the a2a-go handler of its protocol
// version.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if r.Method != http.MethodPost {
		card, _ := h.url("a2a.card")
		w.Header().Set("Allow", http.MethodPost)
		writeRPCError(w, http.StatusMethodNotAllowed, nil, a2a.ErrInvalidRequest,
			"the A2A endpoint takes JSON-RPC 2.0 requests by POST; the agent card is at "+card, nil)
		return
	}
	if _, ok := web.CredentialInQuery(r); ok {
		writeRPCError(w, http.StatusBadRequest, nil, a2a.ErrInvalidRequest,
			"credentials are never accepted in the query string; send an OAuth access token in the Authorization header (Bearer)", nil)
		return
	}
	p, ok := h.authenticate(w, r)
	if !ok {
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
	if web.IsBodyTimeout(err) {
		writeRPCError(w, http.StatusRequestTimeout, nil, a2a.ErrInvalidRequest, core.AsError(web.BodyTimeoutError(err)).Message, map[string]any{"code": core.CodeRequestTimeout})
		return
	}
	if err != nil {
		writeRPCError(w, http.StatusRequestEntityTooLarge, nil, a2a.ErrInvalidRequest,
			fmt.Sprintf("the request is larger than %d bytes; files never travel through A2A: use create_upload's uploadUrl", MaxRequestBytes), nil)
		return
	}
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		writeRPCError(w, http.StatusBadRequest, nil, a2a.ErrInvalidRequest,
			"JSON-RPC batches are not accepted here; send one request per HTTP POST", nil)
		return
	}
	var peek struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	// Unmarshal checks the whole body is JSON before it decodes anything
	// (a *json.SyntaxError): one pass, not json.Valid's and then its own.
	if err := json.Unmarshal(body, &peek); err != nil {
		if _, ok := errors.AsType[*json.SyntaxError](err); ok {
			writeRPCError(w, http.StatusBadRequest, nil, a2a.ErrParseError, "the body is not JSON; send one JSON-RPC 2.0 request object", nil)
			return
		}
		writeRPCError(w, http.StatusBadRequest, nil, a2a.ErrInvalidRequest, "the body is not a JSON-RPC 2.0 request object (method must be a string)", nil)
		return
	}
	id := rpcID(peek.ID)
	// Strict JSON, as at every other door: a2a-go decodes the request into
	// maps, where a lone surrogate escape becomes U+FFFD and a duplicate
	// name keeps its last value, so both are refused on the raw bytes.
	if err := web.CheckJSONText(body); err != nil {
		writeRPCError(w, http.StatusBadRequest, id, a2a.ErrInvalidParams, core.AsError(err).Message, map[string]any{"code": core.CodeInvalidRequest})
		return
	}
	if err := web.CheckJSONDuplicates(body); err != nil {
		writeRPCError(w, http.StatusBadRequest, id, a2a.ErrInvalidParams, core.AsError(err).Message, map[string]any{"code": core.CodeInvalidRequest})
		return
	}
	if v := r.Header.Values(HeaderVersion); !versionSupported(v) {
		writeRPCError(w, http.StatusBadRequest, id, a2a.ErrVersionNotSupported,
			fmt.Sprintf("A2A-Version %q is not supported; send 1.0 (or 0.3, or no header for 0.3)", strings.Join(v, ",")),
			map[string]any{"supportedVersions": []string{"1.0", "0.3"}})
		return
	}
	active := h.activeExtensions(r)
	if len(active) > 0 {
		// Written before a2a-go writes the body.
		w.Header().Set(HeaderExtensions, strings.Join(active, ", "))
	}
	var next http.Handler
	switch {
	case slices.Contains(methodsV1, peek.Method):
		next = h.v1
	case slices.Contains(methodsV03, peek.Method):
		next = h.v03
	default:
		writeRPCError(w, http.StatusOK, id, a2a.ErrMethodNotFound,
			fmt.Sprintf("unknown method %q; this agent answers SendMessage, SendStreamingMessage, GetTask, SubscribeToTask and CancelTask "+
				"(0.3: message/send, message/stream, tasks/get, tasks/resubscribe, tasks/cancel)", peek.Method), nil)
		return
	}
	ctx := withCall(r.Context(), callInfo{extensions: active, v03: next == h.v03})
	r = r.WithContext(core.WithPrincipal(ctx, p))
	r.Body = io.NopCloser(bytes.NewReader(body))
	if slices.Contains(methodsStreaming, peek.Method) {
		w = flushWriter{w}
	}
	next.ServeHTTP(w, r)
}

// versionSupported reads A2A-Version: absent or empty means 0.3 (A2A 1.0
// §3.2.6); several values are refused rather than one picked.
func versionSupported(values []string) bool {
	switch len(values) {
	case 0:
		return true
	case 1:
		switch strings.TrimSpace(values[0]) {
		case "", "0.3", "1.0":
			return true
		}
	}
	return false
}

// activeExtensions splits the A2A-Extensions headers (comma lists, several
// headers allowed; X-A2A-Extensions from 0.3 clients too) and keeps the
// URIs this agent supports, in the order requested.
func (h *Handler) activeExtensions(r *http.Request) []string {
	supported := []string{ExtensionAP2, ExtensionAP2Sample, h.skillArgumentsURI()}
	var out []string
	for _, name := range []string{HeaderExtensions, HeaderLegacyExtensions} {
		for _, v := range r.Header.Values(name) {
			for _, uri := range strings.Split(v, ",") {
				uri = strings.TrimSpace(uri)
				if slices.Contains(supported, uri) && !slices.Contains(out, uri) {
					out = append(out, uri)
				}
			}
		}
	}
	return out
}

// callInfo is what the transport learned about a request that the request
// handler needs.
type callInfo struct {
	extensions []string
	// v03: the request used a 0.3 method name (its answer has 0.3 shapes).
	v03 bool
}

type callKey struct{}

func withCall(ctx context.Context, c callInfo) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

func callFrom(ctx context.Context) callInfo {
	c, _ := ctx.Value(callKey{}).(callInfo)
	return c
}

// ap2Active reports whether the request activated the AP2 extension.
func ap2Active(ctx context.Context) bool {
	ext := callFrom(ctx).extensions
	return slices.Contains(ext, ExtensionAP2) || slices.Contains(ext, ExtensionAP2Sample)
}

// authenticate verifies the bearer token for this resource; on failure it
// has answered 401 with the RFC 6750/9728 challenge and a JSON-RPC error.
func (h *Handler) authenticate(w http.ResponseWriter, r *http.Request) (core.Principal, bool) {
	p, refusal := web.AuthenticateBearer(r, h.verifier, web.BearerResource{
		Name: "the A2A endpoint", URL: h.Resource(),
		Hint:       "discover the authorization server from resource_metadata, get a token for the resource " + h.Resource() + ", then send Authorization: Bearer <token>",
		APIKeyHint: "get an OAuth access token for " + h.Resource(),
	})
	if refusal == nil {
		return p, true
	}
	if refusal.Status == http.StatusRequestTimeout {
		// The request ended under the check: not a token problem.
		writeRPCError(w, refusal.Status, nil, a2a.ErrInvalidRequest, refusal.Description, map[string]any{"code": core.CodeRequestTimeout})
		return core.Principal{}, false
	}
	if refusal.Err != nil {
		h.opts.Logger.ErrorContext(r.Context(), "a2a: verify token", "err", refusal.Err)
		writeRPCError(w, refusal.Status, nil, a2a.ErrInternalError, refusal.Description, nil)
		return core.Principal{}, false
	}
	h.challenge(w, refusal.Error, refusal.Description)
	return core.Principal{}, false
}

// challenge answers 401 with WWW-Authenticate and a JSON-RPC error body.
func (h *Handler) challenge(w http.ResponseWriter, errCode, desc string) {
	parts := []string{fmt.Sprintf("resource_metadata=%q", h.resourceMetadataURL())}
	if errCode != "" {
		parts = append(parts, fmt.Sprintf("error=%q", errCode), fmt.Sprintf("error_description=%q", strings.ReplaceAll(desc, `"`, "'")))
	}
	w.Header().Set("WWW-Authenticate", "Bearer "+strings.Join(parts, ", "))
	status := http.StatusUnauthorized
	if errCode == "invalid_request" {
		status = http.StatusBadRequest
	}
	writeRPCError(w, status, nil, a2a.ErrUnauthenticated, desc, map[string]any{"resourceMetadata": h.resourceMetadataURL()})
}

// ServeCard serves the agent card (GET, no token).
func (h *Handler) ServeCard(w http.ResponseWriter, r *http.Request) {
	card, err := h.cardJSON()
	if err != nil {
		h.opts.Logger.ErrorContext(r.Context(), "a2a: agent card", "err", err)
		http.Error(w, "the agent card could not be built", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.Header().Set("Access-Control-Allow-Origin", "*")
	_, _ = w.Write(card)
}

// cardJSON is the encoded card, built once.
func (h *Handler) cardJSON() ([]byte, error) {
	h.cardOnce.Do(func() {
		c, err := h.Card()
		if err == nil {
			h.card, err = json.Marshal(c)
		}
		h.cardErr = err
	})
	return h.card, h.cardErr
}
