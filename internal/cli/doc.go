// Package cli is kubectl urutau (cmd/kubectl-urutau), also reachable as `hub members`, `hub
// status`, `hub join` and `hub leave`: a view of the fleet from the hub, and joining or leaving
// a member. It is built as kubectl's own commands are: cobra, kubectl's connection flags
// (k8s.io/cli-runtime's ConfigFlags: --context, --as, --server, --token, --request-timeout...)
// and its printers (a table, -o wide|json|yaml|name|jsonpath|go-template|custom-columns, a List
// of view objects for many). A command takes only the flags it uses; the exit code tells scripts
// the answer (see ExitOK and the rest).
package cli
