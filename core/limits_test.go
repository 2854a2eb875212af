package core_test

import (
	"strings"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/internal/testenv"
)

// TestLimitsTable: every named operation has one row with its documented
// default (docs/limits.md), a subject, and its stored key prefix (the
// limiter keys used before the table, so buckets carry over).
func TestLimitsTable(t *testing.T) {
	for _, tc := range []struct {
		limit     core.Limit
		key       string
		rate      core.Rate
		perClient bool
	}{
		{core.LimitSend, "send", core.Rate{Interval: 100 * time.Millisecond, Burst: 20}, false},
		{core.LimitUpload, "upload", core.Rate{Interval: 50 * time.Millisecond, Burst: 100}, false},
		{core.LimitTestUpload, "upload-test", core.Rate{Interval: 100 * time.Millisecond, Burst: 50}, false},
		{core.LimitNumberSearch, "number-search", core.Rate{Interval: 500 * time.Millisecond, Burst: 10}, false},
		{core.LimitSimulateInbound, "simulate-inbound", core.Rate{Interval: time.Second, Burst: 20}, false},
		{core.LimitAgentEnroll, "agent-enroll", core.Rate{Interval: 30 * time.Second, Burst: 10}, false},
		{core.LimitAgentClaimAttempt, "agent-claim-attempt", core.Rate{Interval: 30 * time.Second, Burst: 5}, false},
		{core.LimitHostCreate, "host-create", core.Rate{Interval: 30 * time.Second, Burst: 10}, false},
		{core.LimitHostRegister, "hostagent:register", core.Rate{Interval: 6 * time.Second, Burst: 20}, false},
		{core.LimitAgentExecute, "hostagent:execute", core.Rate{Interval: 500 * time.Millisecond, Burst: 120}, false},
		{core.LimitConsoleMail, "console-mail", core.Rate{Interval: 10 * time.Minute, Burst: 3}, false},
		{core.LimitWebhookManual, "webhook-manual", core.Rate{Interval: 3 * time.Second, Burst: 20}, false},
		{core.LimitPreview, "preview", core.Rate{Interval: time.Second, Burst: 20}, false},
		{core.LimitPageImage, "page-image", core.Rate{Interval: 100 * time.Millisecond, Burst: 100}, false},
		{core.LimitDestinationCheck, "destination-check", core.Rate{Interval: 200 * time.Millisecond, Burst: 30}, false},
		{core.LimitOAuthRegister, "oauth-register", core.Rate{Interval: 6 * time.Minute, Burst: 10}, true},
		{core.LimitOAuthMetadataFetch, "oauth-cimd-fetch", core.Rate{Interval: 6 * time.Second, Burst: 10}, true},
		{core.LimitMachineValidate, "public:machine-validate", core.Rate{Interval: time.Second, Burst: 60}, true},
		{core.LimitMachineFax, "public:machine-fax", core.Rate{Interval: time.Second, Burst: 60}, true},
		{core.LimitHostEnroll, "public:host_enroll", core.Rate{Interval: time.Second, Burst: 60}, true},
		{core.LimitStripeTestMint, "public:stripe-test-mint", core.Rate{Interval: time.Second, Burst: 60}, true},
	} {
		t.Run(string(tc.limit), func(t *testing.T) {
			info, ok := core.Limits()[tc.limit]
			switch {
			case !ok:
				t.Fatal("not in the table")
			case info.Rate != tc.rate:
				t.Errorf("default %+v, want %+v", info.Rate, tc.rate)
			case info.PerClient != tc.perClient:
				t.Errorf("PerClient %v, want %v", info.PerClient, tc.perClient)
			case info.Per == "":
				t.Error("no subject named")
			}
			if got := core.LimitKey(tc.limit, "sub:ject"); got != tc.key+":sub:ject" {
				t.Errorf("key %q, want %q", got, tc.key+":sub:ject")
			}
		})
	}
	if n := len(core.Limits()); n != 21 {
		t.Errorf("%d limits in the table; add the new ones to this test", n)
	}
	// The table is a fresh copy: a caller cannot change the defaults.
	core.Limits()[core.LimitSend] = core.LimitInfo{}
	if core.Limits()[core.LimitSend].Burst != 20 {
		t.Fatal("the defaults changed through a returned table")
	}
}

// TestLimitOverrides: core.Config.Limits replaces a default field by field;
// a mistake in it stops start-up.
func TestLimitOverrides(t *testing.T) {
	e := testenv.New(t, testenv.WithoutWorkers(), testenv.WithConfig(func(c *services.Config) {
		c.SetLimit(core.LimitSend, core.Rate{Burst: 7})
		c.SetLimit(core.LimitHostCreate, core.Rate{Interval: time.Hour})
		c.SetLimit(core.LimitConsoleMail, core.Rate{Interval: time.Minute, Burst: 1})
	}))
	for _, tc := range []struct {
		limit core.Limit
		want  core.Rate
	}{
		{core.LimitSend, core.Rate{Interval: 100 * time.Millisecond, Burst: 7}},
		{core.LimitHostCreate, core.Rate{Interval: time.Hour, Burst: 10}},
		{core.LimitConsoleMail, core.Rate{Interval: time.Minute, Burst: 1}},
		{core.LimitUpload, core.Rate{Interval: 50 * time.Millisecond, Burst: 100}},
	} {
		if got := e.Svc.Kernel.Rate(tc.limit); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.limit, got, tc.want)
		}
	}
	for _, tc := range []struct {
		name   string
		limits map[core.Limit]core.Rate
		want   string
	}{
		{"unknown limit", map[core.Limit]core.Rate{"nope": {Burst: 1}}, `unknown rate limit "nope"`},
		{"negative burst", map[core.Limit]core.Rate{core.LimitSend: {Burst: -1}}, "must not be negative"},
		{"negative interval", map[core.Limit]core.Rate{core.LimitSend: {Interval: -time.Second}}, "must not be negative"},
	} {
		_, err := core.NewKernel(core.Config{BaseURL: "http://faxhub.test", Limits: tc.limits}, core.Deps{Store: e.Store})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestAllow: the kernel counts a limit per subject under
// "<limit>:<subject>"; a refusal is KindRateLimited with the seconds to
// wait, and the allowance refills with time (injected clock).
func TestAllow(t *testing.T) {
	e, clk := testenv.Clocked(t, testenv.WithConfig(func(c *services.Config) {
		c.SetLimit(core.LimitHostCreate, core.Rate{Interval: 10 * time.Second, Burst: 2})
	}))
	k := e.Svc.Kernel
	for i := range 2 {
		if err := k.Allow(t.Context(), core.LimitHostCreate, "own_a"); err != nil {
			t.Fatalf("event %d of the burst: %v", i+1, err)
		}
	}
	err := k.Allow(t.Context(), core.LimitHostCreate, "own_a")
	if e := core.AsError(err); err == nil || e.Kind != core.KindRateLimited || e.Code != core.CodeRateLimited || e.RetryAfterSeconds != 10 {
		t.Fatalf("over the burst: %v (kind %v, code %q, retry %d)", err, e.Kind, e.Code, e.RetryAfterSeconds)
	}
	// The bucket is stored under the limit's key for that subject.
	if ok, _, err := e.Store.AllowRate(t.Context(), "host-create:own_a", clk.Now(), 10*time.Second, 2); err != nil || ok {
		t.Fatalf("key host-create:own_a not spent: ok %v, %v", ok, err)
	}
	// Another subject, and another limit for the same subject, count apart.
	if err := k.Allow(t.Context(), core.LimitHostCreate, "own_b"); err != nil {
		t.Fatalf("another subject: %v", err)
	}
	if err := k.Allow(t.Context(), core.LimitAgentEnroll, "own_a"); err != nil {
		t.Fatalf("another limit: %v", err)
	}
	clk.Advance(10 * time.Second)
	if err := k.Allow(t.Context(), core.LimitHostCreate, "own_a"); err != nil {
		t.Fatalf("after the interval: %v", err)
	}
	// A limit missing from the table is never let through.
	if err := k.Allow(t.Context(), "nope", "own_a"); err == nil || core.ErrorKind(err) != core.KindInternal {
		t.Fatalf("unknown limit: %v", err)
	}
}

// TestPeek: Peek answers from the refusals this process has seen, charges
// nothing, and never refuses what Allow would admit.
func TestPeek(t *testing.T) {
	e, clk := testenv.Clocked(t, testenv.WithConfig(func(c *services.Config) {
		c.SetLimit(core.LimitHostCreate, core.Rate{Interval: 10 * time.Second, Burst: 2})
	}))
	k := e.Svc.Kernel
	peek := func(subject string, wantRetry int) {
		t.Helper()
		for range 2 { // charging nothing, it answers the same twice
			err := k.Peek(t.Context(), core.LimitHostCreate, subject)
			switch {
			case wantRetry == 0 && err != nil:
				t.Fatalf("Peek(%s) = %v, want nil", subject, err)
			case wantRetry > 0 && (core.ErrorCode(err) != core.CodeRateLimited || core.AsError(err).RetryAfterSeconds != wantRetry):
				t.Fatalf("Peek(%s) = %v, want rate_limited, retry in %d s", subject, err, wantRetry)
			}
		}
	}
	peek("own_a", 0)
	for range 2 {
		if err := k.Allow(t.Context(), core.LimitHostCreate, "own_a"); err != nil {
			t.Fatal(err)
		}
	}
	peek("own_a", 0) // spent, but no refusal seen yet: the charge decides
	if err := k.Allow(t.Context(), core.LimitHostCreate, "own_a"); core.ErrorCode(err) != core.CodeRateLimited {
		t.Fatalf("over the burst: %v", err)
	}
	peek("own_a", 10)
	peek("own_b", 0)
	clk.Advance(4 * time.Second)
	peek("own_a", 6)
	clk.Advance(6 * time.Second)
	peek("own_a", 0)
	if err := k.Allow(t.Context(), core.LimitHostCreate, "own_a"); err != nil {
		t.Fatalf("after the wait Peek gave: %v", err)
	}
	if err := k.Peek(t.Context(), "nope", "own_a"); err == nil || core.ErrorKind(err) != core.KindInternal {
		t.Fatalf("unknown limit: %v", err)
	}
}

// TestAllowN: a batch of n is n events of the same bucket, admitted
// together or not at all; one larger than the burst needs the bucket
// empty and leaves the owner's next sends waiting.
func TestAllowN(t *testing.T) {
	e, clk := testenv.Clocked(t, testenv.WithConfig(func(c *services.Config) {
		c.SetLimit(core.LimitSend, core.Rate{Interval: time.Second, Burst: 10})
	}))
	k, ctx := e.Svc.Kernel, t.Context()
	for _, tc := range []struct {
		name    string
		advance time.Duration
		n       int
		ok      bool
	}{
		{"3 of 10", 0, 3, true},
		{"3 more", 0, 3, true},
		{"3 more: 9 of 10", 0, 3, true},
		{"3 more would be 12", 0, 3, false},
		{"one alone fits", 0, 1, true},
		{"bucket full", 0, 1, false},
		{"drained", 10 * time.Second, 0, true},
		{"over the burst, empty bucket", 0, 25, true},
		{"a single send waits for the batch", 0, 1, false},
		{"paid back but one", 15 * time.Second, 1, false},
		{"paid back", time.Second, 1, true},
	} {
		clk.Advance(tc.advance)
		if tc.n == 0 {
			continue
		}
		err := k.AllowNIn(ctx, e.Store, core.LimitSend, "own_a:test", tc.n)
		if (err == nil) != tc.ok {
			t.Fatalf("%s: %v, want ok %v", tc.name, err, tc.ok)
		}
		if err != nil && core.ErrorCode(err) != core.CodeRateLimited {
			t.Fatalf("%s: %v", tc.name, err)
		}
	}
}
