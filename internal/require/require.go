// Package require decides what a test does when a part outside Go is
// missing (PostgreSQL, LibreOffice): `make test` skips and says why, while
// `make check` sets FAXHUB_REQUIRE_ALL=1 so that the same absence fails the
// gate instead of passing it silently.
package require

import (
	"os"
	"os/exec"
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

// Tool reports whether the program name is on PATH. Without it the
// caller leaves out the part of its test that needs it, which is logged
// here; under make check its absence fails the test instead.
func Tool(t testing.TB, name, hint string) bool {
	t.Helper()
	if _, err := exec.LookPath(name); err == nil {
		return true
	}
	if os.Getenv(EnvRequireAll) == "1" {
		t.Fatalf("%s is required by make check but missing: %s", name, hint)
	}
	t.Logf("%s is missing, leaving out what needs it (%s)", name, hint)
	return false
}
