// Package telnyx receives Telnyx's signed webhook events (POST
// /webhooks/telnyx): it verifies their Ed25519 signature and timestamp and
// turns each fax, received fax and number order event into a core call.
// The Telnyx client (faxes out, numbers) is core/provider/telnyx.
package telnyx

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/inbox"
	"github.com/faxhub/faxhub/core/numbers"
	provider "github.com/faxhub/faxhub/core/provider/telnyx"
	"github.com/faxhub/faxhub/core/web"
)

// WebhookPath is where Telnyx posts events (the fax application's and the
// number orders' webhook URL is {API origin}/webhooks/telnyx).
const WebhookPath = "/webhooks/telnyx"

// Signature headers of a Telnyx webhook.
const (
	HeaderSignature = "Telnyx-Signature-Ed25519"
	HeaderTimestamp = "Telnyx-Timestamp"
)

// Defaults of WebhookConfig.
const (
	DefaultTolerance = 5 * time.Minute
	DefaultMaxBody   = 1 << 20
)

// Error codes of the webhook's refusals (problem+json "code").
const (
	CodeInvalidSignature = "invalid_signature"
	CodeStaleTimestamp   = "stale_timestamp"
	CodeWebhookTooLarge  = "webhook_too_large"
)

// Register puts POST WebhookPath on r (API origin), served by h: the
// webhook, or what the server answers instead when Telnyx is not
// configured. h is given every method (the webhook refuses the others with
// a problem).
func Register(r *web.Router, h http.Handler) {
	r.Group("webhooks", web.OriginAPI).Handle(web.Route{
		Name: "webhooks.telnyx", Methods: "POST", Path: WebhookPath, OwnMethods: true, Auth: web.AuthSignature,
	}, h)
}

// What the webhook tells each feature. Duplicated and out-of-order events
// are harmless there: a final attempt ignores later reports, a received fax
// is unique by its provider reference, a number order's outcome is
// recorded once.
type (
	// Outcomes records the end of a fax attempt.
	Outcomes interface {
		RecordProviderOutcome(ctx context.Context, faxID, attemptID string, res faxes.ProviderResult) error
	}
	// NumberOrders records the outcome of a number order.
	NumberOrders interface {
		RecordOrder(ctx context.Context, provider, orderRef string, res numbers.OrderResult) error
	}
	// Receiver records a fax received on an owner's number.
	Receiver interface {
		ReceiveFax(ctx context.Context, n inbox.InboundNotice) (*inbox.InboundFax, error)
	}
)

// WebhookConfig configures the webhook.
type WebhookConfig struct {
	// PublicKey is the account's webhook signing key (Mission Control,
	// Keys & Credentials, Public Key).
	PublicKey ed25519.PublicKey
	Faxes     Outcomes
	Numbers   NumberOrders
	Inbox     Receiver
	Now       func() time.Time
	// Tolerance is how far the signed timestamp may be from now, either
	// way (default 5 minutes, Telnyx's own).
	Tolerance time.Duration
	// MaxBody bounds an event's body (default 1 MiB).
	MaxBody int64
	Logger  *slog.Logger
}

type webhook struct{ cfg WebhookConfig }

// NewWebhook returns the handler of POST WebhookPath. It panics without a
// valid public key or a sink: that is a wiring mistake, found at start.
func NewWebhook(cfg WebhookConfig) http.Handler {
	if len(cfg.PublicKey) != ed25519.PublicKeySize || cfg.Faxes == nil || cfg.Numbers == nil || cfg.Inbox == nil {
		panic("telnyx: NewWebhook needs an Ed25519 public key and what to tell faxes, numbers and the inbox")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Tolerance <= 0 {
		cfg.Tolerance = DefaultTolerance
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &webhook{cfg: cfg}
}

// event is a Telnyx webhook: {"data":{event_type,id,occurred_at,payload}}.
type event struct {
	Data struct {
		EventType  string          `json:"event_type"`
		ID         string          `json:"id"`
		OccurredAt time.Time       `json:"occurred_at"`
		Payload    json.RawMessage `json:"payload"`
	} `json:"data"`
}

// faxPayload is the payload of the fax.* events.
type faxPayload struct {
	FaxID            string `json:"fax_id"`
	Direction        string `json:"direction"`
	From             string `json:"from"`
	To               string `json:"to"`
	MediaURL         string `json:"media_url"`
	PageCount        int    `json:"page_count"`
	CallDurationSecs int    `json:"call_duration_secs"`
	Status           string `json:"status"`
	FailureReason    string `json:"failure_reason"`
	ClientState      string `json:"client_state"`
}

func refuse(w http.ResponseWriter, status int, code, detail string) {
	web.WriteProblem(w, web.Problem{Type: web.ProblemType(code), Title: http.StatusText(status), Status: status, Code: code, Detail: detail})
}

// ServeHTTP verifies and acts on one event. A refused event (too large,
// unsigned, signed with another key or at another time) changes nothing.
// A verified one answers 200 once core committed what it decided, or when
// core says retrying cannot help (a fax or order that is not ours, a
// number that does not receive); anything else answers 500 so Telnyx
// delivers it again.
func (h *webhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		refuse(w, http.StatusMethodNotAllowed, core.CodeMethodNotAllowed, "Telnyx events are POSTed")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			refuse(w, http.StatusRequestEntityTooLarge, CodeWebhookTooLarge, "the event body is larger than "+strconv.FormatInt(h.cfg.MaxBody, 10)+" bytes")
			return
		}
		refuse(w, http.StatusBadRequest, core.CodeInvalidRequest, "the event body could not be read")
		return
	}
	if code, detail := h.verify(r.Header, body); code != "" {
		h.cfg.Logger.WarnContext(r.Context(), "telnyx webhook refused", "code", code, "reason", detail)
		refuse(w, http.StatusUnauthorized, code, detail)
		return
	}
	var ev event
	if err := json.Unmarshal(body, &ev); err != nil || ev.Data.EventType == "" {
		refuse(w, http.StatusBadRequest, core.CodeInvalidRequest, "the body is not a Telnyx event ({\"data\":{\"event_type\":…}})")
		return
	}
	log := h.cfg.Logger.With("event", cut(ev.Data.ID, 64), "type", cut(ev.Data.EventType, 64))
	outcome, err := h.handle(r.Context(), ev)
	switch kind := core.ErrorKind(err); {
	case err == nil:
		log.InfoContext(r.Context(), "telnyx event", "outcome", outcome)
	case kind == core.KindNotFound || kind == core.KindConflict || kind == core.KindInvalid ||
		kind == core.KindUnprocessable || kind == core.KindGone:
		outcome = "refused: " + core.AsError(err).Message
		log.WarnContext(r.Context(), "telnyx event not applied (retrying cannot help)", "code", core.ErrorCode(err), "err", err)
	default:
		log.ErrorContext(r.Context(), "telnyx event failed; Telnyx will retry", "err", err)
		web.WriteError(w, r, h.cfg.Logger, err)
		return
	}
	web.WriteJSON(w, http.StatusOK, map[string]any{"received": true, "outcome": outcome})
}

// verify checks the Ed25519 signature over "{timestamp}|{body}" and the
// timestamp's freshness; it returns a refusal code and why, or "".
func (h *webhook) verify(hdr http.Header, body []byte) (code, detail string) {
	sig64, ts := hdr.Get(HeaderSignature), hdr.Get(HeaderTimestamp)
	if sig64 == "" || ts == "" {
		return CodeInvalidSignature, "the " + HeaderSignature + " and " + HeaderTimestamp + " headers are required"
	}
	sig, err := base64.StdEncoding.DecodeString(sig64)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return CodeInvalidSignature, "the signature is not a base64 Ed25519 signature"
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(ts) > 12 {
		return CodeInvalidSignature, "the timestamp is not Unix seconds"
	}
	msg := make([]byte, 0, len(ts)+1+len(body))
	msg = append(append(append(msg, ts...), '|'), body...)
	if !ed25519.Verify(h.cfg.PublicKey, msg, sig) {
		return CodeInvalidSignature, "the signature does not verify this timestamp and body with the configured public key"
	}
	if d := h.cfg.Now().Sub(time.Unix(sec, 0)); d > h.cfg.Tolerance || d < -h.cfg.Tolerance {
		return CodeStaleTimestamp, "the signed timestamp is more than " + h.cfg.Tolerance.String() + " from now"
	}
	return "", ""
}

// handle translates one verified event into a core call.
func (h *webhook) handle(ctx context.Context, ev event) (string, error) {
	typ := ev.Data.EventType
	switch {
	case typ == "fax.delivered" || typ == "fax.failed":
		var p faxPayload
		if err := json.Unmarshal(ev.Data.Payload, &p); err != nil {
			return "", core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the fax in the event could not be read")
		}
		faxID, attemptID, ok := provider.ParseClientState(p.ClientState)
		if !ok {
			return "ignored: not a faxhub fax", nil
		}
		res := outcome(typ, p)
		if err := h.cfg.Faxes.RecordProviderOutcome(ctx, faxID, attemptID, res); err != nil {
			return "", err
		}
		return string(res.Status) + " " + faxID, nil
	case typ == "fax.received":
		var p faxPayload
		if err := json.Unmarshal(ev.Data.Payload, &p); err != nil {
			return "", core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the fax in the event could not be read")
		}
		if p.FaxID == "" || p.MediaURL == "" || p.To == "" {
			return "", core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "a received fax needs fax_id, to and media_url")
		}
		at := ev.Data.OccurredAt
		if at.IsZero() {
			at = h.cfg.Now()
		}
		f, err := h.cfg.Inbox.ReceiveFax(ctx, inbox.InboundNotice{
			Provider: provider.Name, ProviderRef: p.FaxID, To: p.To, From: p.From, MediaURL: p.MediaURL,
			Pages: max(p.PageCount, 0), ReceivedAt: at,
		})
		if err != nil {
			return "", err
		}
		if f == nil {
			return "received", nil
		}
		return "received " + f.ID, nil
	case typ == "number_order.complete" || typ == "number_order.status_update":
		var o provider.NumberOrder
		if err := json.Unmarshal(ev.Data.Payload, &o); err != nil || o.ID == "" {
			return "", core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the number order in the event could not be read")
		}
		res := o.Result()
		if res.Status == numbers.Pending {
			return "waiting: order " + cut(o.Status, 30), nil
		}
		if err := h.cfg.Numbers.RecordOrder(ctx, provider.Name, o.ID, res); err != nil {
			return "", err
		}
		return string(res.Status) + " order " + o.ID, nil
	case strings.HasPrefix(typ, "fax."):
		// fax.queued, fax.media.processed, fax.sending.started: core's
		// attempt is sending already.
		return "ignored: progress", nil
	}
	return "ignored: event type not used", nil
}

// outcome maps a fax.delivered or fax.failed payload to core's result.
func outcome(typ string, p faxPayload) faxes.ProviderResult {
	res := faxes.ProviderResult{
		ProviderRef: p.FaxID, PagesSent: max(p.PageCount, 0),
		Duration: time.Duration(max(p.CallDurationSecs, 0)) * time.Second,
	}
	if typ == "fax.delivered" {
		res.Status = faxes.AttemptDelivered
		return res
	}
	res.Status = faxes.AttemptFailed
	res.FailureReason = cut(p.FailureReason, 200)
	res.FailureCode, res.Retryable = FailureCode(p.FailureReason)
	if res.PagesSent > 0 && res.FailureCode != faxes.FailureCanceled {
		// Some pages went through: the call dropped part way.
		res.Status, res.FailureCode, res.Retryable = faxes.AttemptPartial, faxes.FailureCallDropped, false
	}
	return res
}

// failureCodes maps Telnyx's failure_reason values to core's codes.
var failureCodes = map[string]struct {
	code      string
	retryable bool
}{
	"user_busy":                               {faxes.FailureBusy, true},
	"receiver_decline":                        {faxes.FailureBusy, true},
	"receiver_no_answer":                      {faxes.FailureNoAnswer, true},
	"receiver_no_response":                    {faxes.FailureNoAnswer, true},
	"fax_initial_communication_timeout":       {faxes.FailureNotAFax, false},
	"receiver_incompatible_destination":       {faxes.FailureNotAFax, false},
	"fax_signaling_error":                     {faxes.FailureSignaling, true},
	"invalid_ecm_response_from_receiver":      {faxes.FailureSignaling, true},
	"receiver_recovery_on_timer_expire":       {faxes.FailureSignaling, true},
	"receiver_call_dropped":                   {faxes.FailureSignaling, true},
	"sender_call_dropped":                     {faxes.FailureSignaling, true},
	"receiver_communication_error":            {faxes.FailureSignaling, true},
	"sender_communication_error":              {faxes.FailureSignaling, true},
	"receiver_unallocated_number":             {faxes.FailureInvalidNumber, false},
	"receiver_invalid_number_format":          {faxes.FailureInvalidNumber, false},
	"destination_invalid":                     {faxes.FailureInvalidNumber, false},
	"destination_unreachable":                 {faxes.FailureInvalidNumber, false},
	"file_download_failed":                    {faxes.FailureMedia, false},
	"file_conversion_failed":                  {faxes.FailureMedia, false},
	"media_download_failed":                   {faxes.FailureMedia, false},
	"invalid_media":                           {faxes.FailureMedia, false},
	"user_canceled":                           {faxes.FailureCanceled, false},
	"unexpected_generic_error":                {faxes.FailureProvider, true},
	"service_unavailable":                     {faxes.FailureProvider, true},
	"connection_channel_limit_exceeded":       {faxes.FailureProvider, true},
	"outbound_profile_channel_limit_exceeded": {faxes.FailureProvider, true},
}

// FailureCode normalises a Telnyx failure_reason to one of core's Failure*
// codes (docs/providers.md has the table) and says whether another attempt
// may succeed. Unknown reasons are provider_error, retryable: core bounds
// the attempts.
func FailureCode(reason string) (code string, retryable bool) {
	r := strings.ToLower(strings.TrimSpace(reason))
	if c, ok := failureCodes[r]; ok {
		return c.code, c.retryable
	}
	switch {
	case strings.HasPrefix(r, "fax_") || strings.Contains(r, "t30") || strings.Contains(r, "t.30"):
		return faxes.FailureSignaling, true
	case strings.HasPrefix(r, "file_") || strings.HasPrefix(r, "media_"):
		return faxes.FailureMedia, false
	}
	return faxes.FailureProvider, true
}

// cut shortens s to n bytes for a message or a log line.
func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
