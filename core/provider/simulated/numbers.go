package simulated

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core/numbers"
)

// The simulated inventory of fax numbers: deterministic, so tests and docs
// can name them. Every number is in a range reserved for fiction: 555-01xx
// in real North American area codes, and 020 7946 0xxx in London (Ofcom's
// drama range). They never collide with the test destinations above
// (+1 212 555 0100…0106).

// FailingNumber is in the inventory, but ordering it fails: provisioning
// ends failed (the month paid returns as credits).
const FailingNumber = "+12125550199"

// provisionTime is how long a real number order takes before TimeScale.
const provisionTime = 30 * time.Second

type locality struct {
	country, prefix, areaCode, region, locality string
}

var localities = [...]locality{
	{"US", "+1212555", "212", "NY", "New York"},
	{"US", "+1415555", "415", "CA", "San Francisco"},
	{"US", "+1312555", "312", "IL", "Chicago"},
	{"US", "+1202555", "202", "DC", "Washington"},
	{"GB", "+44207946", "20", "England", "London"},
}

// inventoryLines are the last four digits every locality offers.
const firstLine, lastLine = 110, 189

// Inventory lists every number the simulator rents, in order.
func Inventory() []numbers.AvailableNumber {
	var out []numbers.AvailableNumber
	for _, l := range localities {
		for line := firstLine; line <= lastLine; line++ {
			out = append(out, numbers.AvailableNumber{E164: fmt.Sprintf("%s0%d", l.prefix, line), Country: l.country, Region: l.region, Locality: l.locality})
		}
		if l.prefix == "+1212555" {
			out = append(out, numbers.AvailableNumber{E164: FailingNumber, Country: l.country, Region: l.region, Locality: l.locality})
		}
	}
	return out
}

// SearchNumbers filters the inventory; the service leaves out numbers
// someone holds.
func (p *Provider) SearchNumbers(_ context.Context, q numbers.Search) ([]numbers.AvailableNumber, error) {
	var out []numbers.AvailableNumber
	for _, l := range localities {
		if q.Country != "" && q.Country != l.country {
			continue
		}
		if q.AreaCode != "" && q.AreaCode != l.areaCode {
			continue
		}
		if q.Locality != "" && !strings.HasPrefix(strings.ToLower(l.locality), strings.ToLower(q.Locality)) {
			continue
		}
		for _, n := range Inventory() {
			if !strings.HasPrefix(n.E164, l.prefix) || (q.Number != "" && n.E164 != q.Number) {
				continue
			}
			out = append(out, n)
			if q.Limit > 0 && len(out) >= q.Limit*4 {
				// Enough to fill a page after held numbers are left out.
				return out, nil
			}
		}
	}
	return out, nil
}

// OrderNumber provisions a number after provisionTime (scaled); the order
// reference is derived from the number id, so ordering again after a crash
// is the same order.
func (p *Provider) OrderNumber(ctx context.Context, o numbers.Order) (numbers.OrderResult, error) {
	sum := sha256.Sum256([]byte(o.NumberID))
	ref := "simord_" + hex.EncodeToString(sum[:8])
	res := numbers.OrderResult{Status: numbers.Active, OrderRef: ref, ProviderRef: "simnum_" + hex.EncodeToString(sum[8:16])}
	found := false
	for _, n := range Inventory() {
		found = found || n.E164 == o.E164
	}
	if !found || o.E164 == FailingNumber {
		res = numbers.OrderResult{Status: numbers.Failed, OrderRef: ref, FailureReason: "the carrier could not port this number to the fax service"}
	}
	d := p.scaled(provisionTime)
	if d <= 0 {
		return res, nil
	}
	if p.reportNumber == nil {
		return numbers.OrderResult{}, errors.New("simulated provider: no ReportNumber function to deliver number orders with")
	}
	if err := p.reportNumber(ctx, p.now().Add(d), Name, ref, res); err != nil {
		return numbers.OrderResult{}, fmt.Errorf("simulated order of %s: schedule its outcome: %w", o.E164, err)
	}
	return numbers.OrderResult{Status: numbers.Pending, OrderRef: ref}, nil
}

// ReleaseNumber gives a simulated number back; nothing to do.
func (p *Provider) ReleaseNumber(context.Context, *numbers.Number) error { return nil }

var _ numbers.Provider = (*Provider)(nil)
