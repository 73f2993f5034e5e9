// Package cli is kubectl urutau (cmd/kubectl-urutau), also reachable as `hub members`, `hub
// status`, `hub join` and `hub leave`: a view of the fleet from the hub, and joining or leaving
// a member. Output follows kubectl's conventions (upper-case headers, <none>, AGE, -o wide|yaml|json,
// -n/-A); the exit code tells scripts the answer (see ExitOK and the rest).
package cli
