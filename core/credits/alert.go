package credits

import (
	"context"
	"fmt"
	"strings"

	"github.com/faxhub/faxhub/core"
)

// MaxThresholdMicros bounds a low-balance threshold (100,000 USD): far
// above any real balance, far below an int64 overflow.
const MaxThresholdMicros = 100_000 * core.MicrosPerDollar

// Alert is an owner's low-balance alert of one mode, beside the balance it
// watches. With a threshold set, credits.low is written when a ledger
// entry takes the balance from at or above it to below it (Crossed).
type Alert struct {
	Mode     core.Mode `json:"mode"`
	Currency string    `json:"currency"`
	// Threshold is nil when the alert is off (the default).
	Threshold      *string `json:"threshold"`
	ThresholdCents *int64  `json:"thresholdCents"`
	// Balance is the available balance now; Below says it is under the
	// threshold already, so no crossing will come until it has been
	// topped up to the threshold again.
	Balance      string `json:"balance"`
	BalanceCents int64  `json:"balanceCents"`
	Below        bool   `json:"below"`
}

// ParseThreshold reads a threshold as the API takes it: a decimal USD
// amount to the cent, above zero and at most MaxThresholdMicros; nil (JSON
// null) turns the alert off.
func ParseThreshold(s *string) (*int64, error) {
	if s == nil {
		return nil, nil
	}
	bad := core.Errorf(core.KindInvalid, core.CodeInvalidRequest,
		"threshold must be a decimal USD amount above 0 and at most %s with at most two decimals, e.g. \"5.00\", or null to turn the alert off",
		core.FormatUSD(MaxThresholdMicros)).With("parameter", "threshold")
	v := strings.TrimSpace(*s)
	if _, frac, ok := strings.Cut(v, "."); ok && len(frac) > 2 {
		return nil, bad
	}
	m, err := core.ParseUSD(v)
	if err != nil || m <= 0 || m > MaxThresholdMicros {
		return nil, bad
	}
	return &m, nil
}

func alertOf(b *Balance) *Alert {
	presentBalance(b)
	a := &Alert{Mode: b.Mode, Currency: core.Currency, Balance: b.Available, BalanceCents: b.AvailableCents}
	if t := b.ThresholdMicros; t != nil {
		s, c := core.FormatUSD(*t), core.CentsDown(*t)
		a.Threshold, a.ThresholdCents, a.Below = &s, &c, b.AvailableMicros < *t
	}
	return a
}

// Alert returns p's low-balance alert in its mode (credits:read).
func (s *Service) Alert(ctx context.Context, p core.Principal) (*Alert, error) {
	if err := core.Authorize(p, core.OpGetCredits); err != nil {
		return nil, err
	}
	b, err := s.d.Store.GetBalance(ctx, p.OwnerID, p.Mode)
	if err != nil {
		return nil, fmt.Errorf("get credit alert: %w", err)
	}
	return alertOf(b), nil
}

// SetAlert sets p's low-balance threshold in its mode (ParseThreshold's
// form; nil turns it off) and returns the alert. It is the account's
// setting: API keys and the owner's console only. Setting it writes no
// event, even when the balance is below it already (Alert.Below says so).
func (s *Service) SetAlert(ctx context.Context, p core.Principal, threshold *string) (*Alert, error) {
	if err := core.Authorize(p, core.OpSetCreditAlert); err != nil {
		return nil, err
	}
	t, err := ParseThreshold(threshold)
	if err != nil {
		return nil, err
	}
	if err := s.d.Store.SetLowBalanceThreshold(ctx, p.OwnerID, p.Mode, t); err != nil {
		return nil, fmt.Errorf("set credit alert: %w", err)
	}
	b, err := s.d.Store.GetBalance(ctx, p.OwnerID, p.Mode)
	if err != nil {
		return nil, fmt.Errorf("get credit alert: %w", err)
	}
	return alertOf(b), nil
}
