//go:build race

package app_test

// raceEnabled: the race detector's shadow memory and slower allocation
// make memory measurements meaningless.
const raceEnabled = true
