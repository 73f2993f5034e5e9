// Package faults is the fault-injection suite of the hub (`make test-faults`): a local fleet of
// real control planes (internal/localfleet: hub + two members with kwok nodes, the hub binary run
// as a child process) in which member API servers, hub processes and credentials fail while
// pipelines roll out. Every spec asserts the state of the members (objects, UID labels, managed
// fields, coordinator pods) and counts requests from the API servers' own metrics, never calls.
package faults
