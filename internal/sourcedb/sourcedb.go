package sourcedb

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Endpoint is where one coordinator reads its source from.
type Endpoint struct {
	// Kind is the source kind ("mysql", "postgres").
	Kind string
	// Host is lower-cased; for a host that resolves only inside a cluster, Scope says which.
	Host string
	Port int
	// Database is the database the source reads ("" when the URI names none).
	Database string
	// Scope qualifies a host that is not global: the member cluster's identity for a cluster-local
	// name, the SSH bastion for a host reached through a tunnel.
	Scope string
}

// String is the endpoint as messages name it: never any credential.
func (e Endpoint) String() string {
	s := fmt.Sprintf("%s://%s/%s", e.Kind, net.JoinHostPort(e.Host, strconv.Itoa(e.Port)), e.Database)
	if e.Kind == "kafka" {
		s = "kafka://" + e.Host
	}
	if e.Scope != "" {
		s += " (in " + e.Scope + ")"
	}
	return s
}

// Key is a short, stable digest of the endpoint, for logs and records that must not carry hosts.
func (e Endpoint) Key() string {
	sum := sha256.Sum256([]byte(e.Kind + "\x00" + e.Host + "\x00" + strconv.Itoa(e.Port) + "\x00" + e.Database + "\x00" + e.Scope))
	return hex.EncodeToString(sum[:8])
}

// Same tells whether two coordinators with the same reader identity would read one database:
// equal endpoints, or either unknown (nil). Kafka endpoints are broker lists: one broker in
// common is one Kafka cluster, whatever else each list names.
func Same(a, b *Endpoint) bool {
	if a == nil || b == nil {
		return true
	}
	if a.Kind == "kafka" && b.Kind == "kafka" {
		return brokersOverlap(a, b)
	}
	return *a == *b
}

func brokersOverlap(a, b *Endpoint) bool {
	if a.Scope != b.Scope && (a.Scope != "" || b.Scope != "") {
		// A cluster-local broker name names a broker of that cluster only.
		return false
	}
	mine := map[string]bool{}
	for _, h := range strings.Split(a.Host, ",") {
		mine[h] = true
	}
	for _, h := range strings.Split(b.Host, ",") {
		if mine[h] {
			return true
		}
	}
	return false
}

// defaultPorts are the ports a source kind's driver uses when the URI names none.
var defaultPorts = map[string]int{"mysql": 3306, "postgres": 5432, "kafka": 9092}

// ErrNoEndpoint is returned for a URI that names no host.
var ErrNoEndpoint = errors.New("the source URI names no host")

// FromURI reads the endpoint of a source URI of kind, as the coordinator's drivers take it: a URL
// (mysql://user:pw@host:3306/db, postgres://..., postgresql://...), or a MySQL DSN in
// go-sql-driver's form (user:pw@tcp(host:3306)/db?params), or a Postgres keyword/value string
// (host=... port=... dbname=...). cluster is the member's identity, which scopes cluster-local
// hosts. Errors never quote the URI: it holds credentials.
func FromURI(kind, uri, cluster string) (*Endpoint, error) {
	uri = strings.TrimSpace(uri)
	var (
		e   *Endpoint
		err error
	)
	switch {
	case kind == "kafka":
		return fromBrokers(uri, cluster)
	case strings.Contains(uri, "://"):
		e, err = fromURL(kind, uri)
	case kind == "mysql":
		e, err = fromMySQLDSN(uri)
	case kind == "postgres":
		e, err = fromKeywordValues(uri)
	default:
		return nil, fmt.Errorf("the source URI of a %s source is not a URL", kind)
	}
	if err != nil {
		return nil, err
	}
	e.Kind = kind
	return finish(e, cluster), nil
}

// FromFields is the endpoint of inline source.postgres fields (host, port, database), reached
// directly or through an SSH tunnel at via (host:port, "" when none).
func FromFields(kind, host string, port int, database, via, cluster string) (*Endpoint, error) {
	if strings.TrimSpace(host) == "" {
		return nil, ErrNoEndpoint
	}
	e := finish(&Endpoint{Kind: kind, Host: host, Port: port, Database: database}, cluster)
	if via != "" && e.Scope != "" {
		// A name the bastion resolves: scoped by the bastion, not by the member's cluster.
		e.Scope = "ssh " + strings.ToLower(via)
	}
	return e, nil
}

func finish(e *Endpoint, cluster string) *Endpoint {
	e.Host = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(e.Host)), ".")
	if e.Port == 0 {
		e.Port = defaultPorts[e.Kind]
	}
	if ClusterLocal(e.Host) {
		e.Scope = "cluster " + cluster
	}
	return e
}

func fromURL(kind, raw string) (*Endpoint, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("the source URI of a %s source is not a valid URL", kind)
	}
	host := u.Hostname()
	if host == "" {
		// libpq allows the host in the query: postgres:///db?host=/var/run/postgresql.
		host = u.Query().Get("host")
	}
	if host == "" {
		return nil, ErrNoEndpoint
	}
	e := &Endpoint{Host: host, Database: strings.TrimPrefix(u.Path, "/")}
	if p := u.Port(); p != "" {
		if e.Port, err = strconv.Atoi(p); err != nil {
			return nil, fmt.Errorf("the source URI of a %s source has an invalid port", kind)
		}
	}
	if db := u.Query().Get("dbname"); db != "" && e.Database == "" {
		e.Database = db
	}
	return e, nil
}

// fromBrokers reads a Kafka bootstrap list: host:port[,host:port...], with or without a scheme
// (kafka://, or SASL_SSL:// as some clients write it). Host holds the sorted host:port list; a
// list naming cluster-local hosts is scoped by the cluster.
func fromBrokers(list, cluster string) (*Endpoint, error) {
	if i := strings.Index(list, "://"); i >= 0 {
		list = list[i+3:]
	}
	if i := strings.IndexAny(list, "/?"); i >= 0 {
		list = list[:i]
	}
	if at := strings.LastIndex(list, "@"); at >= 0 {
		list = list[at+1:]
	}
	var brokers []string
	local := false
	for _, b := range strings.Split(list, ",") {
		b = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(b)), ".")
		if b == "" {
			continue
		}
		host, port, err := net.SplitHostPort(b)
		if err != nil {
			host, port = b, "9092"
		}
		local = local || ClusterLocal(host)
		brokers = append(brokers, net.JoinHostPort(host, port))
	}
	if len(brokers) == 0 {
		return nil, ErrNoEndpoint
	}
	slices.Sort(brokers)
	e := &Endpoint{Kind: "kafka", Host: strings.Join(slices.Compact(brokers), ",")}
	if local {
		e.Scope = "cluster " + cluster
	}
	return e, nil
}

// fromMySQLDSN reads user:pw@tcp(host:port)/db?params; the network may be tcp, tcp6 or unix.
func fromMySQLDSN(dsn string) (*Endpoint, error) {
	at := strings.LastIndex(dsn, "@")
	rest := dsn[at+1:]
	open, closing := strings.Index(rest, "("), strings.Index(rest, ")")
	if open < 0 || closing < open {
		return nil, errors.New("the source URI of a mysql source is neither a URL nor a DSN of the form user:password@tcp(host:port)/database")
	}
	addr := rest[open+1 : closing]
	db := strings.TrimPrefix(rest[closing+1:], "/")
	if i := strings.IndexByte(db, '?'); i >= 0 {
		db = db[:i]
	}
	e := &Endpoint{Database: db}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		host, port = addr, ""
	}
	if host == "" {
		return nil, ErrNoEndpoint
	}
	e.Host = host
	if port != "" {
		if e.Port, err = strconv.Atoi(port); err != nil {
			return nil, errors.New("the source URI of a mysql source has an invalid port")
		}
	}
	return e, nil
}

// fromKeywordValues reads libpq's host=... port=... dbname=... form.
func fromKeywordValues(s string) (*Endpoint, error) {
	e := &Endpoint{}
	for _, f := range strings.Fields(s) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			continue
		}
		v = strings.Trim(v, "'")
		switch k {
		case "host", "hostaddr":
			if e.Host == "" || k == "host" {
				e.Host = v
			}
		case "port":
			p, err := strconv.Atoi(v)
			if err != nil {
				return nil, errors.New("the source URI of a postgres source has an invalid port")
			}
			e.Port = p
		case "dbname":
			e.Database = v
		}
	}
	if e.Host == "" {
		return nil, ErrNoEndpoint
	}
	return e, nil
}

// ClusterLocal tells whether host surely resolves only inside the cluster the coordinator runs
// in: a single DNS label (resolved through the pod's search path, e.g. a Service in its
// namespace), a Service's name under .svc or .cluster.local, a loopback address or a Unix socket
// path. Every other name and address counts as global, the safe side: two clusters may well reach
// one database at 10.0.0.5 (peered networks), and a name like db.team may be a Service through
// the search path or a host on the network; counted as one, the second member only waits.
func ClusterLocal(host string) bool {
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback()
	}
	return host != "" && (strings.HasPrefix(host, "/") || !strings.Contains(host, ".") ||
		strings.HasSuffix(host, ".svc") || strings.HasSuffix(host, ".cluster.local"))
}
