package core

import "time"

// Clock is a service clock: every feature stamps and compares times with
// one, so one clock governs a process and its tests (which replace it).
type Clock func() time.Time

// Now is the time in UTC at the stores' microsecond precision, so a stored
// value and a later read of it show the same instant.
func (c Clock) Now() time.Time {
	if c == nil {
		return time.Now().UTC().Truncate(time.Microsecond)
	}
	return c().UTC().Truncate(time.Microsecond)
}

// TouchEvery bounds last-used writes (sessions, API keys, grants, agent
// registrations, hosts and their agents) to one per minute per
// credential.
const TouchEvery = time.Minute

// RFC3339 is how every agent door shows an instant: RFC 3339 in UTC, to
// the second.
func RFC3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }
