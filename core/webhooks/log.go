package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/events"
)

// Deliveries is an endpoint's delivery log, newest first: each delivery
// with its attempts (time, status code, latency, the start of the answer
// or why there was none). status, when set, keeps one status;
// startingAfter is the id of the last delivery of the previous page.
func (s *Service) Deliveries(ctx context.Context, p core.Principal, endpointID string, status DeliveryStatus, startingAfter string, limit int) (*core.Page[Delivery], error) {
	if err := core.Authorize(p, core.OpManageWebhooks); err != nil {
		return nil, err
	}
	limit, err := core.CheckLimit(limit)
	if err != nil {
		return nil, err
	}
	switch status {
	case "", DeliveryPending, DeliveryDelivered, DeliveryFailed:
	default:
		return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "status must be pending, delivered or failed").With("parameter", "status")
	}
	if startingAfter != "" && (!strings.HasPrefix(startingAfter, core.PrefixWebhookDelivery) || len(startingAfter) > 64) {
		return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "starting_after must be a delivery id (%s…) from the previous page", core.PrefixWebhookDelivery).With("parameter", "starting_after")
	}
	if _, err := s.get(ctx, s.d.Store, p, endpointID); err != nil {
		return nil, err
	}
	list, err := s.d.Store.ListWebhookDeliveries(ctx, DeliveryFilter{
		OwnerID: p.OwnerID, Mode: p.Mode, TargetKind: TargetWebhook, TargetID: endpointID, Status: status, BeforeID: startingAfter, Limit: limit + 1,
	})
	if err != nil {
		return nil, fmt.Errorf("list webhook deliveries: %w", err)
	}
	page := &core.Page[Delivery]{Data: list}
	if len(list) > limit {
		page.Data, page.HasMore = list[:limit], true
		page.Next = page.Data[limit-1].ID
	}
	if err := s.withAttempts(ctx, page.Data); err != nil {
		return nil, err
	}
	if page.Data == nil {
		page.Data = []Delivery{}
	}
	return page, nil
}

// withAttempts fills each delivery's attempt log.
func (s *Service) withAttempts(ctx context.Context, list []Delivery) error {
	ids := make([]string, len(list))
	at := make(map[string]int, len(list))
	for i := range list {
		ids[i], at[list[i].ID] = list[i].ID, i
		list[i].AttemptLog = []Attempt{}
	}
	if len(ids) == 0 {
		return nil
	}
	attempts, err := s.d.Store.ListWebhookAttempts(ctx, ids)
	if err != nil {
		return fmt.Errorf("list webhook attempts: %w", err)
	}
	for _, a := range attempts {
		if i, ok := at[a.DeliveryID]; ok {
			list[i].AttemptLog = append(list[i].AttemptLog, a)
		}
	}
	return nil
}

// enqueue writes a delivery the owner asked for and its job, after their
// allowance (core.LimitWebhookManual: each is an outbound request).
func (s *Service) enqueue(ctx context.Context, p core.Principal, d *Delivery) error {
	if err := s.d.Kernel.Allow(ctx, core.LimitWebhookManual, p.OwnerID); err != nil {
		return err
	}
	return s.inTx(ctx, func(tx Tx) error {
		if err := tx.InsertWebhookDelivery(ctx, d); err != nil {
			return err
		}
		return s.d.Queue.EnqueueWebhookDeliveries(ctx, tx, []string{d.ID})
	})
}

// Redeliver sends an event of the log again to an enabled endpoint, as a
// new delivery with the same webhook-id (the event's id), so a receiver
// that got it already can tell. A test event sent earlier can be sent
// again too.
func (s *Service) Redeliver(ctx context.Context, p core.Principal, endpointID, eventID string) (*Delivery, error) {
	if err := core.Authorize(p, core.OpManageWebhooks); err != nil {
		return nil, err
	}
	if eventID == "" || len(eventID) > 64 {
		return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "eventId must be the id of one of your events (%s…)", core.PrefixEvent).With("parameter", "eventId")
	}
	e, err := s.get(ctx, s.d.Store, p, endpointID)
	if err != nil {
		return nil, err
	}
	if !e.Enabled {
		return nil, core.Errorf(core.KindConflict, CodeEndpointDisabled, "the endpoint is disabled (%s); enable it before redelivering to it", e.DisabledReason)
	}
	now := s.now()
	d := &Delivery{
		ID: core.NewID(core.PrefixWebhookDelivery), TargetKind: TargetWebhook, TargetID: e.ID, OwnerID: p.OwnerID, Mode: p.Mode,
		EventID: eventID, Origin: OriginRedeliver, Status: DeliveryPending, CreatedAt: now, UpdatedAt: now,
	}
	ev, err := s.d.Store.GetEvent(ctx, p.OwnerID, p.Mode, eventID)
	switch {
	case err == nil:
		d.EventType = ev.Type
	case errors.Is(err, core.ErrNoRows):
		payload, perr := s.d.Store.WebhookTestPayload(ctx, p.OwnerID, TargetWebhook, e.ID, eventID)
		if errors.Is(perr, core.ErrNoRows) {
			return nil, core.Errorf(core.KindNotFound, core.CodeNotFound, "no event %q of yours in this mode (events are kept %d days)", eventID, int(events.Retention.Hours()/24)).With("parameter", "eventId")
		}
		if perr != nil {
			return nil, fmt.Errorf("redeliver: %w", perr)
		}
		d.EventType, d.Payload = events.WebhookTest, payload
	default:
		return nil, fmt.Errorf("redeliver: %w", err)
	}
	if err := s.enqueue(ctx, p, d); err != nil {
		if core.ErrorKind(err) != core.KindInternal {
			return nil, err
		}
		return nil, fmt.Errorf("redeliver: %w", err)
	}
	d.AttemptLog = []Attempt{}
	return d, nil
}

// testData is a webhook.test event's data.
type testData struct {
	EndpointID string `json:"endpointId"`
	Message    string `json:"message"`
}

// SendTest sends a webhook.test event to one endpoint (enabled or not):
// one attempt, no retries, and it changes nothing about the endpoint's
// health. The event is not written to the log.
func (s *Service) SendTest(ctx context.Context, p core.Principal, endpointID string) (*Delivery, error) {
	if err := core.Authorize(p, core.OpManageWebhooks); err != nil {
		return nil, err
	}
	e, err := s.get(ctx, s.d.Store, p, endpointID)
	if err != nil {
		return nil, err
	}
	now := s.now()
	ev, err := events.NewEvent(p.OwnerID, p.Mode, events.WebhookTest, e.ID, testData{
		EndpointID: e.ID, Message: "This is a test event from faxhub: your endpoint received and can verify it.",
	}, now)
	if err != nil {
		return nil, err
	}
	payload, err := ev.MarshalJSON()
	if err != nil {
		return nil, err
	}
	d := &Delivery{
		ID: core.NewID(core.PrefixWebhookDelivery), TargetKind: TargetWebhook, TargetID: e.ID, OwnerID: p.OwnerID, Mode: p.Mode,
		EventID: ev.ID, EventType: events.WebhookTest, Origin: OriginTest, Payload: payload, Status: DeliveryPending, CreatedAt: now, UpdatedAt: now,
	}
	if err := s.enqueue(ctx, p, d); err != nil {
		if core.ErrorKind(err) != core.KindInternal {
			return nil, err
		}
		return nil, fmt.Errorf("send test event: %w", err)
	}
	d.AttemptLog = []Attempt{}
	return d, nil
}

// NotifyDisabled mails the owner of an endpoint the engine disabled (the
// job written with the disabling). Nothing is sent if the owner enabled
// it again meanwhile or deleted it.
func (s *Service) NotifyDisabled(ctx context.Context, endpointID string) error {
	e, err := s.d.Store.GetWebhookEndpointByID(ctx, endpointID)
	if errors.Is(err, core.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("webhook notice: %w", err)
	}
	if e.Enabled || e.DisabledReason == DisabledByOwner || e.DisabledReason == "" {
		return nil
	}
	if s.d.Mailer == nil || s.d.Accounts == nil {
		s.d.Logger.WarnContext(ctx, "webhook endpoint disabled; no mailer to tell its owner", "endpoint", e.ID)
		return nil
	}
	o, err := s.d.Accounts.Owner(ctx, e.OwnerID)
	if err != nil {
		return fmt.Errorf("webhook notice: %w", err)
	}
	why := fmt.Sprintf("every delivery to it failed for %s", durationWords(s.wc.DisableAfter))
	if e.DisabledReason == DisabledGone {
		why = "it answered 410 Gone, which says it wants no more events"
	}
	page := s.d.Kernel.URL(core.LinkWebhookPage, url.Values{"mode": {string(e.Mode)}}, "id", e.ID)
	text := fmt.Sprintf(`Hello,

faxhub disabled one of your %s-mode webhook endpoints because %s:

  %s%s

Events that happen while it is disabled are not sent to it. They stay in
your event log (GET /api/v1/events) for %d days. When the endpoint works
again, enable it on its page and redeliver what it missed:

  %s

faxhub
`, e.Mode, why, displayURL(e.URL), describe(e.Description), int(events.Retention.Hours()/24), page)
	if err := s.d.Mailer.Send(ctx, core.Mail{To: o.Email, Subject: "faxhub disabled a webhook endpoint", Text: text}); err != nil {
		return fmt.Errorf("webhook notice: %w", err)
	}
	return nil
}

// displayURL shows an endpoint without its query string, which may hold
// a token of the receiver's.
func displayURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unreadable URL)"
	}
	u.RawQuery, u.Fragment = "", ""
	return u.String()
}

func describe(d string) string {
	if d == "" {
		return ""
	}
	return " (" + d + ")"
}

func durationWords(d interface{ Hours() float64 }) string {
	if h := d.Hours(); h >= 48 && int(h)%24 == 0 {
		return fmt.Sprintf("%d days", int(h)/24)
	} else if h >= 1 {
		return fmt.Sprintf("%g hours", h)
	}
	return "a while"
}

// Purge deletes deliveries and their attempts older than Retention (the
// garbage collector).
func (s *Service) Purge(ctx context.Context) (int64, error) {
	n, err := s.d.Store.PurgeWebhookDeliveries(ctx, s.now().Add(-s.wc.Retention))
	if err != nil {
		return 0, fmt.Errorf("purge webhook deliveries: %w", err)
	}
	return n, nil
}
