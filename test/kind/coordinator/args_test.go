package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestParseArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    flags
		wantErr bool
	}{
		{"as the hub renders it", []string{"run", "--file", "/etc/urutau/pipeline.yaml", "--chunk-size", "10", "--metrics-addr", ":9191", "--allow-insecure-control-plane"},
			flags{file: "/etc/urutau/pipeline.yaml", metricsAddr: ":9191"}, false},
		{"with =", []string{"run", "--file=/p.yaml", "--metrics-addr=127.0.0.1:1"}, flags{file: "/p.yaml", metricsAddr: "127.0.0.1:1"}, false},
		{"default metrics address", []string{"run", "--file", "/p.yaml"}, flags{file: "/p.yaml", metricsAddr: ":9090"}, false},
		{"no run", []string{"--file", "/p.yaml"}, flags{}, true},
		{"no file", []string{"run", "--metrics-addr", ":1"}, flags{}, true},
		{"file without value", []string{"run", "--file"}, flags{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseArgs(tt.args)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if !tt.wantErr && got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseBehaviour(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    behaviour
		wantErr bool
	}{
		{"defaults", nil, behaviour{drain: 5 * time.Second}, false},
		{"drain and ignore", map[string]string{"STANDIN_DRAIN": "12s", "STANDIN_IGNORE_SIGTERM": "true"}, behaviour{drain: 12 * time.Second, ignoreSIGTERM: true}, false},
		{"bad drain", map[string]string{"STANDIN_DRAIN": "soon"}, behaviour{}, true},
		{"negative drain", map[string]string{"STANDIN_DRAIN": "-1s"}, behaviour{}, true},
		{"bad bool", map[string]string{"STANDIN_IGNORE_SIGTERM": "perhaps"}, behaviour{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseBehaviour(func(k string) string { return tt.env[k] })
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if !tt.wantErr && got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestReadPipeline(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		want    pipelineFile
		wantErr bool
	}{
		{"rendered", "pipeline: orders\nsource:\n  kind: mysql\n  serverId: \"7101\"\n", pipelineFile{name: "orders", source: "mysql"}, false},
		{"no name", "source:\n  kind: mysql\n", pipelineFile{}, true},
		{"no source", "pipeline: orders\n", pipelineFile{}, true},
		{"not YAML", "\t: :", pipelineFile{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readPipeline([]byte(tt.data))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestProbes(t *testing.T) {
	var s state
	srv := httptest.NewServer(s.handler())
	defer srv.Close()
	status := func(path string) int {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	if got := status("/readyz"); got != http.StatusServiceUnavailable {
		t.Errorf("before the file is read: /readyz %d, want 503", got)
	}
	s.ready.Store(true)
	for _, p := range []string{"/readyz", "/healthz", "/metrics"} {
		if got := status(p); got != http.StatusOK {
			t.Errorf("ready: %s %d, want 200", p, got)
		}
	}
	s.ready.Store(false) // SIGTERM
	if got := status("/readyz"); got != http.StatusServiceUnavailable {
		t.Errorf("draining: /readyz %d, want 503", got)
	}
	if got := status("/healthz"); got != http.StatusOK {
		t.Errorf("draining: /healthz %d, want 200 (alive until it exits)", got)
	}
}
