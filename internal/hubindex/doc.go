// Package hubindex finds, in the hub's cache, the pipelines a change concerns: those placed on
// or recorded in a member (On), those an inventory entry's change brings back (ForEntry), those
// a ReaderLease names or that wait for it (OfLease, through the PipelineLease index), and those
// of a hub namespace (In). The pipeline controller's event handlers, its health checks and its
// own lease writes ask it; it reads the cache and writes nothing.
package hubindex
