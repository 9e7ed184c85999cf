// Package window adapts a resumable session's window (the bytes it may have
// pushed and not yet persisted) to its path, one round trip at a time, as
// TCP's and BBR's start-up do.
//
// A round starts at an acknowledgement and ends once everything that was
// pushed then is acknowledged: about a round trip while the window limits
// the upload. Each round in which the window held the Writer back
// quadruples the window (up to its cap), while the acknowledged rate keeps
// rising: the path's bandwidth x round trip is not filled yet, and an
// object of a few windows must not spend its life ramping up. Once two such
// rounds in a row brought no rise of a quarter over the best rate, more in
// flight would only queue: growth stops, and the window settles where the
// best rate was measured (not below its floor). A Writer that finds the
// pool's budget spent halves the window (down to its floor) and, since the
// budget and not the path limits it, does not grow it again.
package window
