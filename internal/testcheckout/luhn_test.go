package testcheckout

import (
	"testing"
	"time"
)

func TestLuhn(t *testing.T) {
	for n, want := range map[string]bool{
		"4242424242424242": true,
		"4000000000000002": true,
		"378282246310005":  true, // Amex test number
		"79927398713":      true, // the textbook example
		"4242424242424241": false,
		"79927398710":      false,
		"0000000000000000": true,
	} {
		if got := luhnValid(n); got != want {
			t.Errorf("luhnValid(%s) = %v, want %v", n, got, want)
		}
	}
}

func TestExpiry(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for s, ok := range map[string]bool{
		"11/26":     true, // good through the end of its month
		"10/26":     false,
		"12/2030":   true,
		" 01 / 27 ": true,
		"1/27":      true,
		"00/27":     false,
		"13/27":     false,
		"12/270":    false,
		"12-27":     false,
		"":          false,
		"aa/bb":     false,
	} {
		if got := checkExpiry(s, now) == ""; got != ok {
			t.Errorf("checkExpiry(%q) accepted = %v, want %v", s, got, ok)
		}
	}
}
