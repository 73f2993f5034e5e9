// Package ssa Server-Side Applies the hub's objects into one member cluster.
//
// One Request per object (ServiceAccount, Role, StatefulSet, Unstructured and the others build
// them from the renderer's apply configurations) goes through the Applier, the one entry point:
// a field manager per member (FieldManagerFor), forced ownership, and no request at all when the
// apply would change nothing (the fields our manager owns already hold it, or these exact bytes
// were applied and the object has not changed since). The member's cache is read first and the
// member itself only where the cache cannot decide (Request.CacheMayLag, a miss or a difference
// on an object applied before). A Request carries the checks the caller needs before a write
// (Guard, BeforeWrite) and before a create (BeforeCreate, ConfirmAbsent).
//
// EchoFilter recognises the watch events of the hub's own writes, so that they do not bring a
// pipeline back for nothing. The package's metrics count the applies sent and skipped per member
// and kind; ForgetMemberSeries drops a departed member's.
package ssa
