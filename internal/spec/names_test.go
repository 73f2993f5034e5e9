package spec

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// TestWorkerGroupPrefix: urutau's WorkerGroupPrefix (spec/spec.go @0b3b110, dnsLabel). The
// hashed names were computed apart from this code: the first 43 characters, '-', and the first 8
// hex digits of sha256(name).
func TestWorkerGroupPrefix(t *testing.T) {
	long := strings.Repeat("a", 60)
	for _, tt := range []struct{ pipeline, target, want string }{
		{"e2e", "raw.orders", "e2e-raw-orders"},
		{"shop", "raw-orders", "shop-raw-orders"}, // the same as raw.orders: Parse refuses both in one pipeline
		{"-Shop_", "..Raw..Orders..", "shop-raw-orders"},
		{"9shop", "orders", "w-9shop-orders"},
		{"", "", "w"},
		{"shop", long, "shop-" + long[:38] + "-3bc9333b"},
		{"Loja_São", "analytics.customer_lifetime_value_by_region_and_quarter", "loja-s-o-analytics-customer-lifetime-value--1da96977"},
		{"shop", strings.Repeat("c", 47), "shop-" + strings.Repeat("c", 47)},
	} {
		got := WorkerGroupPrefix(tt.pipeline, tt.target)
		if got != tt.want {
			t.Errorf("WorkerGroupPrefix(%q, %q) = %q, want %q", tt.pipeline, tt.target, got, tt.want)
		}
		if len(got) > MaxWorkerGroupName || len(validation.IsDNS1035Label(got)) > 0 {
			t.Errorf("WorkerGroupPrefix(%q, %q) = %q: not a DNS-1035 label of at most %d", tt.pipeline, tt.target, got, MaxWorkerGroupName)
		}
	}
}

func TestWorkerPodTemplateKey(t *testing.T) {
	for target, want := range map[string]string{
		"raw.orders":                "worker-pod-template.raw.orders.yaml",
		DefaultWorkerTemplateTarget: "worker-pod-template._default.yaml",
	} {
		if got := WorkerPodTemplateKey(target); got != want {
			t.Errorf("WorkerPodTemplateKey(%q) = %q, want %q", target, got, want)
		}
	}
}
