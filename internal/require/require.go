// Package require decides what a test does when a part outside Go is
// missing (PostgreSQL, LibreOffice): `make test` skips and says why, while
// `make check` sets FAXHUB_REQUIRE_ALL=1 so that the same absence fails the
// gate instead of passing it silently.
package require

import (
	"os"
	"testing"
)

// EnvRequireAll makes Missing fail instead of skip.
const EnvRequireAll = "FAXHUB_REQUIRE_ALL"

// Missing stops the test because what is absent; hint says how to get it.
func Missing(t testing.TB, what, hint string) {
	t.Helper()
	if os.Getenv(EnvRequireAll) == "1" {
		t.Fatalf("%s is required by make check but missing: %s", what, hint)
	}
	t.Skipf("%s is missing, skipping (%s)", what, hint)
}
