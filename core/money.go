package core

import (
	"fmt"
	"strconv"
	"strings"
)

// Money is int64 micro-USD everywhere inside faxhub; cents appear only at
// payment boundaries and decimal strings only in responses.
const (
	MicrosPerCent   = 10_000
	MicrosPerDollar = 1_000_000
	Currency        = "usd"
)

// ParseUSD parses a non-negative decimal dollar amount ("0.07", "25") into
// micro-USD.
func ParseUSD(s string) (int64, error) {
	s = strings.TrimSpace(s)
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" && frac == "" || strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") {
		return 0, fmt.Errorf("invalid amount %q", s)
	}
	if len(frac) > 6 {
		return 0, fmt.Errorf("amount %q has more than six decimals", s)
	}
	var w int64
	if whole != "" {
		v, err := strconv.ParseInt(whole, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("invalid amount %q", s)
		}
		if v > 1_000_000_000 {
			return 0, fmt.Errorf("amount %q is too large", s)
		}
		w = v
	}
	var f int64
	if frac != "" {
		v, err := strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("invalid amount %q", s)
		}
		f = v
	}
	return w*MicrosPerDollar + f, nil
}

// FormatUSD renders micro-USD as a decimal string with at least two
// decimals ("0.07", "-1.50", "0.0125").
func FormatUSD(m int64) string {
	sign := ""
	if m < 0 {
		sign, m = "-", -m
	}
	s := fmt.Sprintf("%s%d.%06d", sign, m/MicrosPerDollar, m%MicrosPerDollar)
	for strings.HasSuffix(s, "0") && len(s)-strings.IndexByte(s, '.') > 3 {
		s = s[:len(s)-1]
	}
	return s
}

// CentsUp converts micro-USD to cents, rounding up: a charge is never below
// the quoted price.
func CentsUp(m int64) int64 {
	if m <= 0 {
		return -((-m) / MicrosPerCent)
	}
	return (m + MicrosPerCent - 1) / MicrosPerCent
}

// CentsDown converts micro-USD to cents, rounding down (toward minus
// infinity): a balance shown in cents never shows money the owner does
// not have (a 0.001 USD grant is 0 cents, not 1).
func CentsDown(m int64) int64 {
	if m < 0 {
		return -CentsUp(-m)
	}
	return m / MicrosPerCent
}
