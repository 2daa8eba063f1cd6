//go:build race

package main

// raceEnabled makes TestMain build the sentry under test with -race too.
const raceEnabled = true
