package cli

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommandLine holds what each command accepts and refuses, before any cluster is read: every
// command takes only the flags it uses, and a mistake says what is wrong and where help is. The
// kubeconfig does not exist, so a command that got past its flags fails loading it.
func TestCommandLine(t *testing.T) {
	noKubeconfig := filepath.Join(t.TempDir(), "absent")
	k := func(args ...string) []string { return append(args, "--kubeconfig", noKubeconfig) }
	for _, tc := range []struct {
		name    string
		args    []string
		code    int
		stdout  string // a substring of stdout
		stderr  string // a substring of stderr; "" for none at all
		helpRef bool   // stderr points to --help
	}{
		// Flags a command does not use are refused.
		{name: "join -n", args: k("join", "eu-1", "--member-context", "eu-1", "-n", "shop"), code: ExitError,
			stderr: "unknown shorthand flag: 'n' in -n", helpRef: true},
		{name: "join --namespace", args: k("join", "eu-1", "--member-context", "eu-1", "--namespace", "shop"), code: ExitError,
			stderr: "unknown flag: --namespace", helpRef: true},
		{name: "join -o", args: k("join", "eu-1", "--member-context", "eu-1", "-o", "json"), code: ExitError, stderr: "unknown shorthand flag: 'o'"},
		{name: "leave -A", args: k("leave", "eu-1", "-A"), code: ExitError, stderr: "unknown shorthand flag: 'A'"},
		{name: "leave --no-headers", args: k("leave", "eu-1", "--no-headers"), code: ExitError, stderr: "unknown flag: --no-headers"},
		{name: "members -n: members are fleet-wide", args: k("members", "-n", "shop"), code: ExitError, stderr: "unknown shorthand flag: 'n'"},
		{name: "members -A", args: k("members", "-A"), code: ExitError, stderr: "unknown shorthand flag: 'A'"},
		{name: "version -n", args: k("version", "-n", "shop"), code: ExitError, stderr: "unknown shorthand flag: 'n'"},
		{name: "no discovery cache, no --cache-dir", args: k("members", "--cache-dir", "/tmp"), code: ExitError, stderr: "unknown flag: --cache-dir"},
		{name: "no --show-managed-fields: views have none", args: k("status", "-o", "yaml", "--show-managed-fields"), code: ExitError, stderr: "unknown flag: --show-managed-fields"},
		{name: "completion takes no connection flag", args: []string{"completion", "bash", "--context", "hub"}, code: ExitError, stderr: "unknown flag: --context"},
		{name: "a flag before the command", args: []string{"--no-such-flag", "members"}, code: ExitError, stderr: "unknown flag: --no-such-flag"},

		// kubectl's connection flags are taken, and used: the kubeconfig named is loaded.
		{name: "connection flags", args: k("members", "--context", "hub", "--as", "someone", "--as-group", "ops", "--request-timeout", "5s",
			"--token", "t", "--cluster", "c", "--user", "u", "--insecure-skip-tls-verify", "--tls-server-name", "hub.example"),
			code: ExitError, stderr: "loading the kubeconfig"},
		{name: "--server and --token without a kubeconfig file", args: []string{"status", "--server", "https://127.0.0.1:1", "--token", "t", "--request-timeout", "2s"},
			code: ExitError, stderr: "127.0.0.1:1"},
		{name: "status -n -A", args: k("status", "-n", "shop", "-A"), code: ExitError, stderr: "loading the kubeconfig"},

		// Arguments.
		{name: "status with two pipelines", args: k("status", "a", "b"), code: ExitError, stderr: `status takes at most one pipeline name, got ["a" "b"]`, helpRef: true},
		{name: "status PIPELINE -A", args: k("status", "orders", "-A"), code: ExitError, stderr: "a pipeline name cannot be combined with -A"},
		{name: "members with an argument", args: k("members", "eu-1"), code: ExitError, stderr: "members takes no arguments"},
		{name: "join without a name", args: k("join", "--member-context", "eu-1"), code: ExitError, stderr: "join takes the member's name"},
		{name: "join without a member", args: k("join", "eu-1"), code: ExitError, stderr: "--member-context or --member-kubeconfig is required", helpRef: true},
		{name: "join with a bad allowlist", args: k("join", "eu-1", "--member-context", "x", "--member-server-allowlist", "http://x"), code: ExitError, stderr: "--member-server-allowlist"},
		{name: "leave without a name", args: k("leave"), code: ExitError, stderr: "leave takes the member's name"},
		{name: "an unknown command", args: []string{"memebrs"}, code: ExitError, stderr: `unknown command "memebrs" for "kubectl urutau"`},

		// -o is checked before the hub is read: no kubeconfig error.
		{name: "-o xml", args: k("members", "-o", "xml"), code: ExitError,
			stderr: `unable to match a printer suitable for the output format "xml", allowed formats are: custom-columns,custom-columns-file,go-template`, helpRef: true},
		{name: "-o jsonpath with a bad template", args: k("status", "-o", "jsonpath={.items[", "-A"), code: ExitError, stderr: "-o jsonpath={.items[:"},
		{name: "-o custom-columns without a spec", args: k("members", "-o", "custom-columns="), code: ExitError, stderr: "custom-columns format specified but no custom columns given"},
		{name: "version -o wide", args: k("version", "-o", "wide"), code: ExitError, stderr: `-o "wide": must be json or yaml`},
		{name: "valid -o formats reach the hub", args: k("members", "-o", "custom-columns=NAME:.metadata.name"), code: ExitError, stderr: "loading the kubeconfig"},

		// Help, version and completion need no cluster.
		{name: "no arguments", args: nil, code: ExitOK, stdout: "Available Commands:"},
		{name: "help", args: []string{"help"}, code: ExitOK, stdout: "Exit codes: 0 done and healthy"},
		{name: "help COMMAND", args: []string{"help", "status"}, code: ExitOK, stdout: "Usage:\n  kubectl urutau status [PIPELINE] [flags]"},
		{name: "COMMAND --help", args: []string{"join", "--help"}, code: ExitOK, stdout: "--member-server-allowlist"},
		{name: "help lists the connection flags", args: []string{"help", "members"}, code: ExitOK, stdout: "--request-timeout"},
		{name: "--version", args: []string{"--version"}, code: ExitOK, stdout: "kubectl-urutau "},
		{name: "version --client", args: k("version", "--client"), code: ExitOK, stdout: "Client Version: "},
		{name: "version --client -o json", args: k("version", "--client", "-o", "json"), code: ExitOK, stdout: `"clientVersion": {`},
		{name: "completion bash", args: []string{"completion", "bash"}, code: ExitOK, stdout: "__start_kubectl-urutau"},
		{name: "completion zsh", args: []string{"completion", "zsh"}, code: ExitOK, stdout: "#compdef kubectl-urutau"},
		{name: "completion fish", args: []string{"completion", "fish"}, code: ExitOK, stdout: "complete -c kubectl-urutau"},
		{name: "completion of commands", args: []string{"__complete", "st"}, code: ExitOK, stdout: "status\t", stderr: "Completion ended with directive"},
		{name: "completion of -o", args: []string{"__complete", "members", "-o", "custom"}, code: ExitOK, stdout: "custom-columns\ncustom-columns-file\n", stderr: "Completion ended with directive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := Run(t.Context(), "kubectl urutau", tc.args, Streams{Out: &out, Err: &errOut})
			if code != tc.code {
				t.Errorf("exit code %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, out.String(), errOut.String())
			}
			if !strings.Contains(out.String(), tc.stdout) {
				t.Errorf("stdout does not say %q:\n%s", tc.stdout, out.String())
			}
			switch {
			case tc.stderr == "" && errOut.Len() > 0:
				t.Errorf("stderr, want none:\n%s", errOut.String())
			case !strings.Contains(errOut.String(), tc.stderr):
				t.Errorf("stderr does not say %q:\n%s", tc.stderr, errOut.String())
			}
			if got := strings.Contains(errOut.String(), "--help' for usage"); got != tc.helpRef && tc.helpRef {
				t.Errorf("stderr does not point to --help:\n%s", errOut.String())
			}
		})
	}
}

// TestHubPrefix: the hub binary runs the same commands, named as `hub`.
func TestHubPrefix(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := Run(t.Context(), "hub", []string{"status", "--help"}, Streams{Out: &out, Err: &errOut}); code != ExitOK {
		t.Fatalf("exit code %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "Usage:\n  hub status [PIPELINE] [flags]") {
		t.Errorf("hub status --help:\n%s", out.String())
	}
}
