package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/egress"
	"github.com/faxhub/faxhub/core/events"
)

// CreateRequest registers an endpoint.
type CreateRequest struct {
	URL         string `json:"url"`
	Description string `json:"description"`
	// EventTypes are the types to deliver ("fax.*" stands for every type
	// of a resource); empty means every type.
	EventTypes []string `json:"eventTypes"`
	// Signing are the schemes: v1 (the default), v1a, or both.
	Signing []string `json:"signing"`
}

// UpdateRequest changes an endpoint; absent (nil) fields keep their value.
type UpdateRequest struct {
	URL         *string   `json:"url"`
	Description *string   `json:"description"`
	EventTypes  *[]string `json:"eventTypes"`
	Signing     *[]string `json:"signing"`
	// Enabled false turns the endpoint off (disabledReason owner); true
	// turns a disabled one on again, whatever disabled it, and starts its
	// failure count afresh.
	Enabled *bool `json:"enabled"`
}

// policy is the address policy of deliveries, for URLs whose host is an
// address literal.
func (s *Service) policy() egress.Policy {
	return egress.Policy{AllowLoopback: s.wc.AllowLoopback, AllowPrivate: s.wc.AllowPrivate}
}

func badURL(format string, args ...any) error {
	return core.Errorf(core.KindInvalid, CodeInvalidURL, "url "+format, args...).With("parameter", "url")
}

// CheckURL applies the endpoint URL rules (docs/webhooks.md, "Where
// faxhub delivers"): an absolute https URL of at most MaxURLBytes of
// printable ASCII, without credentials or fragment; http only for a
// loopback host, and only where the operator allows loopback; an address
// literal must be one the delivery policy dials. A host name is checked
// again on every attempt, at dial time, against what it resolves to then.
func (s *Service) CheckURL(raw string) error {
	switch {
	case raw == "":
		return badURL("is required")
	case len(raw) > MaxURLBytes:
		return badURL("is longer than %d bytes", MaxURLBytes)
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] <= 0x20 || raw[i] >= 0x7f {
			return badURL("must be printable ASCII: percent-encode other characters and write host names in punycode")
		}
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return badURL("must be an absolute https URL, e.g. https://example.com/webhooks/faxhub")
	}
	if u.User != nil {
		return badURL("must not carry a user name or password: deliveries are authenticated by their signature")
	}
	if strings.Contains(raw, "#") {
		return badURL("must not have a fragment")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return badURL("has port %s, which is not between 1 and 65535", p)
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return badURL("has an empty port")
	}
	host := strings.ToLower(u.Hostname())
	if len(host) > 253 {
		return badURL("has a host longer than 253 characters")
	}
	addr, literal := netip.Addr{}, false
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return badURL("must not name an IPv6 zone")
		}
		addr, literal = a, true
	}
	loopback := host == "localhost" || strings.HasSuffix(host, ".localhost") || (literal && addr.Unmap().IsLoopback())
	switch u.Scheme {
	case "https":
	case "http":
		if !loopback || !s.wc.AllowLoopback {
			return badURL("must use https (this server accepts http only for loopback hosts, in developer mode or with --webhooks-allow-private)")
		}
	default:
		return badURL("must use https")
	}
	if loopback && !s.wc.AllowLoopback {
		return badURL("points at this machine (loopback), which this server does not deliver to")
	}
	if literal {
		if err := s.policy().Check(addr); err != nil {
			return badURL("points at an address this server does not deliver to (%s)", strings.TrimPrefix(err.Error(), egress.ErrForbiddenAddress.Error()+": "))
		}
	}
	return nil
}

// checkDescription: one line of display text, at most MaxDescriptionRunes.
func checkDescription(d string) error {
	bad := func(why string) error {
		return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "description %s", why).With("parameter", "description")
	}
	if !utf8.ValidString(d) {
		return bad("is not valid UTF-8")
	}
	if n := utf8.RuneCountInString(d); n > MaxDescriptionRunes {
		return bad(fmt.Sprintf("is longer than %d characters", MaxDescriptionRunes))
	}
	for _, r := range d {
		switch {
		case r < 0x20 || (r >= 0x7f && r < 0xa0):
			return bad("contains a control character")
		case r == 0x061c || r == 0x200e || r == 0x200f || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
			return bad("contains a bidirectional formatting character")
		}
	}
	return nil
}

// parseEventTypes reads an endpoint's filter with the log's own parser,
// wildcards kept; the result is sorted, so two filters that say the same
// compare equal.
func parseEventTypes(values []string) ([]events.Type, error) {
	if len(values) > 64 {
		return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "at most 64 eventTypes").With("parameter", "eventTypes")
	}
	types, err := events.ParseFilter(values)
	if err != nil {
		if e := core.AsError(err); e.Kind == core.KindInvalid {
			return nil, e.With("parameter", "eventTypes")
		}
		return nil, err
	}
	if types == nil {
		types = []events.Type{}
	}
	return types, nil
}

// parseSigning reads the schemes; none means v1.
func parseSigning(values []string) ([]Scheme, error) {
	if len(values) == 0 {
		return []Scheme{SchemeV1}, nil
	}
	var out []Scheme
	for _, v := range values {
		sc := Scheme(strings.TrimSpace(v))
		if sc != SchemeV1 && sc != SchemeV1a {
			return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "signing %q is not a scheme: use v1 (HMAC-SHA256), v1a (Ed25519) or both", v).With("parameter", "signing")
		}
		if !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	slices.Sort(out) // v1 before v1a
	return out, nil
}

// sealKey reads the server secret that seals v1 secrets. It is read before
// any transaction: on SQLite the first read of a server secret writes
// through the single writer that a transaction holds.
func (s *Service) sealKey(ctx context.Context) error {
	_, err := s.d.Kernel.Secret(ctx, sealSecret)
	return err
}

// Create registers an endpoint for p's owner in p's mode and returns it
// with its v1 secret, shown this once.
func (s *Service) Create(ctx context.Context, p core.Principal, r CreateRequest) (*WithSecret, error) {
	if err := core.Authorize(p, core.OpManageWebhooks); err != nil {
		return nil, err
	}
	if err := s.CheckURL(r.URL); err != nil {
		return nil, err
	}
	if err := checkDescription(r.Description); err != nil {
		return nil, err
	}
	types, err := parseEventTypes(r.EventTypes)
	if err != nil {
		return nil, err
	}
	signing, err := parseSigning(r.Signing)
	if err != nil {
		return nil, err
	}
	now := s.now()
	e := &Endpoint{
		ID: core.NewID(core.PrefixWebhookEndpoint), OwnerID: p.OwnerID, Mode: p.Mode, URL: r.URL, Description: r.Description,
		EventTypes: types, Signing: signing, Enabled: true, CreatedAt: now, UpdatedAt: now,
	}
	key, secret := newSecret()
	if e.Secret, err = s.seal(ctx, purposeV1, e.ID, key); err != nil {
		return nil, fmt.Errorf("create webhook endpoint: %w", err)
	}
	err = s.inTx(ctx, func(tx Tx) error {
		// Concurrent creations of one owner are serialized, so the
		// limit holds on PostgreSQL too.
		if err := tx.LockWebhookOwner(ctx, p.OwnerID); err != nil {
			return err
		}
		list, err := tx.ListWebhookEndpoints(ctx, p.OwnerID, p.Mode)
		if err != nil {
			return err
		}
		if len(list) >= MaxEndpoints {
			return core.Errorf(core.KindConflict, CodeTooManyEndpoints, "this account has %d %s-mode webhook endpoints, the most it may have; delete one first", len(list), p.Mode).With("limit", MaxEndpoints)
		}
		return tx.CreateWebhookEndpoint(ctx, e)
	})
	if err != nil {
		if core.ErrorKind(err) != core.KindInternal {
			return nil, err
		}
		return nil, fmt.Errorf("create webhook endpoint: %w", err)
	}
	return &WithSecret{Endpoint: *e, Secret: secret}, nil
}

// List returns p's endpoints in p's mode, oldest first (at most
// MaxEndpoints, so not paginated).
func (s *Service) List(ctx context.Context, p core.Principal) ([]Endpoint, error) {
	if err := core.Authorize(p, core.OpManageWebhooks); err != nil {
		return nil, err
	}
	list, err := s.d.Store.ListWebhookEndpoints(ctx, p.OwnerID, p.Mode)
	if err != nil {
		return nil, fmt.Errorf("list webhook endpoints: %w", err)
	}
	if list == nil {
		list = []Endpoint{}
	}
	return list, nil
}

func notFound(id string) error {
	return core.Errorf(core.KindNotFound, core.CodeNotFound, "no webhook endpoint %q in this mode", id)
}

// Get returns one of p's endpoints (not_found for another owner's or the
// other mode's).
func (s *Service) Get(ctx context.Context, p core.Principal, id string) (*Endpoint, error) {
	if err := core.Authorize(p, core.OpManageWebhooks); err != nil {
		return nil, err
	}
	return s.get(ctx, s.d.Store, p, id)
}

func (s *Service) get(ctx context.Context, q Queries, p core.Principal, id string) (*Endpoint, error) {
	e, err := q.GetWebhookEndpoint(ctx, p.OwnerID, p.Mode, id)
	if errors.Is(err, core.ErrNoRows) {
		return nil, notFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("get webhook endpoint: %w", err)
	}
	return e, nil
}

// Update changes what r sets.
func (s *Service) Update(ctx context.Context, p core.Principal, id string, r UpdateRequest) (*Endpoint, error) {
	if err := core.Authorize(p, core.OpManageWebhooks); err != nil {
		return nil, err
	}
	if r.URL != nil {
		if err := s.CheckURL(*r.URL); err != nil {
			return nil, err
		}
	}
	if r.Description != nil {
		if err := checkDescription(*r.Description); err != nil {
			return nil, err
		}
	}
	var types []events.Type
	var signing []Scheme
	var err error
	if r.EventTypes != nil {
		if types, err = parseEventTypes(*r.EventTypes); err != nil {
			return nil, err
		}
	}
	if r.Signing != nil {
		if len(*r.Signing) == 0 {
			return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "signing needs at least one scheme: v1, v1a or both").With("parameter", "signing")
		}
		if signing, err = parseSigning(*r.Signing); err != nil {
			return nil, err
		}
	}
	var out *Endpoint
	err = s.inTx(ctx, func(tx Tx) error {
		e, err := s.get(ctx, tx, p, id)
		if err != nil {
			return err
		}
		now := s.now()
		if r.URL != nil {
			e.URL = *r.URL
		}
		if r.Description != nil {
			e.Description = *r.Description
		}
		if r.EventTypes != nil {
			e.EventTypes = types
		}
		if r.Signing != nil {
			e.Signing = signing
		}
		if r.Enabled != nil && *r.Enabled != e.Enabled {
			e.Enabled = *r.Enabled
			if e.Enabled {
				// A fresh start: whatever disabled it, the owner says it
				// works now.
				e.DisabledReason, e.DisabledAt, e.FailingSince = "", nil, nil
			} else {
				e.DisabledReason, e.DisabledAt = DisabledByOwner, &now
			}
		}
		e.UpdatedAt = now
		if err := tx.UpdateWebhookEndpoint(ctx, e); err != nil {
			return err
		}
		out = e
		return nil
	})
	if err != nil {
		if core.ErrorKind(err) != core.KindInternal {
			return nil, err
		}
		return nil, fmt.Errorf("update webhook endpoint: %w", err)
	}
	return out, nil
}

// Delete removes an endpoint. Its pending deliveries end without another
// attempt; its delivery log goes with the retention of deliveries.
func (s *Service) Delete(ctx context.Context, p core.Principal, id string) error {
	if err := core.Authorize(p, core.OpManageWebhooks); err != nil {
		return err
	}
	err := s.d.Store.DeleteWebhookEndpoint(ctx, p.OwnerID, p.Mode, id)
	if errors.Is(err, core.ErrNoRows) {
		return notFound(id)
	}
	if err != nil {
		return fmt.Errorf("delete webhook endpoint: %w", err)
	}
	return nil
}

// RotateSecret gives an endpoint a new v1 secret, shown this once. For
// RotationOverlap every delivery is signed with both the new and the
// replaced secret, so a receiver can switch without losing one; a second
// rotation within the overlap drops the secret before the replaced one.
func (s *Service) RotateSecret(ctx context.Context, p core.Principal, id string) (*WithSecret, error) {
	if err := core.Authorize(p, core.OpManageWebhooks); err != nil {
		return nil, err
	}
	key, secret := newSecret()
	sealed, err := s.seal(ctx, purposeV1, id, key)
	if err != nil {
		return nil, fmt.Errorf("rotate webhook secret: %w", err)
	}
	var out *Endpoint
	err = s.inTx(ctx, func(tx Tx) error {
		e, err := s.get(ctx, tx, p, id)
		if err != nil {
			return err
		}
		now := s.now()
		until := now.Add(s.wc.RotationOverlap)
		e.PreviousSecret, e.PreviousSecretUntil = e.Secret, &until
		e.Secret, e.SecretRotatedAt, e.UpdatedAt = sealed, &now, now
		if err := tx.UpdateWebhookEndpoint(ctx, e); err != nil {
			return err
		}
		out = e
		return nil
	})
	if err != nil {
		if core.ErrorKind(err) != core.KindInternal {
			return nil, err
		}
		return nil, fmt.Errorf("rotate webhook secret: %w", err)
	}
	return &WithSecret{Endpoint: *out, Secret: secret}, nil
}

// endpoints is the webhook Destination: an owner's enabled endpoints of
// the event's mode whose filter takes its type.
type endpoints struct{ s *Service }

func (*endpoints) Kind() TargetKind { return TargetWebhook }

func (*endpoints) Targets(ctx context.Context, tx Tx, e *events.Event) ([]Target, error) {
	list, err := tx.ListWebhookEndpoints(ctx, e.OwnerID, e.Mode)
	if err != nil {
		return nil, err
	}
	var out []Target
	for i := range list {
		if list[i].Enabled && list[i].Matches(e.Type) {
			out = append(out, Target{Kind: TargetWebhook, ID: list[i].ID})
		}
	}
	return out, nil
}

// userAgent names faxhub's deliveries in receivers' logs.
const userAgent = "faxhub-webhooks/1.0 (+https://www.standardwebhooks.com)"

func (x *endpoints) Request(ctx context.Context, tx Tx, d *Delivery, body []byte, at time.Time) (*Request, error) {
	e, err := tx.GetWebhookEndpointByID(ctx, d.TargetID)
	if errors.Is(err, core.ErrNoRows) || (err == nil && (e.OwnerID != d.OwnerID || e.Mode != d.Mode)) {
		return nil, &Refusal{Reason: "the endpoint was deleted"}
	}
	if err != nil {
		return nil, err
	}
	if !e.Enabled && d.Origin != OriginTest {
		return nil, &Refusal{Reason: "the endpoint is disabled (" + string(e.DisabledReason) + ")"}
	}
	ts := at.Unix()
	sig, err := x.s.signatures(ctx, e, content(d.EventID, ts, body), at)
	if err != nil {
		return nil, err
	}
	return &Request{URL: e.URL, Body: body, Header: map[string]string{
		HeaderID: d.EventID, HeaderTimestamp: strconv.FormatInt(ts, 10), HeaderSignature: sig,
		"Content-Type": "application/json", "User-Agent": userAgent,
	}}, nil
}

// Attempted keeps the endpoint's health: a delivered attempt clears its
// failure streak; a failed one starts it, and disables the endpoint when
// the streak reaches DisableAfter; a 410 disables it at once. Test
// deliveries say nothing about it.
func (x *endpoints) Attempted(ctx context.Context, tx Tx, d *Delivery, o *Outcome) error {
	if o.Test {
		return nil
	}
	since, err := tx.RecordWebhookOutcome(ctx, d.TargetID, o.Delivered, o.At)
	if errors.Is(err, core.ErrNoRows) {
		return nil // deleted meanwhile
	}
	if err != nil || o.Delivered {
		return err
	}
	reason := DisabledReason("")
	switch {
	case o.Gone:
		reason = DisabledGone
	case since != nil && o.At.Sub(*since) >= x.s.wc.DisableAfter:
		reason = DisabledFailing
	default:
		return nil
	}
	disabled, err := tx.DisableWebhookEndpoint(ctx, d.TargetID, reason, o.At)
	if err != nil || !disabled {
		return err
	}
	x.s.d.Logger.WarnContext(ctx, "webhook endpoint disabled", "endpoint", d.TargetID, "owner", d.OwnerID, "reason", reason)
	return x.s.d.Queue.EnqueueWebhookNotice(ctx, tx, d.TargetID)
}
