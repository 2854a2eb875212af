// Package stripe receives Stripe's signed webhook events for live
// checkouts (POST /webhooks/stripe): it verifies the Stripe-Signature
// header and turns Checkout Session and refund events into core calls. The
// Checkout gateway (the outbound client) is core/payments/stripecheckout.
package stripe

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/checkout"
	"github.com/faxhub/faxhub/core/web"
)

// WebhookPath is where Stripe posts events (configure the endpoint in
// Stripe's dashboard with the events EventTypes lists).
const WebhookPath = "/webhooks/stripe"

// MaxWebhookBytes bounds an event body. Checkout Session and Charge events
// are a few KiB; a larger body is refused before its signature is checked.
const MaxWebhookBytes = 64 << 10

// SignatureTolerance is how old a signed event may be: Stripe's own
// default, the window in which a captured event could be replayed.
const SignatureTolerance = 300 * time.Second

// Error codes of the webhook's answers (problem+json "code").
const (
	CodeWebhookSignature = "webhook_signature_invalid"
	CodeWebhookTooLarge  = "webhook_too_large"
)

// EventTypes are the events the webhook acts on; every other type is
// acknowledged and ignored.
var EventTypes = [...]string{
	string(stripe.EventTypeCheckoutSessionCompleted),
	string(stripe.EventTypeCheckoutSessionAsyncPaymentSucceeded),
	string(stripe.EventTypeCheckoutSessionAsyncPaymentFailed),
	string(stripe.EventTypeCheckoutSessionExpired),
	string(stripe.EventTypeChargeRefunded),
}

// Register puts POST WebhookPath on r (API origin), served by h: the
// Webhook, or what the server answers instead when Stripe is not
// configured. h is given every method (the Webhook refuses the others with
// a problem).
func Register(r *web.Router, h http.Handler) {
	r.Group("webhooks", web.OriginAPI).Handle(web.Route{
		Name: "webhooks.stripe", Methods: "POST", Path: WebhookPath, OwnMethods: true, Auth: web.AuthSignature,
	}, h)
}

// Service is what the webhook needs from core (*checkout.Service has it).
type Service interface {
	CompletePaid(ctx context.Context, id string, ref checkout.PaymentRef) (*checkout.Checkout, error)
	End(ctx context.Context, id, session string, status checkout.Status) (*checkout.Checkout, error)
	Refund(ctx context.Context, paymentIntent string, refundedCents int64) (*checkout.Checkout, error)
}

// Webhook serves POST WebhookPath.
type Webhook struct {
	svc    Service
	secret string
	logger *slog.Logger
}

// NewWebhook verifies events with the endpoint's signing secret (whsec_…).
func NewWebhook(svc Service, secret string, logger *slog.Logger) (*Webhook, error) {
	if secret == "" {
		return nil, errors.New("stripecheckout: the webhook signing secret is required")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Webhook{svc: svc, secret: secret, logger: logger}, nil
}

// ServeHTTP answers Stripe. A body that is too large or not signed with
// the secret within SignatureTolerance gets a 400-class problem and
// changes nothing. A verified event answers 200 once core committed what
// it decided, or when it decided nothing can come of it (an unknown type,
// a session that is not ours, a payment that does not match: retrying
// would not change that, so Stripe must not retry for days; those are
// logged). A failure to decide (the database is down) answers 500 so
// Stripe delivers it again.
func (h *Webhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		web.WriteProblem(w, web.Problem{Type: web.ProblemType(core.CodeInvalidRequest), Title: http.StatusText(http.StatusMethodNotAllowed),
			Status: http.StatusMethodNotAllowed, Code: core.CodeInvalidRequest, Detail: "Stripe events are POSTed"})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxWebhookBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			web.WriteProblem(w, web.Problem{Type: web.ProblemType(CodeWebhookTooLarge), Title: http.StatusText(http.StatusRequestEntityTooLarge),
				Status: http.StatusRequestEntityTooLarge, Code: CodeWebhookTooLarge, Detail: "an event body is at most 64 KiB"})
			return
		}
		web.WriteError(w, r, h.logger, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the event body could not be read"))
		return
	}
	// The API version of the endpoint's events is whatever the Stripe
	// dashboard set; the fields read here (ids, metadata, amount_total,
	// currency, payment_status, payment_intent, amount_refunded) are the
	// same in every version, so a mismatch with stripe-go's pinned version
	// is not a reason to refuse an event.
	ev, err := webhook.ConstructEventWithOptions(body, r.Header.Get("Stripe-Signature"), h.secret,
		webhook.ConstructEventOptions{Tolerance: SignatureTolerance, IgnoreAPIVersionMismatch: true})
	if err != nil {
		h.logger.WarnContext(r.Context(), "stripe webhook refused", "reason", signatureReason(err))
		web.WriteProblem(w, web.Problem{Type: web.ProblemType(CodeWebhookSignature), Title: http.StatusText(http.StatusBadRequest),
			Status: http.StatusBadRequest, Code: CodeWebhookSignature, Detail: "the Stripe-Signature header does not verify this body: " + signatureReason(err)})
		return
	}
	outcome, err := h.handle(r.Context(), ev)
	log := h.logger.With("event", ev.ID, "type", string(ev.Type))
	switch kind := core.ErrorKind(err); {
	case err == nil:
		log.InfoContext(r.Context(), "stripe event", "outcome", outcome)
	case kind == core.KindNotFound:
		// A session or payment faxhub did not start (another integration
		// on the account, or a checkout purged long ago).
		outcome = "ignored: not a faxhub checkout"
		log.InfoContext(r.Context(), "stripe event", "outcome", outcome)
	case kind == core.KindInternal || kind == core.KindUnavailable || kind == core.KindRateLimited:
		web.WriteError(w, r, h.logger, err)
		return
	default:
		outcome = "refused: " + core.AsError(err).Message
		log.ErrorContext(r.Context(), "stripe event refused: a payment may need a refund by hand", "err", err)
	}
	web.WriteJSON(w, http.StatusOK, map[string]any{"received": true, "outcome": outcome})
}

// handle translates one verified event into a core call.
func (h *Webhook) handle(ctx context.Context, ev stripe.Event) (string, error) {
	if ev.Data == nil {
		return "ignored: no object", nil
	}
	switch ev.Type {
	case stripe.EventTypeCheckoutSessionCompleted, stripe.EventTypeCheckoutSessionAsyncPaymentSucceeded:
		s, id, err := session(ev)
		if err != nil || id == "" {
			return "ignored: not a faxhub checkout", err
		}
		// A completed session of a delayed payment method (a bank debit)
		// is not paid yet; async_payment_succeeded follows when it is.
		if s.PaymentStatus != stripe.CheckoutSessionPaymentStatusPaid {
			return "waiting: payment status " + string(s.PaymentStatus), nil
		}
		ref := checkout.PaymentRef{Session: s.ID, AmountCents: s.AmountTotal, Currency: string(s.Currency)}
		if s.PaymentIntent != nil {
			ref.PaymentIntent = s.PaymentIntent.ID
		}
		if _, err := h.svc.CompletePaid(ctx, id, ref); err != nil {
			return "", err
		}
		return "paid " + id, nil
	case stripe.EventTypeCheckoutSessionExpired, stripe.EventTypeCheckoutSessionAsyncPaymentFailed:
		s, id, err := session(ev)
		if err != nil || id == "" {
			return "ignored: not a faxhub checkout", err
		}
		status := checkout.Expired
		if ev.Type == stripe.EventTypeCheckoutSessionAsyncPaymentFailed {
			status = checkout.Failed
		}
		c, err := h.svc.End(ctx, id, s.ID, status)
		if err != nil {
			return "", err
		}
		return string(c.Status) + " " + id, nil
	case stripe.EventTypeChargeRefunded:
		var ch stripe.Charge
		if err := json.Unmarshal(ev.Data.Raw, &ch); err != nil {
			return "", core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the charge in the event could not be read")
		}
		if ch.PaymentIntent == nil || ch.PaymentIntent.ID == "" {
			return "ignored: a charge without a payment intent", nil
		}
		c, err := h.svc.Refund(ctx, ch.PaymentIntent.ID, ch.AmountRefunded)
		if err != nil {
			return "", err
		}
		return "refund recorded for " + c.ID, nil
	}
	return "ignored: event type not used", nil
}

// session reads the Checkout Session of an event and the faxhub checkout
// it names (metadata checkout_id, else client_reference_id; "" if none).
func session(ev stripe.Event) (*stripe.CheckoutSession, string, error) {
	var s stripe.CheckoutSession
	if err := json.Unmarshal(ev.Data.Raw, &s); err != nil {
		return nil, "", core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the checkout session in the event could not be read")
	}
	id := s.Metadata["checkout_id"]
	if id == "" {
		id = s.ClientReferenceID
	}
	if len(id) > 100 {
		id = ""
	}
	return &s, id, nil
}

// signatureReason says why an event was refused without echoing anything
// of it.
func signatureReason(err error) string {
	switch {
	case errors.Is(err, webhook.ErrNotSigned):
		return "no signature"
	case errors.Is(err, webhook.ErrTooOld):
		return "the signature's timestamp is too old"
	case errors.Is(err, webhook.ErrInvalidHeader):
		return "a malformed signature header"
	case errors.Is(err, webhook.ErrNoValidSignature):
		return "no valid signature"
	}
	return "the body is not a Stripe event"
}
