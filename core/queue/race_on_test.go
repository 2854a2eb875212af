//go:build race

package queue_test

// raceEnabled: modernc's SQLite runs many times slower under the race
// detector, so the long throughput variants are skipped there.
const raceEnabled = true
