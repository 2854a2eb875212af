//go:build !race

package queue_test

const raceEnabled = false
