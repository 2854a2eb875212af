package core

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// Limit names an operation whose rate faxhub bounds. Callers (features and
// adapters) name the operation and the subject it is counted for; the rate
// is decided here, in one table, so that no door picks its own interval.
//
// A Limit's value is also the prefix of its limiter key
// ("<limit>:<subject>" in the rate_limits table): the values are the keys
// the callers used before the table existed, so buckets survived the move.
type Limit string

// The limited operations. The comment after each names its subject.
const (
	// LimitSend: faxes created (REST, MCP, the console's drafts, a paid
	// draft); owner and mode. Charged inside the fax's transaction.
	LimitSend Limit = "send"
	// LimitUpload and LimitTestUpload: upload capabilities created; owner
	// and mode. Test mode is stricter (test keys are handed around in
	// scripts and CI, and test uploads cost nothing), but neither is
	// stricter than LimitSend: every fax needs an upload.
	LimitUpload     Limit = "upload"
	LimitTestUpload Limit = "upload-test"
	// LimitNumberSearch: number searches, each a provider API call; owner
	// and mode.
	LimitNumberSearch Limit = "number-search"
	// LimitSimulateInbound: simulated received faxes; owner.
	LimitSimulateInbound Limit = "simulate-inbound"
	// LimitAgentEnroll: agent enrollment tokens issued; owner.
	LimitAgentEnroll Limit = "agent-enroll"
	// LimitAgentClaimAttempt: new claim attempts; agent registration.
	LimitAgentClaimAttempt Limit = "agent-claim-attempt"
	// LimitHostCreate: delegated hosts created; owner.
	LimitHostCreate Limit = "host-create"
	// LimitHostRegister: agent registrations and device codes; host.
	LimitHostRegister Limit = "hostagent:register"
	// LimitAgentExecute: capability calls; delegated agent.
	LimitAgentExecute Limit = "hostagent:execute"
	// LimitWebhookManual: test events and redeliveries an owner asks
	// for, each an outbound request; owner.
	LimitWebhookManual Limit = "webhook-manual"
	// LimitPreview: previews composed (a PDF composition each); owner.
	LimitPreview Limit = "preview"
	// LimitDestinationCheck: destination numbers checked as they are
	// typed (the console's send page); owner.
	LimitDestinationCheck Limit = "destination-check"
	// LimitPageImage: page images and transmission reports rendered
	// (a rasterization each) for signed links; owner.
	LimitPageImage Limit = "page-image"
	// LimitConsoleMail: verification and recovery mails; the address's
	// hash (HashSecret), never the address itself.
	LimitConsoleMail Limit = "console-mail"
	// LimitOAuthRegister: dynamic client registrations; client address.
	LimitOAuthRegister Limit = "oauth-register"
	// LimitOAuthMetadataFetch: client ID metadata document fetches; client
	// address.
	LimitOAuthMetadataFetch Limit = "oauth-cimd-fetch"
	// LimitMachineValidate and LimitMachineFax: the unauthenticated
	// machine payment endpoints (pricing, reading a PDF); client address.
	LimitMachineValidate Limit = "public:machine-validate"
	LimitMachineFax      Limit = "public:machine-fax"
	// LimitHostEnroll: host enrollment with a token (unauthenticated);
	// client address.
	LimitHostEnroll Limit = "public:host_enroll"
	// LimitStripeTestMint: the test-mode Stripe payment-token minting
	// endpoint (unauthenticated); client address.
	LimitStripeTestMint Limit = "public:stripe-test-mint"
)

// Rate is a GCRA allowance: Burst events at once, then one more every
// Interval.
type Rate struct {
	Interval time.Duration
	Burst    int
}

// LimitInfo is one row of the limits table: the default rate, and what the
// subject is.
type LimitInfo struct {
	Rate
	// PerClient marks limits of unauthenticated endpoints, counted per
	// client address (web.ClientIP); the others are counted per
	// authenticated subject (owner, host, agent, …) named by Per.
	PerClient bool
	Per       string
}

// Unauthenticated endpoints that do work (pricing a machine fax, reading a
// PDF, checking an enrollment token) share one allowance per client
// address: generous for a person or a script, a wall for a flood.
const (
	publicInterval = time.Second
	publicBurst    = 60
)

// Limits returns the table of every limit with its default rate. It is
// built on each call so that no caller can change another's defaults.
func Limits() map[Limit]LimitInfo {
	subject := func(r Rate, per string) LimitInfo { return LimitInfo{Rate: r, Per: per} }
	client := func(r Rate) LimitInfo { return LimitInfo{Rate: r, PerClient: true, Per: "client address"} }
	public := Rate{publicInterval, publicBurst}
	return map[Limit]LimitInfo{
		LimitSend:              subject(Rate{100 * time.Millisecond, 20}, "owner and mode"),
		LimitUpload:            subject(Rate{50 * time.Millisecond, 100}, "owner and mode"),
		LimitTestUpload:        subject(Rate{100 * time.Millisecond, 50}, "owner and mode"),
		LimitNumberSearch:      subject(Rate{500 * time.Millisecond, 10}, "owner and mode"),
		LimitSimulateInbound:   subject(Rate{time.Second, 20}, "owner"),
		LimitAgentEnroll:       subject(Rate{30 * time.Second, 10}, "owner"),
		LimitAgentClaimAttempt: subject(Rate{30 * time.Second, 5}, "agent registration"),
		LimitHostCreate:        subject(Rate{30 * time.Second, 10}, "owner"),
		LimitHostRegister:      subject(Rate{6 * time.Second, 20}, "host"),
		LimitAgentExecute:      subject(Rate{500 * time.Millisecond, 120}, "delegated agent"),
		LimitConsoleMail:       subject(Rate{10 * time.Minute, 3}, "email address"),
		LimitWebhookManual:     subject(Rate{3 * time.Second, 20}, "owner"),
		LimitPreview:           subject(Rate{time.Second, 20}, "owner"),
		LimitPageImage:         subject(Rate{100 * time.Millisecond, 100}, "owner"),
		LimitDestinationCheck:  subject(Rate{200 * time.Millisecond, 30}, "owner"),
		// Registration and metadata fetches are counted per client
		// address too, but with their own, slower allowances.
		LimitOAuthRegister:      client(Rate{6 * time.Minute, 10}),
		LimitOAuthMetadataFetch: client(Rate{6 * time.Second, 10}),
		LimitMachineValidate:    client(public),
		LimitMachineFax:         client(public),
		LimitHostEnroll:         client(public),
		LimitStripeTestMint:     client(public),
	}
}

// SetLimit overrides limit's rate; a zero field keeps the default.
func (c *Config) SetLimit(l Limit, r Rate) {
	if c.Limits == nil {
		c.Limits = map[Limit]Rate{}
	}
	c.Limits[l] = r
}

// resolveLimits applies overrides to the defaults. An unknown limit or a
// negative field is a configuration mistake, refused at start-up rather
// than ignored.
func resolveLimits(overrides map[Limit]Rate) (map[Limit]Rate, error) {
	table := Limits()
	out := make(map[Limit]Rate, len(table))
	for l, info := range table {
		out[l] = info.Rate
	}
	for _, l := range slices.Sorted(maps.Keys(overrides)) {
		r := overrides[l]
		def, ok := out[l]
		switch {
		case !ok:
			return nil, fmt.Errorf("core: unknown rate limit %q", l)
		case r.Interval < 0 || r.Burst < 0:
			return nil, fmt.Errorf("core: rate limit %q: interval and burst must not be negative", l)
		}
		if r.Interval == 0 {
			r.Interval = def.Interval
		}
		if r.Burst == 0 {
			r.Burst = def.Burst
		}
		out[l] = r
	}
	return out, nil
}

// Rate returns limit's effective rate (the default or its override); the
// zero Rate for a limit not in the table.
func (s *Kernel) Rate(l Limit) Rate { return s.limits[l] }

// LimitKey is the limiter key of limit for subject.
func LimitKey(l Limit, subject string) string { return string(l) + ":" + subject }

// Allow charges one event of limit to subject on the shared limiter. A
// refusal is a KindRateLimited *Error with RetryAfterSeconds.
func (s *Kernel) Allow(ctx context.Context, l Limit, subject string) error {
	return s.AllowIn(ctx, s.d.Store, l, subject)
}

// AllowIn is Allow on q (the store or a transaction): charged inside a
// transaction, the event counts only if the transaction commits.
func (s *Kernel) AllowIn(ctx context.Context, q Queries, l Limit, subject string) error {
	r, ok := s.limits[l]
	if !ok {
		// A limit missing from the table is a programming mistake; never
		// let it through unlimited.
		return fmt.Errorf("rate limit: unknown limit %q", l)
	}
	key := LimitKey(l, subject)
	now := s.now()
	ok, wait, err := q.AllowRate(ctx, key, now, r.Interval, r.Burst)
	if err != nil {
		return fmt.Errorf("rate limit %s: %w", key, err)
	}
	if !ok {
		s.refused.note(key, now, wait)
		return rateLimited(wait)
	}
	return nil
}

// Peek answers what Allow would answer now, as far as this process has
// seen, without charging the event or reading anything: a subject the
// limiter refused (here, for a single event) is refused until the wait it
// was given has passed; any other is admitted. It is for a request that
// charges its event later, with AllowIn in the transaction that records
// what it asked for (one write instead of two, issue 32), and wants a
// subject past its limit refused before its request costs anything.
// Peek never refuses what Allow would admit (an event's wait only grows
// with later events); what it admits the later charge decides, so a
// subject past its limit costs this process at most one such request per
// wait it is given, and those racing it.
func (s *Kernel) Peek(_ context.Context, l Limit, subject string) error {
	if _, ok := s.limits[l]; !ok {
		return fmt.Errorf("rate limit: unknown limit %q", l)
	}
	if wait := s.refused.wait(LimitKey(l, subject), s.now()); wait > 0 {
		return rateLimited(wait)
	}
	return nil
}

// maxRefusals bounds the refusals a Kernel remembers; when it is full of
// waits that have not passed, new ones are not remembered (Peek then
// admits, and the charge refuses).
const maxRefusals = 4096

// refusals maps limiter keys to the instant their last refusal's wait
// ends.
type refusals struct {
	mu    sync.Mutex
	until map[string]time.Time
}

func (r *refusals) note(key string, now time.Time, wait time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.until[key]; !ok && len(r.until) >= maxRefusals {
		for k, u := range r.until {
			if !u.After(now) {
				delete(r.until, k)
			}
		}
		if len(r.until) >= maxRefusals {
			return
		}
	}
	r.until[key] = now.Add(wait)
}

// wait is how long key's last refusal still holds at now; 0 when none.
func (r *refusals) wait(key string, now time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	u, ok := r.until[key]
	switch {
	case !ok:
		return 0
	case !u.After(now):
		delete(r.until, key)
		return 0
	}
	return u.Sub(now)
}

// rateLimited is the refusal of an event that may come after wait.
func rateLimited(wait time.Duration) *Error {
	secs := max(int((wait+time.Second-1)/time.Second), 1)
	e := Errorf(KindRateLimited, CodeRateLimited, "too many requests; retry in %d s", secs)
	e.RetryAfterSeconds = secs
	return e
}

// AllowNIn charges n events of limit to subject at once, in q: a broadcast
// of n faxes is n sends, so no batch gets past the owner's send bound.
//
// The rule, on the same bucket single events use: n events are admitted
// together when the bucket has room for all of them, and a batch larger
// than the burst only when the bucket is empty (it then owes n intervals,
// so the owner's later sends wait until those are paid back). It is
// GCRA with one event of n intervals and a burst of max(burst, n)/n such
// events, rounded down: never more generous than n single events would be.
func (s *Kernel) AllowNIn(ctx context.Context, q Queries, l Limit, subject string, n int) error {
	if n <= 1 {
		return s.AllowIn(ctx, q, l, subject)
	}
	r, ok := s.limits[l]
	if !ok {
		return fmt.Errorf("rate limit: unknown limit %q", l)
	}
	key := LimitKey(l, subject)
	ok, wait, err := q.AllowRate(ctx, key, s.now(), time.Duration(n)*r.Interval, max(r.Burst, n)/n)
	if err != nil {
		return fmt.Errorf("rate limit %s: %w", key, err)
	}
	if !ok {
		secs := max(int((wait+time.Second-1)/time.Second), 1)
		e := Errorf(KindRateLimited, CodeRateLimited, "too many faxes at once: this batch of %d counts as %d sends; retry in %d s", n, n, secs).With("recipients", n)
		e.RetryAfterSeconds = secs
		return e
	}
	return nil
}
