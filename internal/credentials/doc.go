// Package credentials screens member credentials before the hub uses them. Whoever can write a
// kubeconfig Secret or a ClusterProfile in the hub's namespace chooses what the hub connects to
// and how; nothing in a kubeconfig may make the hub run a program, read its own files, borrow
// another identity or talk to a host the platform admin did not allow.
//
// What it refuses (each with a Reason, the metric label, and a message naming the entry):
//
//   - exec credential plugins and auth-provider plugins (they run code or call out with the hub's
//     environment);
//   - every file path: tokenFile, client-certificate, client-key, certificate-authority (they read
//     the hub's own files, e.g. its ServiceAccount token, and send them to the server);
//   - impersonation (as, as-uid, as-groups, as-user-extra);
//   - proxy-url, unless Policy.AllowProxy;
//   - a server that is not https, or https without certificate-authority-data; and
//     insecure-skip-tls-verify unless Policy.AllowInsecure;
//   - a server host (and, with Policy.AllowProxy, a proxy host) outside Policy.Servers when that
//     allow-list is set; link-local, unspecified, multicast and cloud metadata addresses in every
//     spelling (IPv4-mapped, IPv4-compatible, NAT64, 6to4, Teredo, ISATAP, zones, hexadecimal,
//     octal or short IPv4 forms) and metadata host names, unless the allow-list names them; also
//     when a host name resolves to one (checked on the address dialled, see GuardDial);
//   - user entries without credentials, or with half a client certificate.
//
// No message carries secret material (redact.go): no credential value, no parser output, no
// user, password, path or query of a URL, no exec command line. Messages are for the platform
// admin; PublicMessage is the fixed sentence a tenant may read.
//
// It is pure apart from GuardDial's connection check: no client, no file access, no I/O.
package credentials
