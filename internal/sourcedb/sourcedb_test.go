package sourcedb

import (
	"strings"
	"testing"
)

func TestFromURI(t *testing.T) {
	const cluster = "uid-a"
	tests := []struct {
		name, kind, uri string
		want            string // Endpoint.String(); "" when an error is expected
	}{
		{"mysql URL", "mysql", "mysql://u:secret@DB.Example.com:3307/shop", "mysql://db.example.com:3307/shop"},
		{"mysql URL default port", "mysql", "mysql://u:secret@db.example.com/shop", "mysql://db.example.com:3306/shop"},
		{"mysql DSN", "mysql", "u:secret@tcp(db.example.com:3306)/shop?parseTime=true", "mysql://db.example.com:3306/shop"},
		{"mysql DSN password with @", "mysql", "u:p@ss@tcp(10.0.0.5)/shop", "mysql://10.0.0.5:3306/shop"},
		{"mysql DSN IPv6", "mysql", "u:p@tcp([fd00::5]:3306)/shop", "mysql://[fd00::5]:3306/shop"},
		{"mysql DSN unix socket", "mysql", "u:p@unix(/run/mysqld/mysqld.sock)/shop", "mysql:///run/mysqld/mysqld.sock:3306/shop (in cluster uid-a)"},
		{"postgres URL", "postgres", "postgres://u:secret@pg.example.com/orders?sslmode=require", "postgres://pg.example.com:5432/orders"},
		{"postgresql scheme", "postgres", "postgresql://u@pg.example.com:6432/orders", "postgres://pg.example.com:6432/orders"},
		{"postgres host in query", "postgres", "postgres:///orders?host=/var/run/postgresql", "postgres:///var/run/postgresql:5432/orders (in cluster uid-a)"},
		{"postgres keyword/value", "postgres", "host=pg.example.com port=5433 dbname=orders user=u password=secret", "postgres://pg.example.com:5433/orders"},
		{"service name is cluster-local", "postgres", "postgres://u:p@pg.db.svc:5432/orders", "postgres://pg.db.svc:5432/orders (in cluster uid-a)"},
		{"single label is cluster-local", "mysql", "mysql://u:p@mysql/shop", "mysql://mysql:3306/shop (in cluster uid-a)"},
		{"cluster.local is cluster-local", "mysql", "mysql://u:p@mysql.db.svc.cluster.local/shop", "mysql://mysql.db.svc.cluster.local:3306/shop (in cluster uid-a)"},
		{"loopback is pod-local", "mysql", "mysql://u:p@127.0.0.1/shop", "mysql://127.0.0.1:3306/shop (in cluster uid-a)"},
		{"trailing dot", "mysql", "mysql://u:p@db.example.com./shop", "mysql://db.example.com:3306/shop"},
		{"no host", "mysql", "mysql:///shop", ""},
		{"bad port", "mysql", "mysql://u:p@db:http/shop", ""},
		{"neither URL nor DSN", "mysql", "just-text", ""},
		{"postgres without host", "postgres", "dbname=orders", ""},
		{"kafka brokers", "kafka", "b2.example.com:9093,B1.example.com", "kafka://b1.example.com:9092,b2.example.com:9093"},
		{"kafka URL with credentials", "kafka", "SASL_SSL://user:secret@b1.example.com:9093", "kafka://b1.example.com:9093"},
		{"kafka Service name", "kafka", "kafka:9092", "kafka://kafka:9092 (in cluster uid-a)"},
		{"a name.namespace may be global: counted so", "kafka", "kafka-0.kafka:9092", "kafka://kafka-0.kafka:9092"},
		{"kafka without brokers", "kafka", " , ", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := FromURI(tc.kind, tc.uri, cluster)
			switch {
			case tc.want == "" && err == nil:
				t.Fatalf("FromURI = %s, want an error", e)
			case tc.want == "":
				if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), tc.uri) {
					t.Errorf("error %q quotes the URI", err)
				}
			case err != nil:
				t.Fatalf("FromURI: %v", err)
			case e.String() != tc.want:
				t.Errorf("FromURI = %s, want %s", e, tc.want)
			}
			if e != nil && strings.Contains(e.String(), "secret") {
				t.Errorf("endpoint %s carries a credential", e)
			}
		})
	}
}

func TestSame(t *testing.T) {
	a, _ := FromURI("mysql", "mysql://u:p@db.example.com/shop", "A")
	a2, _ := FromURI("mysql", "u:other@tcp(DB.example.com:3306)/shop", "B")
	b, _ := FromURI("mysql", "mysql://u:p@db-b.example.com/shop", "B")
	localA, _ := FromURI("mysql", "mysql://u:p@mysql.db.svc/shop", "A")
	localB, _ := FromURI("mysql", "mysql://u:p@mysql.db.svc/shop", "B")
	otherDB, _ := FromURI("mysql", "mysql://u:p@db.example.com/billing", "A")
	tests := []struct {
		name string
		x, y *Endpoint
		want bool
	}{
		{"one database named two ways, from two clusters", a, a2, true},
		{"two hosts", a, b, false},
		{"one Service name in two clusters", localA, localB, false},
		{"one Service name in one cluster", localA, localA, true},
		{"two databases on one server", a, otherDB, false},
		{"unknown is the unsafe case", a, nil, true},
		{"both unknown", nil, nil, true},
		{"kafka lists sharing a broker", kafka("b1.example.com:9092,b2.example.com:9092", "A"), kafka("b2.example.com:9092,b3.example.com:9092", "B"), true},
		{"kafka lists of two clusters", kafka("b1.example.com:9092", "A"), kafka("c1.example.com:9092", "B"), false},
		{"one kafka Service name in two clusters", kafka("kafka:9092", "A"), kafka("kafka:9092", "B"), false},
	}
	for _, tc := range tests {
		if got := Same(tc.x, tc.y); got != tc.want {
			t.Errorf("%s: Same = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func kafka(list, cluster string) *Endpoint {
	e, err := FromURI("kafka", list, cluster)
	if err != nil {
		panic(err)
	}
	return e
}

func TestFromFields(t *testing.T) {
	direct, err := FromFields("postgres", "PG.example.com", 0, "orders", "", "A")
	if err != nil || direct.String() != "postgres://pg.example.com:5432/orders" {
		t.Fatalf("direct = %v, %v", direct, err)
	}
	tunneled, err := FromFields("postgres", "pg", 5432, "orders", "bastion.example.com:22", "A")
	if err != nil || tunneled.Scope != "ssh bastion.example.com:22" {
		t.Fatalf("tunneled = %+v, %v", tunneled, err)
	}
	if _, err := FromFields("postgres", " ", 0, "orders", "", "A"); err == nil {
		t.Fatal("FromFields without host: want an error")
	}
}

func FuzzFromURINeverQuotesCredentials(f *testing.F) {
	for _, s := range []string{"mysql://u:%s@h/db", "u:%s@tcp(h:1)/db", "host=h password=%s dbname=db", "postgres://u:%s@h:bad/db"} {
		f.Add(s, "hunter2canary")
	}
	f.Fuzz(func(t *testing.T, format, secret string) {
		if len(secret) < 8 || strings.ContainsAny(secret, "@/:()?=# ") {
			return
		}
		uri := strings.ReplaceAll(format, "%s", secret)
		for _, kind := range []string{"mysql", "postgres"} {
			e, err := FromURI(kind, uri, "c")
			if err != nil && strings.Contains(err.Error(), secret) {
				t.Fatalf("error quotes the secret: %v", err)
			}
			if e != nil && strings.Contains(e.Host+e.Database, secret) && !strings.Contains(format, "@%s") {
				// Only a format that puts the secret where a host or database goes may show it.
				if strings.Contains(format, ":%s@") || strings.Contains(format, "password=%s") {
					t.Fatalf("endpoint %s carries the password", e)
				}
			}
		}
	})
}
