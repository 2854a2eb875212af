package machine_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/machine"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/internal/testenv"
)

// machineBurst is the per-address allowance these tests run with: a
// burst of machineBurst, then one more a minute (the clock stands still
// unless a test moves it).
const machineBurst = 3

func withMachineBurst(c *services.Config, _ *services.Deps) {
	c.SetLimit(core.LimitMachineFax, core.Rate{Interval: time.Minute, Burst: machineBurst})
}

func from(r machine.FaxRequest, addr string) machine.FaxRequest {
	r.ClientIP = addr
	return r
}

// TestMachineRateLimit: every request counts against its address, however
// it ends (a 402, an error, a request_id already recorded, a paid retry),
// and the limit's 429 comes before any other answer. A request without a
// credential is charged in the transaction that records its request_id
// (issue 32), so a refused one records nothing.
func TestMachineRateLimit(t *testing.T) {
	m := newMachineEnv(t, withMachineBurst)
	const addr = "192.0.2.7"
	refused := func(name string, r machine.FaxRequest) {
		t.Helper()
		_, err := m.svc.Machine.Fax(ctx, from(r, addr))
		testenv.WantCode(t, err, core.CodeRateLimited)
		if core.AsError(err).RetryAfterSeconds != 60 {
			t.Fatalf("%s: Retry-After %d s, want 60", name, core.AsError(err).RetryAfterSeconds)
		}
	}
	recorded := func(id string) int {
		return m.count(t, "SELECT COUNT(*) FROM machine_requests WHERE request_id = ?", id)
	}

	// A burst of fresh requests, each recorded with its charge.
	var first *machine.FaxResult
	for i := range machineBurst {
		res := m.fax(t, from(machineBody(deliverable, fmt.Sprintf("rl-%d", i), 1), addr))
		wantRefusal(t, res, machine.PaymentRequired)
		if i == 0 {
			first = res
		}
	}
	// Past it: refused before anything else, recording nothing; a broken
	// document or a taken request_id is refused by the limit first.
	refused("fresh", machineBody(deliverable, "rl-over", 1))
	refused("broken document", brokenPDF(machineBody(deliverable, "rl-broken", 1)))
	refused("taken request_id", machineBody(deliverable, "rl-0", 1))
	refused("paid retry", func() machine.FaxRequest {
		r := machineBody(deliverable, "rl-0", 1)
		r.Credential = credential(challenge(t, first, "stripe"), m.spt(t, "pm_card_visa"))
		return r
	}())
	if n := recorded("rl-over"); n != 0 {
		t.Fatalf("a refused request recorded %d rows", n)
	}
	// Other addresses are not affected.
	wantRefusal(t, m.fax(t, from(machineBody(deliverable, "rl-other", 1), "192.0.2.8")), machine.PaymentRequired)

	// One event drains a minute. Each way a request can end spends it:
	// the next fresh request is refused.
	for name, r := range map[string]machine.FaxRequest{
		"a broken document":        brokenPDF(machineBody(deliverable, "rl-broken", 1)),
		"an invalid destination":   machineBody("+1", "rl-bad-to", 1),
		"its request_id's row":     machineBody(deliverable, "rl-1", 1),
		"another body, same id":    machineBody(deliverable, "rl-1", 2),
		"an unreadable credential": unreadable(machineBody(deliverable, "rl-2", 1)),
		"an invalid request_id":    machineBody(deliverable, "", 1),
	} {
		m.clk.Advance(time.Minute)
		res, err := m.svc.Machine.Fax(ctx, from(r, addr))
		if core.ErrorCode(err) == core.CodeRateLimited {
			t.Fatalf("%s: refused by the limit after a minute", name)
		}
		if err == nil && res.Order != nil {
			t.Fatalf("%s: paid", name)
		}
		refused("after "+name, machineBody(deliverable, "rl-next", 1))
	}
	if n := recorded("rl-broken") + recorded("rl-bad-to") + recorded("rl-next"); n != 0 {
		t.Fatalf("refused requests recorded %d rows", n)
	}

	// A paid retry is charged as it comes, and pays (the first challenges
	// have expired by now: the request_id's row offers fresh ones).
	m.clk.Advance(time.Minute)
	r := from(machineBody(deliverable, "rl-0", 1), addr)
	live := m.fax(t, r)
	m.clk.Advance(time.Minute)
	r.Credential = credential(challenge(t, live, "stripe"), m.spt(t, "pm_card_visa"))
	if res := m.fax(t, r); res.Order == nil {
		t.Fatalf("paid retry: %+v", res.Refusal)
	}
	refused("after the paid retry", machineBody(deliverable, "rl-next", 1))
}

// TestMachineRateLimitConcurrent: fresh requests of one address racing
// past the early check are each charged in their own recording
// transaction; exactly the burst is recorded, the rest are 429s.
func TestMachineRateLimitConcurrent(t *testing.T) {
	m := newMachineEnv(t, withMachineBurst)
	const n = 12
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = m.svc.Machine.Fax(ctx, from(machineBody(deliverable, fmt.Sprintf("race-%d", i), 1), "192.0.2.9"))
		})
	}
	wg.Wait()
	admitted := 0
	for i, err := range errs {
		switch {
		case err == nil:
			admitted++
		case core.ErrorCode(err) == core.CodeRateLimited:
		default:
			t.Fatalf("request %d: %v", i, err)
		}
	}
	rows := m.count(t, "SELECT COUNT(*) FROM machine_requests WHERE request_id LIKE 'race-%'")
	if admitted != machineBurst || rows != machineBurst {
		t.Fatalf("%d answered with challenges and %d recorded of %d racing requests; want %d", admitted, rows, n, machineBurst)
	}
	// The limit counted them: nothing more is admitted.
	_, err := m.svc.Machine.Fax(ctx, from(machineBody(deliverable, "race-late", 1), "192.0.2.9"))
	testenv.WantCode(t, err, core.CodeRateLimited)
}
