// Package clusterprofile is a small multicluster-runtime provider over ClusterProfiles
// (sigs.k8s.io/cluster-inventory-api) in one namespace of the hub. For each profile it builds a
// rest.Config, creates a cluster.Cluster with the caller's cluster.Options, and engages it with the
// multicluster manager; it disengages the member when the profile goes away and re-engages it when
// the access to it changes. The member's name is the profile's name.
//
// It exists because upstream's providers/cluster-inventory-api is a separate Go module that this
// project's module proxy does not serve; it follows the shape of multicluster-runtime's kubeconfig provider.
//
// # Credentials
//
// A ClusterProfile says where a member's API server is (status.accessProviders[].cluster: server,
// certificate-authority-data, tls-server-name, proxy-url) but carries no credentials. The provider
// takes the entry named "kubeconfig-secretreader" (Options.AccessProviderName) and reads its
// credentials from a kubeconfig Secret that the entry names in its
// "client.authentication.k8s.io/exec" extension:
//
//	status:
//	  accessProviders:
//	  - name: kubeconfig-secretreader
//	    cluster:
//	      server: https://member-a.example:6443
//	      certificate-authority-data: <base64 CA>
//	      extensions:
//	      - name: client.authentication.k8s.io/exec
//	        extension: {name: member-a-kubeconfig, key: kubeconfig}  # optional: context
//
// This is exactly the format of upstream's kubeconfig-secretreader exec plugin, so a profile a
// cluster manager writes for that plugin works unchanged. We read the Secret in-process instead of
// running the plugin because the hub image ships no plugin binaries, and the exec path
// (cluster-inventory-api's pkg/access) would add a module this build does not carry. The same
// Secret format as the kubeconfig provider's (key "kubeconfig" by default) means one
// `hub member-secret` output serves both providers.
//
// Rules, each for a reason:
//   - The Secret must be in the profile's namespace: the hub may read Secrets only there, and a
//     profile must not be able to point the hub at any other Secret in the hub cluster.
//   - Only the user's credentials are taken from the kubeconfig (token, client-certificate-data +
//     client-key-data); the server and CA come from the profile. Exec, auth-provider and file
//     paths are refused: they would run binaries or read files inside the hub's container.
//   - ControlPlaneHealthy is not consulted: an engaged member that does not answer is the
//     reconciler's to report (it bounds each member's work by --member-timeout), and cleanup must
//     be able to reach a member whenever it answers.
package clusterprofile
