//go:build race

package pdf

// raceEnabled reports a -race build, whose shadow memory does not fit
// under the worker's address-space limit.
const raceEnabled = true
