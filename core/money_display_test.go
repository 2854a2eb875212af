package core_test

import (
	"testing"

	"github.com/faxhub/faxhub/core"
)

func TestCentsRounding(t *testing.T) {
	for _, c := range []struct{ micros, down, up int64 }{
		{0, 0, 0}, {1_000, 0, 1}, {9_999, 0, 1}, {10_000, 1, 1}, {10_001, 1, 2},
		{-1_000, -1, 0}, {-10_000, -1, -1}, {-10_001, -2, -1},
	} {
		if got := core.CentsDown(c.micros); got != c.down {
			t.Errorf("CentsDown(%d) = %d, want %d", c.micros, got, c.down)
		}
		if got := core.CentsUp(c.micros); got != c.up {
			t.Errorf("CentsUp(%d) = %d, want %d", c.micros, got, c.up)
		}
	}
}
