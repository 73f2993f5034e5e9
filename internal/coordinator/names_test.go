package coordinator

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestWorkerGroupPrefix(t *testing.T) {
	long := strings.Repeat("a", 60)
	tests := []struct {
		pipeline, target, want string
	}{
		{"e2e", "raw.orders", "e2e-raw-orders"}, // the reference's own example
		{"shop", "raw.orders", "shop-raw-orders"},
		{"Shop_DB", "raw.Orders", "shop-db-raw-orders"},
		{"Shop_DB", "9lives", "shop-db-9lives"}, // the joined string does not start with a digit
		{"9shop", "orders", "w-9shop-orders"},
		{"", "9lives", "w-9lives"}, // "-9lives" trims to "9lives"
		{"a", "b--c__d", "a-b-c-d"},
		{"shop", "größe", "shop-gr-e"},
		{"", "", "w"},
		{"__", "..", "w"},
		// Longer than 52: the first 43 characters, '-', and 8 hex digits of the SHA-256 of the
		// whole name (urutau spec/spec.go @0b3b110, dnsLabel), so the name stays unique.
		{"shop", long, "shop-" + long[:38] + "-3bc9333b"},
		{strings.Repeat("b", 51), "x", strings.Repeat("b", 43) + "-5132b342"},
		{"1" + long, "x", "w-1" + long[:40] + "-823c10da"},
		// 43 characters that end in '-' keep it: a double dash, as urutau's name has.
		{"Loja_São", "analytics.customer_lifetime_value_by_region_and_quarter", "loja-s-o-analytics-customer-lifetime-value--1da96977"},
		// Exactly 52 is kept whole.
		{"shop", strings.Repeat("c", 47), "shop-" + strings.Repeat("c", 47)},
	}
	for _, tt := range tests {
		got := WorkerGroupPrefix(tt.pipeline, tt.target)
		if got != tt.want {
			t.Errorf("WorkerGroupPrefix(%q, %q) = %q, want %q", tt.pipeline, tt.target, got, tt.want)
		}
		if len(got) > 52 {
			t.Errorf("WorkerGroupPrefix(%q, %q) is %d long, want <= 52", tt.pipeline, tt.target, len(got))
		}
		if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
			t.Errorf("WorkerGroupPrefix(%q, %q) = %q is not a DNS label: %v", tt.pipeline, tt.target, got, errs)
		}
	}
	// Two long targets that share their first 43 characters get two worker groups: a cut name
	// would give both tables one StatefulSet.
	a, b := WorkerGroupPrefix("shop", long+"_2024"), WorkerGroupPrefix("shop", long+"_2025")
	if a == b {
		t.Errorf("two long targets share the worker group %q", a)
	}
}

func TestMaintenanceWorkerName(t *testing.T) {
	long := strings.Repeat("t", 70)
	tests := []struct {
		pipeline, target, want string
	}{
		{"shop", "raw.orders", "shop-raw-orders-maint"},
		{"Shop_DB", "raw..Orders", "shop-db-raw--orders-maint"}, // runs are not collapsed
		{"", "", "maint"},
		{"shop", long, ("shop-" + long)[:63]},
		{strings.Repeat("p", 62), "x", strings.Repeat("p", 62)}, // cap lands on '-': trimmed
		// One '-' per character, not per byte, as urutau's maintenance.WorkerName ranges over
		// runes: ã is two bytes.
		{"Loja_São", "raw.orders", "loja-s-o-raw-orders-maint"},
		{"ação", "t", "a--o-t-maint"},
		{"日本", "", "maint"},
	}
	for _, tt := range tests {
		got := MaintenanceWorkerName(tt.pipeline, tt.target)
		if got != tt.want {
			t.Errorf("MaintenanceWorkerName(%q, %q) = %q, want %q", tt.pipeline, tt.target, got, tt.want)
		}
		if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
			t.Errorf("MaintenanceWorkerName(%q, %q) = %q is not a DNS label: %v", tt.pipeline, tt.target, got, errs)
		}
	}
}

func TestFixedNames(t *testing.T) {
	for got, want := range map[string]string{
		CoordinatorName("shop"):               "shop-coordinator",
		WorkerServiceAccountName("shop"):      "shop-worker",
		CoordinatorAddress("shop", "cdc"):     "shop-coordinator.cdc:50051",
		PipelineFile:                          "/etc/urutau/pipeline.yaml",
		pendingBatchesQuery("shop", "orders"): `sum(urutau_coordinator_pending_batches{table="orders", pod=~"shop-coordinator-.*"})`,
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

func TestMetricsPort(t *testing.T) {
	for addr, want := range map[string]int32{
		":9090":        9090,
		"0.0.0.0:9100": 9100,
		"[::]:9200":    9200,
		"localhost":    DefaultMetricsPort,
		":http":        DefaultMetricsPort,
		":0":           DefaultMetricsPort,
		":70000":       DefaultMetricsPort,
		"":             DefaultMetricsPort,
	} {
		if got := metricsPort(addr); got != want {
			t.Errorf("metricsPort(%q) = %d, want %d", addr, got, want)
		}
	}
}

func TestPromQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"raw.orders", `"raw.orders"`},
		{`a"b`, `"a\"b"`},
		{`a\b`, `"a\\b"`},
		{"a\nb", `"a\nb"`},
		{`\"`, `"\\\""`},
		// A target cannot close the string and add selectors of its own.
		{`x"} or vector(1) #`, `"x\"} or vector(1) #"`},
	}
	for _, tt := range tests {
		if got := promQuote(tt.in); got != tt.want {
			t.Errorf("promQuote(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
	got := pendingBatchesQuery("shop", "we\"ird\\\ntable")
	want := `sum(urutau_coordinator_pending_batches{table="we\"ird\\\ntable", pod=~"shop-coordinator-.*"})`
	if got != want {
		t.Errorf("pendingBatchesQuery = %s, want %s", got, want)
	}
}
