// Package inventorytest is test support for the inventory packages: a scheme that knows
// ClusterProfiles and the ClusterProfile CRD as cluster-inventory-api ships it. Only tests import it.
package inventorytest

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	clusterinventoryv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/urutau-io/fleet/internal/testenv"
)

// Scheme is testenv.Scheme plus cluster-inventory-api's types.
func Scheme() *runtime.Scheme {
	s := testenv.Scheme()
	utilruntime.Must(clusterinventoryv1alpha1.AddToScheme(s))
	return s
}

// ClusterProfileCRDPath is the ClusterProfile CRD inside the cluster-inventory-api module that
// go.mod selects, so the tests install what the library ships rather than a copy that can drift.
func ClusterProfileCRDPath(ctx context.Context) (string, error) {
	var out, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/cluster-inventory-api")
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("finding the cluster-inventory-api module: %w: %s", err, stderr.String())
	}
	return filepath.Join(strings.TrimSpace(out.String()), "config", "crd", "bases",
		"multicluster.x-k8s.io_clusterprofiles.yaml"), nil
}

// InstallClusterProfileCRD installs the ClusterProfile CRD into the API server of cfg and waits
// until it is served.
func InstallClusterProfileCRD(ctx context.Context, cfg *rest.Config) error {
	path, err := ClusterProfileCRDPath(ctx)
	if err != nil {
		return err
	}
	_, err = envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{
		Paths:              []string{path},
		ErrorIfPathMissing: true,
		Scheme:             Scheme(),
	})
	if err != nil {
		return fmt.Errorf("installing %s: %w", path, err)
	}
	// Discovery can list the CRD a moment before its endpoint serves; wait for a real List so the
	// first Create of a test does not race it.
	c, err := client.New(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return c.List(ctx, &clusterinventoryv1alpha1.ClusterProfileList{}) == nil, nil
	})
}
