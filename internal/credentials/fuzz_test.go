package credentials

import (
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// FuzzScreenKubeconfig: whatever bytes a Secret holds, screening never panics, and whatever it
// admits is safe by construction: clientcmd turns it into a rest.Config that the rest.Config
// screen admits too, with no exec, auth provider, file path, impersonation or proxy in it.
//
//	go test ./internal/credentials -run '^$' -fuzz FuzzScreenKubeconfig -fuzztime 60s
func FuzzScreenKubeconfig(f *testing.F) {
	f.Add(kubeconfig(good(), goodUser))
	f.Add(kubeconfig(good(), "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /hub"))
	f.Add(kubeconfig(good(), "    tokenFile: /dev/zero"))
	f.Add(kubeconfig(good()+"\n    proxy-url: http://p:1", goodUser))
	f.Add(kubeconfig("    server: http://x\n    insecure-skip-tls-verify: true", goodUser+"\n    as: admin"))
	f.Add([]byte(`{"apiVersion":"v1","kind":"Config","current-context":"m","contexts":[{"name":"m","context":{"cluster":"c","user":"u"}}],"clusters":[{"name":"c","cluster":{"server":"https://[::1]:1","certificate-authority-data":"YQ=="}}],"users":[{"name":"u","user":{"token":"t"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := ScreenKubeconfig(data, Policy{}); err != nil {
			if ReasonOf(err) == "" {
				t.Fatalf("refusal without a reason: %v", err)
			}
			return
		}
		cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
		if err != nil {
			return // admitted by the screen but not buildable: the provider reports that
		}
		if err := ScreenRESTConfig(cfg, Policy{}); err != nil {
			t.Fatalf("ScreenKubeconfig admitted a kubeconfig whose rest.Config is refused: %v\n%s", err, data)
		}
	})
}
