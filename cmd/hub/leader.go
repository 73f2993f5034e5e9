package main

import (
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"

	"github.com/urutau-io/fleet/internal/memberwork"
)

// The leader election's timing: controller-runtime's defaults, written down because the fence
// depends on them (a replica writes to members only within renewDeadline of its last renewal).
var (
	leaseDuration = 15 * time.Second
	renewDeadline = 10 * time.Second
	retryPeriod   = 2 * time.Second
)

// leaderLock builds the leader-election lock as controller-runtime would (a Lease named
// leaderElectionID in ns, identity hostname_uuid, events on it), wrapped in a memberwork.LeaderFence.
func leaderLock(cfg *rest.Config, scheme *runtime.Scheme, ns string) (*memberwork.LeaderFence, error) {
	host, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("naming the leader-election identity: %w", err)
	}
	cfg = rest.AddUserAgent(rest.CopyConfig(cfg), "leader-election")
	// One hung request must not cost the lease (controller-runtime's heuristic).
	cfg.Timeout = max(renewDeadline/2, time.Second)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the leader-election client: %w", err)
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events(ns)})
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, ns, leaderElectionID, cs.CoreV1(), cs.CoordinationV1(),
		resourcelock.ResourceLockConfig{
			Identity:      host + "_" + string(uuid.NewUUID()),
			EventRecorder: broadcaster.NewRecorder(scheme, corev1.EventSource{Component: leaderElectionID}),
		})
	if err != nil {
		return nil, fmt.Errorf("building the leader-election lock: %w", err)
	}
	return &memberwork.LeaderFence{Interface: lock, RenewDeadline: renewDeadline}, nil
}

// lockOf is the lock for manager.Options: nil without leader election (an interface holding a
// nil pointer would not read as nil there).
func lockOf(f *memberwork.LeaderFence) resourcelock.Interface {
	if f == nil {
		return nil
	}
	return f
}
