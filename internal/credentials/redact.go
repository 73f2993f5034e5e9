package credentials

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"
)

// Refusal messages are read by the platform admin (the hub's log, the CredentialsRefused event on
// the inventory entry, `hub member-secret`), never by tenants, and even so they carry no secret
// material: no value of a credential field, no parser output (clientcmd's error for two users of
// one name prints the whole list, tokens included), no user, password, query or path of a URL,
// no exec command line. They name the kubeconfig entry, the field and the reason. What tenants
// read is PublicMessage: the reason and a fixed sentence.

// PublicMessage is the fixed sentence a tenant may read about refused member credentials (the
// reconciler puts it in status.clusters[].message and in Events of the pipelines placed on that
// member): the reason code and where the platform admin finds the detail. It says nothing of the
// credentials, the inventory entry or the parser.
func PublicMessage(reason Reason) string {
	if reason == "" {
		reason = "invalid"
	}
	return fmt.Sprintf("the hub refuses this member's credentials (reason %s); the platform admin finds the detail in the hub's log and in the %s event of the member's inventory entry",
		reason, "CredentialsRefused")
}

// RedactURL is raw as a refusal may show it: scheme and host (with port) only. A user or
// password is shown as "xxxxx@" (url.URL.Redacted keeps the user name, which may be a token too),
// and a path, query or fragment as "/...": none of them is needed to tell which server is meant,
// and each can carry a token.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(a URL that does not parse)"
	}
	if u.Opaque != "" || u.Host == "" {
		if u.Scheme == "" {
			return "(not a URL with a host)"
		}
		return u.Scheme + ": (not a URL with a host)"
	}
	out := u.Scheme + "://"
	if u.User != nil {
		out += "xxxxx@"
	}
	out += u.Host
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		out += "/..."
	}
	return out
}

// programName is how a refusal names an exec plugin's program: its base name when that is a
// plain file name, never the command line (arguments and environment often carry tokens).
func programName(command string) string {
	fields := strings.Fields(command)
	if len(fields) == 0 {
		return "(none)"
	}
	base := path.Base(strings.ReplaceAll(fields[0], `\`, "/"))
	if !plainName.MatchString(base) {
		return "(not shown)"
	}
	return base
}

var plainName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$`)

// maxShownName bounds an entry name in a message: names are the writer's choice, of any length.
const maxShownName = 64

// quoteName quotes a kubeconfig entry name (cluster, user, context) for a message, cut to
// maxShownName bytes.
func quoteName(name string) string {
	if len(name) > maxShownName {
		return fmt.Sprintf("%q...", name[:maxShownName])
	}
	return fmt.Sprintf("%q", name)
}

// ParseKubeconfig decodes a kubeconfig without resolving a path or reading a file (clientcmd.Load)
// and, when it does not decode, refuses it (ReasonUnparseable) with a message of its own:
// clientcmd's errors quote the document, tokens included.
func ParseKubeconfig(data []byte) (*clientcmdapi.Config, error) {
	if len(data) > MaxKubeconfigBytes {
		return nil, refuse(ReasonTooLarge, "the kubeconfig is %d bytes, more than %d", len(data), MaxKubeconfigBytes)
	}
	// Load only decodes: it resolves no path and reads no file.
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, refuse(ReasonUnparseable, "the kubeconfig does not parse: %s", describeParseError(data, err))
	}
	return cfg, nil
}

// describeParseError says why data did not parse, from what can be shown: a repeated entry name,
// or the line of a YAML syntax error; never the parser's text.
func describeParseError(data []byte, err error) string {
	if dup := duplicateName(data); dup != "" {
		return dup
	}
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		return "not valid YAML or JSON at line " + m[1]
	}
	return "it is not a YAML or JSON kubeconfig (kind Config) with lists of named clusters, users and contexts"
}

var yamlLine = regexp.MustCompile(`yaml: line ([0-9]{1,7}):`)

// duplicateName finds a name given twice in the clusters, users or contexts of a kubeconfig.
func duplicateName(data []byte) string {
	type named struct {
		Name string `json:"name"`
	}
	var doc struct {
		Clusters []named `json:"clusters"`
		Users    []named `json:"users"`
		Contexts []named `json:"contexts"`
	}
	if yaml.Unmarshal(data, &doc) != nil {
		return ""
	}
	for _, list := range []struct {
		kind  string
		items []named
	}{{"cluster", doc.Clusters}, {"user", doc.Users}, {"context", doc.Contexts}} {
		seen := map[string]bool{}
		for _, it := range list.items {
			if seen[it.Name] {
				return fmt.Sprintf("%s %s is defined twice", list.kind, quoteName(it.Name))
			}
			seen[it.Name] = true
		}
	}
	return ""
}

// Public is the tenant-visible form of err: PublicMessage of its Reason ("invalid" when err is
// no Refusal).
func Public(err error) string {
	if err == nil {
		return ""
	}
	return PublicMessage(ReasonOf(err))
}
