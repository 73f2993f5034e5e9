package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/urutau-io/fleet/internal/fence"
)

// leaseReader reads the fence Lease with plain GETs: a GET without a resourceVersion is a quorum
// read, which is what dates a renewal (internal/fence). A watch would not do: its events say
// nothing about when they were written relative to a request of ours.
type leaseReader struct {
	client *http.Client
	url    string
	o      fence.CommandLine
}

func newLeaseReader(o fence.CommandLine) (*leaseReader, error) {
	cfg, err := restConfig(o.Kubeconfig)
	if err != nil {
		return nil, err
	}
	// The deadline is per request (the context's), never the client's: a slow answer must not
	// outlive the poll that waits for it.
	cfg.Timeout = 0
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the API client: %w", err)
	}
	u, err := url.JoinPath(cfg.Host, "apis/coordination.k8s.io/v1/namespaces", o.Namespace, "leases", o.Name)
	if err != nil {
		return nil, fmt.Errorf("the Lease URL from host %q: %w", cfg.Host, err)
	}
	return &leaseReader{client: hc, url: u, o: o}, nil
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster credentials (run in a pod, or pass --kubeconfig): %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %q: %w", kubeconfig, err)
	}
	return cfg, nil
}

// leaseJSON is the part of a Lease the fence reads.
type leaseJSON struct {
	Spec struct {
		HolderIdentity *string `json:"holderIdentity"`
		RenewTime      *string `json:"renewTime"`
	} `json:"spec"`
}

// token reads the Lease and returns its renewal token: spec.renewTime as written, compared and
// never parsed; "" when the Lease does not exist, has no renewTime, or is held for someone else.
// Any other answer, or none, is an error: that read tells nothing.
func (l *leaseReader) token(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.url, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := l.client.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("reading the Lease: %w", err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return "", nil
	default:
		return "", fmt.Errorf("reading the Lease: HTTP %d: %.200s", resp.StatusCode, body)
	}
	var lease leaseJSON
	if err := json.Unmarshal(body, &lease); err != nil {
		return "", fmt.Errorf("decoding the Lease: %w", err)
	}
	s, holder := lease.Spec, ""
	if s.HolderIdentity != nil {
		holder = *s.HolderIdentity
	}
	if s.RenewTime == nil || !l.o.Counts(holder) {
		return "", nil
	}
	return *s.RenewTime, nil
}
