package members

import (
	"context"
	"errors"
	"net"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// IsUnreachable tells an error that says "the member did not answer" from one the member
// answered with.
func IsUnreachable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, multicluster.ErrClusterNotFound) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrDown) || errors.Is(err, ErrOtherCluster) ||
		errors.Is(err, syscall.ECONNREFUSED) || utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) ||
		utilnet.IsProbableEOF(err) {
		return true
	}
	if apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsServiceUnavailable(err) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	var opErr *net.OpError
	return errors.As(err, &opErr)
}

// ErrDown is the error of a member skipped because its last check found it not answering;
// isUnreachable recognises it.
var ErrDown = errors.New("does not answer")

// IsTimeout tells whether err is a request that ran out of time: the member's part of the
// reconcile hit --member-timeout, or the connection timed out.
func IsTimeout(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}
